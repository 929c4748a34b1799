"""What a transaction's BEGIN sent with its first statement is worth: the full path on PostgreSQL.

Two WopHost[postgres] hosts in one process, each on a scratch database: one whose engine uses
psycopg's own connection class (``BEGIN`` waited for before the first statement: a round trip
of its own), one the store's (``store/pg_connection.py``: ``BEGIN`` in the pipeline of the first
statement). Their cycles (create, suspend at the gate, resolve, complete: ``full_path.py``'s)
alternate one by one, the first side alternating too, so the VM's drift, which moves a cycle by
tens of percent within minutes, falls on both alike; the ratio is the median of the paired
cycles' ratios (psycopg's cycle time over the store's: above 1, the store's is quicker).
``--control`` gives both hosts the store's class: an A/A run, whose ratio shows the method's
own noise::

    python benchmarks/pg_begin.py --postgres postgresql://postgres@127.0.0.1:5432/test --cycles 600
    python benchmarks/pg_begin.py --postgres postgresql://postgres@127.0.0.1:5432/test --cycles 600 --control
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from typing import Any

from _harness import POSTGRES_ENV, database, paired_cycles
from full_path import _host, _host_cycle
from wop_langgraph.store import pg_connection


def _host_on_psycopgs_class(url: str) -> Any:
    """A host whose engine keeps psycopg's own connection class (the store reads the class it
    uses once, as the engine is made)."""
    store_class = pg_connection.connection_class
    pg_connection.connection_class = lambda: None
    try:
        return _host(url)
    finally:
        pg_connection.connection_class = store_class


def _driver_of(host: Any) -> Any:
    with host.engine.connect() as conn:
        return conn.connection.driver_connection


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV), help="a PostgreSQL server URL")
    parser.add_argument("--cycles", type=int, default=600, help="measured cycles per host")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured cycles per host first")
    parser.add_argument("--control", action="store_true", help="both hosts on the store's connections (A/A)")
    args = parser.parse_args()
    if not args.postgres:
        print(f"PostgreSQL skipped: pass --postgres or set {POSTGRES_ENV}", file=sys.stderr)
        return 0
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(database("postgres", args.postgres)) for _ in range(2)]
        first = _host(urls[0]) if args.control else _host_on_psycopgs_class(urls[0])
        second = _host(urls[1])
        for host in (first, second):
            stack.callback(host.saver.close)
        store = pg_connection.connection_class()
        begins = [store is not None and isinstance(_driver_of(host), store) for host in (first, second)]
        if begins != [args.control, True]:
            raise SystemExit(f"the hosts' connections are not the classes compared: {begins}")
        times, ratio = paired_cycles((_host_cycle(first), _host_cycle(second)), args.cycles, args.warmup)
    names = ("store's", "store's") if args.control else ("psycopg's", "store's")
    print(
        f"{args.cycles} paired full-path cycles on PostgreSQL (A/A control)"
        if args.control
        else f"{args.cycles} paired full-path cycles on PostgreSQL"
    )
    for name, side in zip(names, times, strict=True):
        print(f"  {name:10s} connections   median {statistics.median(side):6.2f} ms a cycle")
    load = os.getloadavg()[0]
    print(f"  first / second, median of the paired ratios: {ratio:.3f}x; load average {load:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
