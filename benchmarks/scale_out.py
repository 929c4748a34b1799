"""Scale-out on PostgreSQL: runs completed per second with 4 worker processes against 1.

The graph ``sleepy_chain`` has three nodes that each sleep ``--step-sleep`` seconds (I/O-bound,
like model calls). For each process count (``--processes``, default 1 and 4, in rounds with the
order alternating) on one fresh PostgreSQL database:

1. start that many ``wop-langgraph worker _graphs:WORKFLOWS --concurrency C`` processes;
2. warm up: enqueue one run per worker thread and wait until they completed (the processes are
   up and connected);
3. enqueue ``--runs`` runs with ``WopHost.create_run(..., wait=False)`` (a host without
   workers: it only records and queues), and time from the first enqueue until all completed;
4. stop the processes.

Reports runs/s per process count (median of the rounds) and the ratio (median of per-round
ratios). Target: 4 processes >= 3x 1 process.

    python benchmarks/scale_out.py --runs 96 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from sqlalchemy import func, select

from _graphs import WORKFLOWS
from _harness import POSTGRES_ENV, database, row, wait_for, worker_processes
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.store.run_tables import runs_table

ALICE = Principal("acme", "alice", frozenset({"runs:create", "runs:read"}))


def _completed(host: WopHost, ids: list[str]) -> int:
    with host.engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(runs_table)
                .where(runs_table.c.run_id.in_(ids), runs_table.c.status == "completed")
            ).scalar_one()
        )


def _enqueue(host: WopHost, count: int) -> list[str]:
    return [host.create_run("sleepy_chain", {"n": 0}, owner=ALICE, wait=False)["runId"] for _ in range(count)]


def _drain(host: WopHost, ids: list[str], timeout: float, what: str) -> None:
    wait_for(lambda: _completed(host, ids) == len(ids), timeout, what, step=0.1)


def one_rate(host: WopHost, url: str, processes: int, args: argparse.Namespace) -> float:
    worker_args = ["--poll-seconds", "1", "--sweep-seconds", "0"]
    with worker_processes(url, processes, concurrency=args.concurrency, args=worker_args):
        warm = _enqueue(host, processes * args.concurrency)
        _drain(host, warm, args.timeout, f"{processes} worker process(es) to warm up")
        started = time.perf_counter()
        ids = _enqueue(host, args.runs)
        _drain(host, ids, args.timeout, f"{args.runs} runs on {processes} worker process(es)")
        return args.runs / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=96, help="measured runs per measurement (default 96)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds (default 2)")
    parser.add_argument("--processes", type=int, nargs=2, default=[1, 4], metavar=("FEW", "MANY"))
    parser.add_argument("--concurrency", type=int, default=4, help="worker threads per process (default 4)")
    parser.add_argument(
        "--step-sleep", type=float, default=0.2, help="seconds each node sleeps (default 0.2)"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="bound on each wait")
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV))
    args = parser.parse_args(argv)
    if not args.postgres:
        print(f"scale_out needs PostgreSQL: pass --postgres or set {POSTGRES_ENV}", file=sys.stderr)
        return 2
    os.environ["WOP_BENCH_STEP_SLEEP"] = str(args.step_sleep)  # inherited by the workers
    few, many = args.processes
    samples: dict[int, list[float]] = {few: [], many: []}
    with database("postgres", args.postgres) as url:
        host = WopHost.from_url(url)
        host.register("sleepy_chain", WORKFLOWS["sleepy_chain"])
        try:
            for r in range(args.rounds):
                for processes in (few, many) if r % 2 == 0 else (many, few):
                    samples[processes].append(one_rate(host, url, processes, args))
        finally:
            host.saver.close()
    ratio = statistics.median(m / f for f, m in zip(samples[few], samples[many], strict=True))
    widths = [20, 10, 12]
    print(
        f"scale-out on PostgreSQL: {args.runs} runs of 3 nodes x {args.step_sleep:g} s, "
        f"--concurrency {args.concurrency} per process, median of {args.rounds} rounds"
    )
    print(row(["worker processes", "runs/s", "rounds"], widths))
    cells: list[list[Any]] = [
        [str(p), statistics.median(samples[p]), " ".join(f"{x:.1f}" for x in samples[p])] for p in (few, many)
    ]
    for line in cells:
        print(row(line, widths))
    verdict = "meets" if ratio >= 3.0 else "BELOW"
    print(f"{many} / {few} processes: {ratio:.2f}x  ({verdict} the 3x target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
