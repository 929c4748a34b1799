"""Idle cost: what 10,000 suspended runs cost an idle worker, and a resolve.

On one fresh database (SQLite by default; ``--backend postgres``):

1. ``--small`` runs are created and driven to their approval gate (``gate_then_sleep`` with a
   0 s sleep), by ``--setup-workers`` ``wop-langgraph worker`` processes; then one idle worker
   process is started and left to settle, and ``--samples`` resolve latencies are measured:
   each sample creates one more run, waits for it to suspend, and times
   ``WopHost.resolve(..., wait=False)`` (what the HTTP server calls: the answer at commit);
2. more runs are created until ``--large`` are suspended, and the same is measured again;
3. the idle worker's CPU (user + system from ``/proc/<pid>/stat`` via psutil) is measured over
   ``--idle-seconds`` with ``--large`` runs suspended and nothing queued.

Targets: the idle worker uses < 2% of a core; resolve p50 at ``--large`` is within 1.25x of p50
at ``--small``.

    python benchmarks/idle_cost.py --large 10000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import psutil
from sqlalchemy import func, or_, select

from _graphs import WORKFLOWS
from _harness import POSTGRES_ENV, database, p50, percentile, row, wait_for, worker_processes
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.store.run_tables import runs_table

ALICE = Principal("acme", "alice", frozenset({"runs:create", "runs:read", "approvals:respond"}))
WORKFLOW = "gate_then_sleep"


def _waiting(host: WopHost) -> int:
    with host.engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(runs_table).where(runs_table.c.status == "waiting-approval")
            ).scalar_one()
        )


def _queued(host: WopHost) -> int:
    with host.engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(runs_table).where(runs_table.c.queued_at.is_not(None))
            ).scalar_one()
        )


def _waiting_or_queued(host: WopHost) -> int:
    """Runs at their gate or on their way there, each counted once.

    One count, not ``_waiting`` plus ``_queued``: a run's status turns ``waiting-approval`` when
    its interrupt is stored, and the run leaves the queue only when its pass ends, a moment
    later; two counts taken across that moment add it twice, and ``fill`` stopped one run short
    of its target and waited for it until it timed out.
    """
    with host.engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(runs_table)
                .where(or_(runs_table.c.status == "waiting-approval", runs_table.c.queued_at.is_not(None)))
            ).scalar_one()
        )


def fill(host: WopHost, target: int, timeout: float) -> None:
    """Create runs until ``target`` wait at their gate (workers drive them there)."""
    batch = 200
    # Resolved runs still queued go to their end, not to a gate: let them finish first.
    wait_for(lambda: _queued(host) == 0, timeout, "the queue to drain", step=0.2)
    # Queued runs are on their way to the gate: count them, so the fill never overshoots.
    while (missing := target - _waiting_or_queued(host)) > 0:
        for _ in range(min(batch, missing)):
            host.create_run(WORKFLOW, {"n": 0}, owner=ALICE, wait=False)
        # Keep the queue short so creating never outruns the workers by much.
        wait_for(lambda: _queued(host) < batch, timeout, "the workers to suspend the new runs", step=0.2)
    wait_for(lambda: _waiting(host) >= target, timeout, f"{target} suspended runs", step=0.2)


def resolve_latencies(host: WopHost, samples: int, timeout: float) -> list[float]:
    """Time ``resolve(wait=False)`` on ``samples`` freshly suspended runs (seconds)."""
    out: list[float] = []
    for _ in range(samples):
        run_id = host.create_run(WORKFLOW, {"n": 0}, owner=ALICE, wait=False)["runId"]

        def suspended(run_id: str = run_id) -> bool:
            return host.snapshot(run_id)["status"] == "waiting-approval"

        wait_for(suspended, timeout, "a run to suspend")
        started = time.perf_counter()
        result = host.resolve(run_id, "approve", {"action": "accept"}, ALICE, wait=False)
        out.append(time.perf_counter() - started)
        if result["status"] != "running":
            raise SystemExit(f"resolve answered {result!r}")
    return out


def idle_cpu(pid: int, seconds: float) -> float:
    """Percent of one core the process used over ``seconds``."""
    process = psutil.Process(pid)
    before = process.cpu_times()
    started = time.perf_counter()
    time.sleep(seconds)
    after = process.cpu_times()
    used = (after.user - before.user) + (after.system - before.system)
    return 100 * used / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", type=int, default=10, help="suspended runs first (default 10)")
    parser.add_argument("--large", type=int, default=10_000, help="suspended runs then (default 10,000)")
    parser.add_argument("--samples", type=int, default=30, help="resolves timed per size (default 30)")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="CPU measured over (default 10)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds the idle worker starts in")
    parser.add_argument("--setup-workers", type=int, default=2, help="worker processes that fill")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--timeout", type=float, default=900.0, help="bound on each wait")
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV))
    args = parser.parse_args(argv)
    os.environ["WOP_BENCH_SLEEP"] = "0"  # the node after the gate: no sleep (inherited by workers)
    with database(args.backend, args.postgres) as url:
        host = WopHost.from_url(url)
        host.register(WORKFLOW, WORKFLOWS[WORKFLOW])
        try:
            started = time.perf_counter()
            with worker_processes(url, args.setup_workers, args=["--sweep-seconds", "0"]):
                fill(host, args.small, args.timeout)
                small = resolve_latencies(host, args.samples, args.timeout)
                fill(host, args.large, args.timeout)
                large = resolve_latencies(host, args.samples, args.timeout)
                # The resolved samples finish here: the idle worker must find nothing queued.
                wait_for(lambda: _queued(host) == 0, args.timeout, "the queue to drain")
            fill_seconds = time.perf_counter() - started
            with worker_processes(url, 1) as (idle,):
                time.sleep(args.settle)
                cpu = idle_cpu(idle.pid, args.idle_seconds)
            suspended = _waiting(host)
        finally:
            host.saver.close()
    ratio = p50(large) / p50(small)
    widths = [26, 9, 9, 9]
    print(
        f"idle cost on {args.backend}: {suspended} runs suspended at the end; setup and "
        f"measurements took {fill_seconds:.0f} s"
    )
    print(row(["resolve (wait=False)", "samples", "p50 ms", "p99 ms"], widths))
    cells: list[list[Any]] = [
        [f"{args.small} suspended", len(small), 1000 * p50(small), 1000 * percentile(small, 0.99)],
        [f"{args.large} suspended", len(large), 1000 * p50(large), 1000 * percentile(large, 0.99)],
    ]
    for cells_row in cells:
        print(row(cells_row, widths))
    verdict = "meets" if ratio <= 1.25 else "ABOVE"
    print(
        f"resolve p50 ratio {args.large} / {args.small} suspended: {ratio:.2f}x  ({verdict} the 1.25x target)"
    )
    verdict = "meets" if cpu < 2.0 else "ABOVE"
    print(
        f"idle worker process (--concurrency 4) CPU over {args.idle_seconds:g} s: "
        f"{cpu:.2f}% of a core  ({verdict} the 2% target)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
