"""The full path in process: WopHost against plain LangGraph on the same 3-node graph.

One cycle, on a new run / thread: create -> the run suspends at the gate in the middle node ->
resolve -> the run completes; every call waits for the run to be at rest.

The headline is the fair comparison: both sides run the graph a LangGraph user writes
(prepare -> approve -> finish; ``approve`` calls LangGraph's own ``interrupt({...})`` with a
dict and reads the ``action`` of the resume value), same nodes, same state.

* ``WopHost[sqlite]`` / ``WopHost[postgres]``: ``host.create_run(...)`` then
  ``host.resolve(...)`` with the native resume value ``{"action": "accept"}``, library calls
  with their default ``wait=True`` (the caller drives the run; no worker threads). The host
  records the bare interrupt as an OpenWOP ``custom`` interrupt, its events and the run ledger.
* ``LangGraph+SqliteSaver`` / ``LangGraph+PostgresSaver``: ``graph.invoke(inputs)`` to the
  ``interrupt()`` then ``graph.invoke(Command(resume=...))``, with LangGraph's savers at their
  defaults (``SqliteSaver(sqlite3.connect(file, check_same_thread=False))``,
  ``PostgresSaver.from_conn_string(url)``).
* ``LangGraph+SQLModelSaver[sqlite]`` / ``[postgres]`` (the floor, not a target): the same
  LangGraph cycle on our saver with no host and no recorder. Its ratio to LangGraph's saver is
  what the saver costs; the rest of WopHost's gap is what the host records (runs, interrupts,
  events) and how.
* Secondary (``--no-secondary`` leaves it out), labelled ``node API``: the former comparison, in
  which both sides run a gate calling ``request_approval`` (on plain LangGraph that is
  ``interrupt()`` plus the OpenWOP payload check LangGraph users do not pay).

All contenders are measured in interleaved rounds (the starting one rotating); cycles/s is the
median round and each ratio the median of per-round ratios. Target: WopHost >= 1.0x LangGraph
on each database in the headline. LangGraph writes checkpoints on background threads that
overlap the graph's work, so the ratio depends on a free core: the load average is printed.

``--profile`` then runs ``--profile-cycles`` WopHost cycles per database under cProfile with every
DBAPI statement counted (SQLite: the connection's trace callback; psycopg: its cursor), and
prints statements, transactions and round trips per cycle (a pipeline of statements is one), the
commonest statements and the top functions.

``--paired N`` then measures each headline pair once more, cycle by cycle: WopHost's cycle and
LangGraph's alternating one by one, ``N`` of each (the side going first alternating too), and
the ratio is the median of the paired ratios (LangGraph's time over WopHost's, that is WopHost's
throughput over LangGraph's), which this VM's drift (tens of percent within minutes, more than a
round of 50 cycles lasts) moves far less than a ratio of rounds.

``--split`` then runs ``--split-cycles`` cycles of every contender and prints where a cycle's
time goes: wall time, this process's CPU time (all threads), and the time spent waiting on
PostgreSQL (psycopg's wait for each round trip), on the calling thread and on the others
(LangGraph's background writers, whose waits overlap the caller's work). SQLite runs in
process: its cycles are CPU.

    python benchmarks/full_path.py --iterations 50 --rounds 5 --profile --split
    python benchmarks/full_path.py --no-secondary --paired 300 --postgres postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import io
import os
import pstats
import re
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from sqlalchemy import event
from sqlalchemy.pool import Pool

from _graphs import WORKFLOWS, approval_builder
from _harness import POSTGRES_ENV, database, paired_cycles
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.store import SQLModelSaver

ALICE = Principal("acme", "alice", frozenset({"runs:create", "runs:read", "approvals:respond"}))
PAIRS = {
    "WopHost[sqlite] / LangGraph+SqliteSaver": ("WopHost[sqlite]", "LangGraph+SqliteSaver"),
    "WopHost[postgres] / LangGraph+PostgresSaver": ("WopHost[postgres]", "LangGraph+PostgresSaver"),
}
#: Secondary, labelled: both sides' gate calls the node API's ``request_approval``.
NODE_API = " node API"
SECONDARY_PAIRS = {
    f"{a}{NODE_API} / {b}{NODE_API}": (f"{a}{NODE_API}", f"{b}{NODE_API}") for a, b in PAIRS.values()
}
#: For reading the gap, not targets: LangGraph's own cycle on our saver (no host, no recorder).
FLOOR_PAIRS = {
    "LangGraph+SQLModelSaver[sqlite] / LangGraph+SqliteSaver": (
        "LangGraph+SQLModelSaver[sqlite]",
        "LangGraph+SqliteSaver",
    ),
    "LangGraph+SQLModelSaver[postgres] / LangGraph+PostgresSaver": (
        "LangGraph+SQLModelSaver[postgres]",
        "LangGraph+PostgresSaver",
    ),
}
Cycle = Callable[[], None]
_LITERAL = re.compile(r"'[^']*'|\b\d+\b")


def _host_cycle(host: WopHost, workflow: str = "plain_approval") -> Cycle:
    def cycle() -> None:
        snap = host.create_run(workflow, {"n": 0}, owner=ALICE)
        if not snap["status"].startswith("waiting-"):
            raise AssertionError(f"create_run ended in {snap!r}")
        result = host.resolve(snap["runId"], "approve", {"action": "accept"}, ALICE)
        if result["status"] != "completed":
            raise AssertionError(f"resolve ended in {result!r}")

    return cycle


def _langgraph_cycle(graph: Any) -> Cycle:
    def cycle() -> None:
        config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        out = graph.invoke({"n": 0}, config)
        if not out.get("__interrupt__"):
            raise AssertionError(f"no interrupt: {out!r}")
        out = graph.invoke(Command(resume={"action": "accept"}), config)
        if out.get("decision") != "accept" or out.get("n") != 2:
            raise AssertionError(f"resume ended in {out!r}")

    return cycle


def _host(url: str) -> WopHost:
    host = WopHost.from_url(url)
    for workflow in ("plain_approval", "approval"):
        host.register(workflow, WORKFLOWS[workflow])
    return host


@contextlib.contextmanager
def _contenders(workdir: Path, postgres: str | None, secondary: bool) -> Iterator[dict[str, Cycle]]:
    with contextlib.ExitStack() as stack:
        cycles: dict[str, Cycle] = {}
        host = _host(f"sqlite:///{workdir / 'wop.db'}")
        stack.callback(host.saver.close)
        cycles["WopHost[sqlite]"] = _host_cycle(host)

        connection = sqlite3.connect(workdir / "langgraph.db", check_same_thread=False)
        stack.callback(connection.close)
        sqlite_saver = SqliteSaver(connection)
        sqlite_saver.setup()
        sqlite_graph = approval_builder(plain=True).compile(checkpointer=sqlite_saver)
        cycles["LangGraph+SqliteSaver"] = _langgraph_cycle(sqlite_graph)
        ours = SQLModelSaver.from_url(f"sqlite:///{workdir / 'floor.db'}")
        ours.setup()
        stack.callback(ours.close)
        floor_graph = approval_builder(plain=True).compile(checkpointer=ours)
        cycles["LangGraph+SQLModelSaver[sqlite]"] = _langgraph_cycle(floor_graph)
        if secondary:
            cycles[f"WopHost[sqlite]{NODE_API}"] = _host_cycle(host, "approval")
            graph = approval_builder().compile(checkpointer=sqlite_saver)
            cycles[f"LangGraph+SqliteSaver{NODE_API}"] = _langgraph_cycle(graph)

        if postgres:
            from langgraph.checkpoint.postgres import PostgresSaver

            pg_host = _host(stack.enter_context(database("postgres", postgres)))
            stack.callback(pg_host.saver.close)
            cycles["WopHost[postgres]"] = _host_cycle(pg_host)

            lg_url = stack.enter_context(database("postgres", postgres)).replace("+psycopg", "")
            pg_saver = stack.enter_context(PostgresSaver.from_conn_string(lg_url))
            pg_saver.setup()
            graph = approval_builder(plain=True).compile(checkpointer=pg_saver)
            cycles["LangGraph+PostgresSaver"] = _langgraph_cycle(graph)
            ours_pg = SQLModelSaver.from_url(stack.enter_context(database("postgres", postgres)))
            ours_pg.setup()
            stack.callback(ours_pg.close)
            floor_pg_graph = approval_builder(plain=True).compile(checkpointer=ours_pg)
            cycles["LangGraph+SQLModelSaver[postgres]"] = _langgraph_cycle(floor_pg_graph)
            if secondary:
                cycles[f"WopHost[postgres]{NODE_API}"] = _host_cycle(pg_host, "approval")
                graph = approval_builder().compile(checkpointer=pg_saver)
                cycles[f"LangGraph+PostgresSaver{NODE_API}"] = _langgraph_cycle(graph)
        yield cycles


def _rate(cycle: Cycle, iterations: int) -> float:
    started = time.perf_counter()
    for _ in range(iterations):
        cycle()
    return iterations / (time.perf_counter() - started)


def measure(cycles: dict[str, Cycle], iterations: int, rounds: int, warmup: int) -> dict[str, Any]:
    for cycle in cycles.values():
        for _ in range(warmup):
            cycle()
    names = list(cycles)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(_rate(cycles[name], iterations))
    rates = {name: statistics.median(s) for name, s in samples.items()}

    def ratios(pairs: dict[str, tuple[str, str]]) -> dict[str, float]:
        return {
            label: statistics.median(x / y for x, y in zip(samples[a], samples[b], strict=True))
            for label, (a, b) in pairs.items()
            if a in samples and b in samples
        }

    return {
        "rates": rates,
        "ratios": ratios(PAIRS),
        "floor": ratios(FLOOR_PAIRS),
        "secondary": ratios(SECONDARY_PAIRS),
    }


def paired(cycles: dict[str, Cycle], count: int) -> None:
    """Each headline pair's cycles alternating one by one, ``count`` of each: the median of the
    paired ratios (see the module's ``--paired``)."""
    print(
        f"  paired: {count} cycles a side, WopHost's and LangGraph's alternating one by one; "
        "median of the paired ratios (WopHost's throughput over LangGraph's)"
    )
    for label, (ours, theirs) in PAIRS.items():
        if ours not in cycles or theirs not in cycles:
            continue
        load = os.getloadavg()[0]
        times, ratio = paired_cycles((cycles[theirs], cycles[ours]), count, max(count // 10, 3))
        ours_ms, theirs_ms = statistics.median(times[1]), statistics.median(times[0])
        verdict = "meets" if ratio >= 1.0 else "BELOW"
        print(
            f"  {label:45s} {ratio:5.2f}x  ({ours_ms:.2f} vs {theirs_ms:.2f} ms a cycle, load {load:.2f}; "
            f"{verdict} the 1.0x target)"
        )


# -- profile ----------------------------------------------------------------------------------


class StatementCounter:
    """Counts the DBAPI statements of this process and the transactions they open.

    A statement that runs while its connection is outside a transaction starts one (an
    autocommit statement, an explicit ``BEGIN``, or the driver's implicit ``BEGIN``).
    """

    def __init__(self) -> None:
        self.statements: collections.Counter[str] = collections.Counter()
        self.transactions = 0
        #: psycopg's own BEGIN / COMMIT / ROLLBACK (each a round trip; SQLite traces them as statements).
        self.commands = 0
        #: psycopg: statements sent in a pipeline (no round trip of their own), and pipelines
        #: (one round trip each, at their end).
        self.pipelined = 0
        self.pipelines = 0
        self.enabled = False

    def note(self, sql: str, in_transaction: bool) -> None:
        if not self.enabled:
            return
        self.statements[_LITERAL.sub("?", " ".join(sql.split()))[:100]] += 1
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if not in_transaction and head not in ("COMMIT", "ROLLBACK"):
            self.transactions += 1

    def install(self) -> None:
        counter = self

        @event.listens_for(Pool, "connect")
        def _trace(dbapi_connection: Any, _record: Any) -> None:
            if isinstance(dbapi_connection, sqlite3.Connection):
                conn = dbapi_connection
                conn.set_trace_callback(lambda sql: counter.note(sql, conn.in_transaction))

        try:
            import psycopg
        except ImportError:
            return
        from psycopg.pq import TransactionStatus

        original_execute = psycopg.Cursor.execute
        original_many = psycopg.Cursor.executemany

        def idle(cursor: Any) -> bool:
            return bool(cursor.connection.info.transaction_status == TransactionStatus.IDLE)

        def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            counter.note(_text(query), not idle(self))
            if counter.enabled and self.connection.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF:
                counter.pipelined += 1
            return original_execute(self, query, *args, **kwargs)

        def executemany(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            counter.note(_text(query), not idle(self))
            return original_many(self, query, *args, **kwargs)

        original_command = psycopg.Connection._exec_command

        def exec_command(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
            if counter.enabled and self.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF:
                counter.commands += 1  # (in a pipeline, a command goes out with its statements)
            return original_command(self, command, *args, **kwargs)

        original_pipeline = psycopg.Connection.pipeline

        @contextlib.contextmanager
        def pipeline(self: Any) -> Iterator[Any]:
            if counter.enabled:
                counter.pipelines += 1
            with original_pipeline(self) as piped:
                yield piped

        psycopg.Connection.pipeline = pipeline  # type: ignore[method-assign,assignment]
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        psycopg.Cursor.executemany = executemany  # type: ignore[method-assign]
        psycopg.Connection._exec_command = exec_command  # type: ignore[method-assign]


class DatabaseWaits:
    """Time this process waits on PostgreSQL, by thread: the calling one, and the others.

    Every psycopg round trip (statement, ``BEGIN``, ``COMMIT``, fetch) goes through
    ``Connection.wait``; timing it times the waits, not the client's work around them.
    """

    def __init__(self) -> None:
        self.caller = 0.0
        self.others = 0.0
        self.enabled = False
        self._caller = threading.get_ident()

    def install(self) -> None:
        try:
            import psycopg
        except ImportError:
            return
        waits = self
        original_wait = psycopg.Connection.wait

        def wait(self: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
            if not waits.enabled:
                return original_wait(self, gen, *args, **kwargs)
            started = time.perf_counter()
            try:
                return original_wait(self, gen, *args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                if threading.get_ident() == waits._caller:
                    waits.caller += spent
                else:
                    waits.others += spent

        psycopg.Connection.wait = wait  # type: ignore[method-assign]


def split(cycles: dict[str, Cycle], count: int, waits: DatabaseWaits) -> None:
    """Print wall, CPU and database-wait time per cycle of each contender."""
    print(f"\nwhere a cycle's time goes (ms per cycle, {count} cycles each):")
    print(f"  {'contender':34s} {'wall':>7s} {'cpu':>7s} {'db wait, caller':>16s} {'db wait, others':>16s}")
    for name, cycle in cycles.items():
        cycle()  # warm caches outside the figures
        waits.caller = waits.others = 0.0
        waits.enabled = True
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            cycle()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        waits.enabled = False
        per = 1000 / count
        print(
            f"  {name:34s} {wall * per:7.2f} {cpu * per:7.2f} "
            f"{waits.caller * per:16.2f} {waits.others * per:16.2f}"
        )


def _text(query: Any) -> str:
    if isinstance(query, bytes):
        return query.decode()
    return query if isinstance(query, str) else str(query)


def profile(name: str, cycle: Cycle, cycles: int, counter: StatementCounter, top: int) -> None:
    cycle()  # warm caches outside the counts
    counter.statements.clear()
    counter.transactions = 0
    counter.commands = 0
    counter.pipelined = counter.pipelines = 0
    counter.enabled = True
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for _ in range(cycles):
        cycle()
    profiler.disable()
    elapsed = time.perf_counter() - started
    counter.enabled = False
    total = sum(counter.statements.values())
    print(f"\nprofile: {name}, {cycles} cycles, {1000 * elapsed / cycles:.1f} ms/cycle under cProfile")
    print(f"  statements/cycle {total / cycles:.1f}, transactions/cycle {counter.transactions / cycles:.1f}")
    if counter.commands:  # PostgreSQL: each statement and each of these is a round trip ...
        # ... but statements in a pipeline, which cost one round trip per pipeline.
        trips = (total + counter.commands - counter.pipelined + counter.pipelines) / cycles
        commands = counter.commands / cycles
        print(f"  driver BEGIN/COMMIT/ROLLBACK/cycle {commands:.1f}, round trips/cycle {trips:.1f}")
        if counter.pipelines:
            print(
                f"  pipelined statements/cycle {counter.pipelined / cycles:.1f} "
                f"in {counter.pipelines / cycles:.1f} pipelines"
            )
    print("  commonest statements (per cycle):")
    for sql, count in counter.statements.most_common(12):
        print(f"    {count / cycles:5.1f}  {sql}")
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(top)
        body = out.getvalue()
        start = body.find("   ncalls")
        print(f"  top {top} functions by {order}:")
        for line in body[start:].rstrip().splitlines():
            print(f"    {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=50, help="cycles per contender per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median reported)")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured cycles per contender first")
    parser.add_argument("--postgres", default=None, help=f"PostgreSQL server URL (default ${POSTGRES_ENV})")
    parser.add_argument("--profile", action="store_true", help="profile the WopHost cycles afterwards")
    parser.add_argument("--profile-cycles", type=int, default=50)
    parser.add_argument("--top", type=int, default=20, help="functions listed per profile ordering")
    parser.add_argument(
        "--paired", type=int, default=0, help="then each headline pair's cycles, N a side, one by one"
    )
    parser.add_argument("--split", action="store_true", help="split each contender's cycle time afterwards")
    parser.add_argument("--split-cycles", type=int, default=100)
    parser.add_argument(
        "--no-secondary", action="store_true", help="leave out the node-API (request_approval) comparison"
    )
    args = parser.parse_args(argv)
    postgres = args.postgres or os.environ.get(POSTGRES_ENV)
    if not postgres:
        print(f"PostgreSQL skipped: pass --postgres or set {POSTGRES_ENV}", file=sys.stderr)
    counter = StatementCounter()
    if args.profile:
        counter.install()
    waits = DatabaseWaits()
    if args.split:
        waits.install()
    with (
        tempfile.TemporaryDirectory(prefix="wop-bench-") as tmp,
        _contenders(Path(tmp), postgres, not args.no_secondary) as cycles,
    ):
        load = os.getloadavg()
        report = measure(cycles, args.iterations, args.rounds, args.warmup)
        after = os.getloadavg()
        print(
            f"full path (create -> suspend -> resolve -> complete), cycles/s: median of "
            f"{args.rounds} interleaved rounds of {args.iterations} cycles; load average "
            f"{load[0]:.2f} before, {after[0]:.2f} after ({os.cpu_count()} cores)"
        )
        print("  headline: the graph a LangGraph user writes (interrupt({...}), Command(resume=...))")
        for name, rate in report["rates"].items():
            print(f"  {name:34s} {rate:8.1f}")
        for label, ratio in report["ratios"].items():
            verdict = "meets" if ratio >= 1.0 else "BELOW"
            print(f"  {label:45s} {ratio:5.2f}x  ({verdict} the 1.0x target)")
        print("  floor (LangGraph's own cycle on our saver, no host; what the host adds is the rest):")
        for label, ratio in report["floor"].items():
            print(f"  {label:58s} {ratio:5.2f}x")
        if report["secondary"]:
            print("  secondary, not the target: both gates call the node API's request_approval:")
            for label, ratio in report["secondary"].items():
                print(f"  {label:58s} {ratio:5.2f}x")
        if args.paired:
            paired(cycles, args.paired)
        if args.profile:
            for name in ("WopHost[sqlite]", "WopHost[postgres]"):
                if name in cycles:
                    profile(name, cycles[name], args.profile_cycles, counter, args.top)
        if args.split:
            split(cycles, args.split_cycles, waits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
