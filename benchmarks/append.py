"""What one event append costs: the append transactions of the event log, alone.

Each operation is one write transaction through the engine (``engine.begin()``: on SQLite the
process's write lock and ``BEGIN IMMEDIATE``; the commit), holding

* ``append1``: ``append`` of one event (the counter upsert and the insert),
* ``append3``: ``append`` of three events,
* ``once``: ``append(..., once=True)`` of one new event,
* ``in_tx``: one ``append`` of one event inside a transaction that holds 50 of them
  (what the append alone costs, without ``BEGIN`` and ``COMMIT``),
* ``scores``: ``in_tx`` with a model's scores in the payload (floats, as a low-confidence
  gate's node logs them).

Each run receives 14 events (what one create-suspend-resolve-complete cycle logs), then the
next run begins, so counter rows are created as often as in the real workload. Modes are
measured in interleaved rounds; the figures are the median round, in microseconds per operation,
of wall time and of this process's CPU time (steadier on a busy machine; on PostgreSQL it leaves
out the server's work)::

    PYTHONPATH=src python benchmarks/append.py --rounds 5 --operations 2000
    PYTHONPATH=src python benchmarks/append.py --postgres postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Engine

from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.events import NewEvent, append
from wop_langgraph.store.migrations import upgrade

POSTGRES_ENV = "WOP_TEST_POSTGRES_URL"
EVENTS_PER_RUN = 14
IN_TX = 50
NOW = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


class Runs:
    """Run ids, a new one every :data:`EVENTS_PER_RUN` events."""

    def __init__(self) -> None:
        self._prefix = uuid.uuid4().hex[:8]
        self._events = 0

    def next(self, count: int = 1) -> str:
        run = f"acme/run-{self._prefix}-{self._events // EVENTS_PER_RUN}"
        self._events += count
        return run


def _event(i: int) -> NewEvent:
    return NewEvent(type="node.completed", payload={"nodeId": "review", "outputs": {"i": i, "note": "héllo"}})


def _scored(i: int) -> NewEvent:
    scores = {"label": "refund", "confidence": 0.62 + i % 97 / 1000, "threshold": 0.8, "others": [0.21, 0.09]}
    outputs = {"i": i, "scores": scores}
    return NewEvent(type="node.completed", payload={"nodeId": "classify", "outputs": outputs})


def modes(engine: Engine) -> dict[str, Callable[[int], int]]:
    """Each mode runs ``n`` operations and returns how many it ran."""
    runs = Runs()

    def append1(n: int) -> int:
        for i in range(n):
            with engine.begin() as conn:
                append(conn, runs.next(), [_event(i)], now=NOW)
        return n

    def append3(n: int) -> int:
        for i in range(n):
            with engine.begin() as conn:
                append(conn, runs.next(3), [_event(i), _event(i), _event(i)], now=NOW)
        return n

    def once(n: int) -> int:
        for i in range(n):
            with engine.begin() as conn:
                append(conn, runs.next(), [_event(i)], now=NOW, once=True)
        return n

    def in_tx(n: int, event: Callable[[int], NewEvent] = _event) -> int:
        done = 0
        while done < n:
            with engine.begin() as conn:
                for i in range(IN_TX):
                    append(conn, runs.next(), [event(i)], now=NOW)
            done += IN_TX
        return done

    def scores(n: int) -> int:
        return in_tx(n, _scored)

    return {"append1": append1, "append3": append3, "once": once, "in_tx": in_tx, "scores": scores}


def measure(url: str, operations: int, rounds: int, warmup: int) -> dict[str, list[tuple[float, float]]]:
    engine = make_engine(url)
    try:
        upgrade(engine)
        workloads = modes(engine)
        for run in workloads.values():
            run(warmup)
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in workloads}
        names = list(workloads)
        for round_ in range(rounds):
            order = names[round_ % len(names) :] + names[: round_ % len(names)]
            for name in order:
                started, cpu = time.perf_counter(), time.process_time()
                done = workloads[name](operations)
                wall_us = 1e6 * (time.perf_counter() - started) / done
                figures[name].append((wall_us, 1e6 * (time.process_time() - cpu) / done))
        return figures
    finally:
        engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--operations", type=int, default=2000, help="operations per mode per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV), help="a PostgreSQL server URL")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    args = parser.parse_args(argv)
    backends = [b for b in ("sqlite", "postgres") if args.only in (None, b)]
    for backend in backends:
        if backend == "postgres":
            if not args.postgres:
                print(f"PostgreSQL skipped: pass --postgres or set {POSTGRES_ENV}", file=sys.stderr)
                continue
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            from _postgres import scratch_database

            with scratch_database(args.postgres) as pg_url:
                figures = measure(
                    pg_url.render_as_string(hide_password=False), args.operations, args.rounds, args.warmup
                )
        else:
            with tempfile.TemporaryDirectory(prefix="wop-bench-") as folder:
                figures = measure(f"sqlite:///{folder}/bench.db", args.operations, args.rounds, args.warmup)
        for name, values in figures.items():
            wall = [w for w, _ in values]
            cpu = [c for _, c in values]
            print(
                f"{backend:8} {name:8}"
                f" wall {statistics.median(wall):7.1f} us/op ({min(wall):.0f}-{max(wall):.0f})"
                f"  cpu {statistics.median(cpu):7.1f} us/op ({min(cpu):.0f}-{max(cpu):.0f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
