"""Checkpointer benchmark: wop-langgraph's saver against LangGraph's own, in one process.

Two workloads, each a "cycle" on a new thread:

* ``approval``: a 3-node graph (prepare -> approve -> finish) whose middle node asks for an
  approval with ``interrupt()``; a cycle runs to the interrupt, resumes with
  ``Command(resume={interrupt_id: ...})`` and runs to the end.
* ``chain10``: a 10-node chain without interrupts, run to the end.

Savers: ``InMemorySaver``, LangGraph's ``SqliteSaver`` (a file on disk, its default
settings) and ``PostgresSaver`` (``from_conn_string``, its defaults), and ours,
``SQLModelSaver``, on a SQLite file and on PostgreSQL. Every PostgreSQL saver gets its own
fresh database, dropped afterwards. Savers are measured in interleaved rounds (every saver
once per round, the order rotating); cycles/s is the median round, and each ratio the median
of the per-round ratios, so a change of machine load between rounds cancels out.

Usage::

    python benchmarks/saver.py --iterations 200 --rounds 5
    python benchmarks/saver.py --postgres-url postgresql://postgres@127.0.0.1:5432/test --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import operator
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from _postgres import scratch_database
from wop_langgraph.host.recorder import InterruptRecorder
from wop_langgraph.store import SQLModelSaver

POSTGRES_ENV = "WOP_TEST_POSTGRES_URL"
WORKLOADS = ("approval", "chain10")


class State(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]
    decision: str


def _approval_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    def prepare(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 1, "log": ["prepare"]}

    def approve(state: State) -> dict[str, Any]:
        answer = interrupt({"question": "Approve the payment?", "amount": state["n"]})
        return {"decision": answer["decision"], "log": ["approve"]}

    def finish(state: State) -> dict[str, Any]:
        return {"log": ["finish"]}

    builder = StateGraph(State)
    builder.add_node("prepare", prepare)
    builder.add_node("approve", approve)
    builder.add_node("finish", finish)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "approve")
    builder.add_edge("approve", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=saver)


def _chain_graph(saver: BaseCheckpointSaver[Any], steps: int = 10) -> Any:
    builder = StateGraph(State)
    previous = START
    for i in range(steps):
        name = f"step{i}"

        def step(state: State, name: str = name) -> dict[str, Any]:
            return {"n": state["n"] + 1, "log": [name]}

        builder.add_node(name, step)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=saver)


def _approval_cycle(graph: Any) -> None:
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    out = graph.invoke({"n": 0, "log": [], "decision": ""}, config)
    interrupt_id = out["__interrupt__"][0].id
    out = graph.invoke(Command(resume={interrupt_id: {"decision": "approve"}}), config)
    if out["decision"] != "approve" or out["log"][-1] != "finish":
        raise AssertionError(f"approval cycle ended in {out!r}")


def _chain_cycle(graph: Any) -> None:
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    out = graph.invoke({"n": 0, "log": [], "decision": ""}, config)
    if out["n"] != 10:
        raise AssertionError(f"chain cycle ended in {out!r}")


_GRAPHS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], None]]] = {
    "approval": (_approval_graph, _approval_cycle),
    "chain10": (_chain_graph, _chain_cycle),
}


@contextlib.contextmanager
def _postgres_database(server_url: str) -> Iterator[str]:
    """A new empty database on the server; yields its plain ``postgresql://`` URL."""
    with scratch_database(server_url) as url:
        yield url.set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.contextmanager
def _savers(workdir: Path, postgres_url: str | None) -> Iterator[dict[str, BaseCheckpointSaver[Any]]]:
    with contextlib.ExitStack() as stack:
        savers: dict[str, BaseCheckpointSaver[Any]] = {"InMemorySaver": InMemorySaver()}

        connection = sqlite3.connect(workdir / "langgraph.db", check_same_thread=False)
        stack.callback(connection.close)
        sqlite_saver = SqliteSaver(connection)
        sqlite_saver.setup()
        savers["SqliteSaver"] = sqlite_saver

        ours = SQLModelSaver.from_url(f"sqlite:///{workdir / 'wop.db'}")
        stack.callback(ours.close)
        ours.setup()
        savers["SQLModelSaver[sqlite]"] = ours

        # The saver as WopHost uses it: the OpenWOP recorder inside every put_writes transaction
        # (interrupt rows, node.suspended + interrupt.requested for each interrupt).
        recorded = SQLModelSaver.from_url(f"sqlite:///{workdir / 'wop-rec.db'}", recorder=InterruptRecorder())
        stack.callback(recorded.close)
        recorded.setup()
        savers["SQLModelSaver[sqlite]+recorder"] = recorded

        if postgres_url:
            from langgraph.checkpoint.postgres import PostgresSaver

            lg_url = stack.enter_context(_postgres_database(postgres_url))
            pg_saver = stack.enter_context(PostgresSaver.from_conn_string(lg_url))
            pg_saver.setup()
            savers["PostgresSaver"] = pg_saver

            wop_url = stack.enter_context(_postgres_database(postgres_url))
            ours_pg = SQLModelSaver.from_url(wop_url)
            stack.callback(ours_pg.close)
            ours_pg.setup()
            savers["SQLModelSaver[postgres]"] = ours_pg

            rec_url = stack.enter_context(_postgres_database(postgres_url))
            recorded_pg = SQLModelSaver.from_url(rec_url, recorder=InterruptRecorder())
            stack.callback(recorded_pg.close)
            recorded_pg.setup()
            savers["SQLModelSaver[postgres]+recorder"] = recorded_pg
        yield savers


def _measure(cycle: Callable[[Any], None], graph: Any, iterations: int) -> float:
    start = time.perf_counter()
    for _ in range(iterations):
        cycle(graph)
    return iterations / (time.perf_counter() - start)


_PAIRS = {
    "SQLModelSaver[sqlite] / SqliteSaver": ("SQLModelSaver[sqlite]", "SqliteSaver"),
    "SQLModelSaver[sqlite] / InMemorySaver": ("SQLModelSaver[sqlite]", "InMemorySaver"),
    "SQLModelSaver[postgres] / PostgresSaver": ("SQLModelSaver[postgres]", "PostgresSaver"),
    "SQLModelSaver[sqlite]+recorder / SqliteSaver": ("SQLModelSaver[sqlite]+recorder", "SqliteSaver"),
    "SQLModelSaver[sqlite]+recorder / InMemorySaver": ("SQLModelSaver[sqlite]+recorder", "InMemorySaver"),
    "SQLModelSaver[postgres]+recorder / PostgresSaver": ("SQLModelSaver[postgres]+recorder", "PostgresSaver"),
}


def run(iterations: int, rounds: int, warmup: int, postgres_url: str | None) -> dict[str, Any]:
    """Measure every saver on every workload.

    Returns cycles/s (median of the rounds) and ratios. A ratio is the median of the
    per-round ratios: both savers of a pair ran back to back in the same round, so a change
    in machine load between rounds cancels out.
    """
    results: dict[str, dict[str, float]] = {}
    ratios: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="wop-bench-") as tmp, _savers(Path(tmp), postgres_url) as savers:
        for workload in WORKLOADS:
            build, cycle = _GRAPHS[workload]
            graphs = {name: build(saver) for name, saver in savers.items()}
            for graph in graphs.values():
                for _ in range(warmup):
                    cycle(graph)
            samples: dict[str, list[float]] = {name: [] for name in graphs}
            names = list(graphs)
            for r in range(rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    samples[name].append(_measure(cycle, graphs[name], iterations))
            results[workload] = {name: statistics.median(s) for name, s in samples.items()}
            ratios[workload] = {
                label: statistics.median(x / y for x, y in zip(samples[a], samples[b], strict=True))
                for label, (a, b) in _PAIRS.items()
                if a in samples and b in samples
            }
    return {
        "iterations": iterations,
        "rounds": rounds,
        "warmup": warmup,
        "cycles_per_second": results,
        "ratios": ratios,
    }


def _print_table(report: dict[str, Any]) -> None:
    print(
        f"cycles/s, median of {report['rounds']} interleaved rounds of {report['iterations']} "
        f"cycles (warm-up {report['warmup']})"
    )
    for workload, figures in report["cycles_per_second"].items():
        print(f"\n{workload}")
        for name, value in figures.items():
            print(f"  {name:35s} {value:9.1f}")
        for label, value in report["ratios"][workload].items():
            print(f"  {label:51s} {value:5.2f}x  (median of per-round ratios)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=100, help="cycles per saver per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the median is reported")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured cycles per saver first")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get(POSTGRES_ENV),
        help=f"admin URL of a PostgreSQL server (default: ${POSTGRES_ENV}); without it PostgreSQL is skipped",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if not args.postgres_url:
        print(f"PostgreSQL rows skipped: pass --postgres-url or set {POSTGRES_ENV}", file=sys.stderr)
    report = run(args.iterations, args.rounds, args.warmup, args.postgres_url)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_table(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
