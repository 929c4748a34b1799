"""What a round trip, a statement and a commit cost on this PostgreSQL server (psycopg, loopback).

The cost model behind the full path's PostgreSQL figures (see ``full_path.py --split``): on a
scratch database with two small tables, each shape below runs ``--operations`` times per round,
shapes interleaved, after a warm-up; printed is microseconds per operation, one column per round.

* ``select 1``: a round trip and nothing else.
* ``insert, autocommit``: one statement that commits by itself (what a saver write is).
* ``begin, insert, commit``: a transaction of one statement (psycopg sends ``BEGIN`` first).
* ``begin, 2 inserts, commit``: a transaction of two statements (a write and its event).
* ``2 inserts as one CTE``: the same two rows in one data-modifying statement, autocommit.

The difference between the last two is what folding a host transaction into one statement
saves; the difference between ``select 1`` and an autocommit insert is a statement's and a
commit's work on the server.

    python benchmarks/postgres_costs.py --postgres postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable

import psycopg

from _harness import POSTGRES_ENV, backends, database

ROW = '{"kind": "approval"}'


def shapes(auto: psycopg.Connection, tx: psycopg.Connection) -> dict[str, Callable[[], None]]:
    """The measured operations, by name."""

    def select_one() -> None:
        auto.execute("SELECT 1").fetchall()

    def insert_autocommit() -> None:
        auto.execute("INSERT INTO cost_a VALUES (%s, %s)", (uuid.uuid4().hex, ROW))

    def one_in_transaction() -> None:
        tx.execute("INSERT INTO cost_a VALUES (%s, %s)", (uuid.uuid4().hex, ROW))
        tx.commit()

    def two_in_transaction() -> None:
        tx.execute("INSERT INTO cost_a VALUES (%s, %s)", (uuid.uuid4().hex, ROW))
        tx.execute("INSERT INTO cost_b VALUES (%s, %s)", (uuid.uuid4().hex, ROW))
        tx.commit()

    def two_as_one_statement() -> None:
        auto.execute(
            "WITH a AS (INSERT INTO cost_a VALUES (%s, %s)) INSERT INTO cost_b VALUES (%s, %s)",
            (uuid.uuid4().hex, ROW, uuid.uuid4().hex, ROW),
        )

    return {
        "select 1": select_one,
        "insert, autocommit": insert_autocommit,
        "begin, insert, commit": one_in_transaction,
        "begin, 2 inserts, commit": two_in_transaction,
        "2 inserts as one CTE": two_as_one_statement,
    }


def measure(
    operations: dict[str, Callable[[], None]], count: int, rounds: int, warmup: int
) -> dict[str, list[float]]:
    """Microseconds per operation of each shape, one figure per round (shapes interleaved)."""
    for operation in operations.values():
        for _ in range(warmup):
            operation()
    figures: dict[str, list[float]] = {name: [] for name in operations}
    for _ in range(rounds):
        for name, operation in operations.items():
            started = time.perf_counter()
            for _ in range(count):
                operation()
            figures[name].append(1e6 * (time.perf_counter() - started) / count)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--operations", type=int, default=500, help="operations per shape per round")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds (one column each)")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured operations per shape first")
    parser.add_argument("--postgres", default=None, help=f"PostgreSQL server URL (default ${POSTGRES_ENV})")
    args = parser.parse_args(argv)
    postgres = args.postgres or os.environ.get(POSTGRES_ENV)
    if not backends(postgres, only="postgres"):  # (it says why on stderr)
        return 0
    with database("postgres", postgres) as url:
        dsn = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(dsn, autocommit=True) as auto, psycopg.connect(dsn) as tx:
            auto.execute("CREATE TABLE cost_a (id text PRIMARY KEY, v jsonb)")
            auto.execute("CREATE TABLE cost_b (id text PRIMARY KEY, v jsonb)")
            figures = measure(shapes(auto, tx), args.operations, args.rounds, args.warmup)
    print(f"PostgreSQL costs, us per operation ({args.operations} per round, one column per round):")
    for name, values in figures.items():
        print(f"  {name:26s} " + " ".join(f"{value:6.0f}" for value in values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
