"""HTTP latency while workers are busy: a real ``wop-langgraph serve`` process (uvicorn).

For each backend (SQLite; PostgreSQL with ``--postgres`` or ``$WOP_TEST_POSTGRES_URL``), one
server with ``--workers N`` in-process worker threads (or, with ``--worker-processes K``, an
API-only server and K ``worker`` processes of N threads each):

(a) resolve: ``--clients`` runs of ``gate_then_sleep`` (an approval gate, then a node that sleeps
    ``--sleep`` seconds) are created and waited for until all wait at the gate; then as many
    concurrent clients (one thread and connection each, started together) each resolve one
    distinct run. The resolve must answer at commit, not after the sleeping node.
(b) create: as many concurrent clients each ``POST /runs`` ``--creates`` runs of ``sleep_first``
    (whose first node sleeps ``--sleep`` seconds), back to back.

Repeated ``--rounds`` times; latencies of all rounds are pooled. Targets: resolve p99 <= 100 ms,
``POST /runs`` p99 <= 100 ms. ``cpu ms/req`` is the CPU time (user + system, read from ``/proc``,
so Linux only) the server process used during the bursts, divided by their requests: with
in-process workers it includes what the resolved or created runs cost the workers meanwhile. The
server is one GIL-bound process, so a burst's p99 is about its total CPU; this figure is less noisy
than the latencies on a shared machine.

    python benchmarks/http_engine.py --clients 32 --rounds 3
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from _harness import (
    AUTH,
    POSTGRES_ENV,
    WAITING,
    all_in,
    backends,
    database,
    p50,
    percentile,
    row,
    server,
    wait_for,
    worker_processes,
)
from wop_langgraph.protocol.ids import project_id

TARGET_MS = 100.0


class ServerCpu:
    """The CPU time a process spends during measured calls, per request (``/proc``; Linux only)."""

    def __init__(self, pid: int) -> None:
        self.path = f"/proc/{pid}/stat"
        self.seconds = 0.0
        self.requests = 0

    def _used(self) -> float | None:
        try:
            with open(self.path) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        # utime and stime: fields 14 and 15 of proc(5), the 12th and 13th after the command name.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def measure(self, requests: int, call: Callable[[], None]) -> None:
        """Run ``call``, which sends ``requests`` requests, and count the CPU the server used."""
        before = self._used()
        call()
        after = self._used()
        if before is not None and after is not None:
            self.seconds += after - before
            self.requests += requests

    def per_request_ms(self) -> float | None:
        return 1000 * self.seconds / self.requests if self.requests else None


def _concurrently(clients: list[httpx.Client], work: Callable[[httpx.Client, int], None]) -> None:
    """Run ``work(client, index)`` on one thread per client, all released at once."""
    barrier = threading.Barrier(len(clients))
    errors: list[BaseException] = []

    def body(index: int) -> None:
        barrier.wait()
        try:
            work(clients[index], index)
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    if errors:
        raise errors[0]


def _create(client: httpx.Client, workflow: str) -> str:
    response = client.post("/runs", json={"workflowId": workflow})
    if response.status_code != 201:
        raise SystemExit(f"POST /runs answered {response.status_code}: {response.text}")
    return str(response.json()["runId"])


def resolve_round(base: str, clients: list[httpx.Client], timeout: float, cpu: ServerCpu) -> list[float]:
    """Resolve one suspended run per client, concurrently; returns the latencies (s)."""
    with httpx.Client(base_url=base, headers=AUTH, timeout=60) as setup:
        ids = [_create(setup, "gate_then_sleep") for _ in clients]
        wait_for(all_in(setup, ids, WAITING), timeout, "the runs to wait at the gate")
    latencies = [0.0] * len(clients)

    def resolve(client: httpx.Client, index: int) -> None:
        started = time.perf_counter()
        response = client.post(
            f"/runs/{project_id(ids[index])}/interrupts/approve", json={"resumeValue": {"action": "accept"}}
        )
        latencies[index] = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"resolve answered {response.status_code}: {response.text}")

    cpu.measure(len(clients), lambda: _concurrently(clients, resolve))
    return latencies


def create_round(clients: list[httpx.Client], creates: int, cpu: ServerCpu) -> list[float]:
    """Each client creates ``creates`` runs back to back; returns the latencies (s)."""
    latencies: list[list[float]] = [[] for _ in clients]

    def create(client: httpx.Client, index: int) -> None:
        for _ in range(creates):
            started = time.perf_counter()
            _create(client, "sleep_first")
            latencies[index].append(time.perf_counter() - started)

    cpu.measure(len(clients) * creates, lambda: _concurrently(clients, create))
    return [x for per_client in latencies for x in per_client]


def measure(url: str, args: argparse.Namespace) -> dict[str, tuple[list[float], float | None]]:
    """Latencies (s) and server CPU per request (ms) of each request kind."""
    env = {"WOP_BENCH_SLEEP": str(args.sleep), "WOP_SWEEP_INTERVAL_SECONDS": "0"}
    # With --worker-processes the API process drives nothing: its workers run beside it.
    in_process = 0 if args.worker_processes else args.workers
    with (
        server(url, workers=in_process, env=env) as (base, process),
        worker_processes(url, args.worker_processes, concurrency=args.workers, env=env),
    ):
        clients = [httpx.Client(base_url=base, headers=AUTH, timeout=60) for _ in range(args.clients)]
        # The clients' own full garbage collections (a few hundred ms here, every thread
        # stopped) would add to the latencies they measure; the server freezes its start-up
        # heap the same way.
        gc.collect()
        gc.freeze()
        resolve_cpu, create_cpu = ServerCpu(process.pid), ServerCpu(process.pid)
        try:
            resolves: list[float] = []
            creates: list[float] = []
            for _ in range(args.rounds):
                # Runs of the previous round still sleep in the workers: the server is busy.
                resolves += resolve_round(base, clients, args.timeout, resolve_cpu)
                creates += create_round(clients, args.creates, create_cpu)
            return {
                "resolve": (resolves, resolve_cpu.per_request_ms()),
                "POST /runs": (creates, create_cpu.per_request_ms()),
            }
        finally:
            for client in clients:
                client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, latencies pooled (default 3)")
    parser.add_argument("--creates", type=int, default=2, help="POST /runs per client per round")
    parser.add_argument("--sleep", type=float, default=2.0, help="seconds the slow node sleeps (default 2)")
    parser.add_argument("--workers", type=int, default=4, help="serve --workers (default 4)")
    parser.add_argument(
        "--worker-processes",
        type=int,
        default=0,
        help="serve --workers 0 and run this many `worker` processes (--concurrency WORKERS) instead",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="bound on each wait for runs")
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV))
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default=None, help="only this one")
    args = parser.parse_args(argv)
    widths = [22, 8, 9, 9, 9, 8, 12]
    results: list[list[Any]] = []
    for backend in backends(args.postgres, args.backend):
        with database(backend, args.postgres) as url:
            for name, (values, cpu_ms) in measure(url, args).items():
                ms = [1000 * v for v in values]
                p99 = percentile(ms, 0.99)
                verdict = "meets" if p99 <= TARGET_MS else "ABOVE"
                cpu_cell = "n/a" if cpu_ms is None else cpu_ms
                results.append([f"{backend} {name}", len(ms), p50(ms), p99, max(ms), verdict, cpu_cell])
    where = (
        f"serve --workers 0 + {args.worker_processes} worker processes of {args.workers}"
        if args.worker_processes
        else f"serve --workers {args.workers}"
    )
    print(
        f"HTTP latency with busy workers: {args.clients} concurrent clients, {where}, "
        f"slow node {args.sleep:g} s, target p99 <= {TARGET_MS:.0f} ms"
    )
    print(row(["backend / request", "samples", "p50 ms", "p99 ms", "max ms", "target", "cpu ms/req"], widths))
    for cells in results:
        print(row(cells, widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
