"""HTTP latency while workers are busy: a real ``wop-langgraph serve`` process (uvicorn).

For each backend (SQLite; PostgreSQL with ``--postgres`` or ``$WOP_TEST_POSTGRES_URL``), one
server with ``--workers N`` in-process worker threads (or, with ``--worker-processes K``, an
API-only server and K ``worker`` processes of N threads each):

(a) resolve: ``--clients`` runs of ``gate_then_sleep`` (an approval gate, then a node that sleeps
    ``--sleep`` seconds) are created and waited for until all wait at the gate; then as many
    concurrent clients (one thread each, started together, a connection per request) each
    resolve one distinct run. The resolve must answer at commit, not after the sleeping node.
(b) create: as many concurrent clients each ``POST /runs`` ``--creates`` runs of ``sleep_first``
    (whose first node sleeps ``--sleep`` seconds), back to back.

Repeated ``--rounds`` times, after ``--warmup-rounds`` unmeasured ones (default 1: the first
requests of a new server compile its statements and fill its caches; measured, that start-up
cost showed as the slowest requests of the first round); latencies of the measured rounds are
pooled. Targets: resolve p99 <= 100 ms, ``POST /runs`` p99 <= 100 ms. ``server cpu`` is the CPU
time in ms (user + system, read from ``/proc``, so Linux only) the server process used during
the bursts, divided by their requests: with in-process workers it includes what the resolved or
created runs cost the workers meanwhile. The server is one GIL-bound process, so a burst's p99
is about its total CPU; this figure is less noisy than the latencies on a shared machine.
``user/sys`` splits it into user and system time (the kernel's: socket calls, futexes).
``client cpu`` is what the clients (this process) used per request: see :class:`LightClient` for
why they use ``http.client`` by default (``--client httpx`` measures with ``httpx`` instead).

    python benchmarks/http_engine.py --clients 32 --rounds 3
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

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
        self.user = 0.0
        self.system = 0.0
        self.client_seconds = 0.0
        self.requests = 0

    def _used(self) -> tuple[float, float] | None:
        """The process's (user, system) CPU seconds so far."""
        try:
            with open(self.path) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        # utime and stime: fields 14 and 15 of proc(5), the 12th and 13th after the command name.
        tick = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / tick, int(fields[12]) / tick

    def measure(self, requests: int, call: Callable[[], None]) -> None:
        """Run ``call``, which sends ``requests`` requests, and count the CPU the server used
        (and this process, the clients)."""
        before, client_before = self._used(), time.process_time()
        call()
        after, client_after = self._used(), time.process_time()
        if before is not None and after is not None:
            self.user += after[0] - before[0]
            self.system += after[1] - before[1]
            self.client_seconds += client_after - client_before
            self.requests += requests

    def per_request_ms(self) -> float | None:
        return 1000 * (self.user + self.system) / self.requests if self.requests else None

    def split_ms(self) -> str:
        """User and system CPU ms per request, as ``user/system``."""
        if not self.requests:
            return "n/a"
        return f"{1000 * self.user / self.requests:.1f}/{1000 * self.system / self.requests:.1f}"

    def client_per_request_ms(self) -> float | None:
        return 1000 * self.client_seconds / self.requests if self.requests else None


class LightClient:
    """A measured client: one request per connection, with the standard library's ``http.client``.

    The clients are threads of this process, on the machine (and cores) the server uses. An
    ``httpx`` request costs ~1.2 ms of CPU here, under this process's interpreter lock: 32
    clients released at once queue for it, up to ~40 ms added to the last one's latency that a
    client on a machine of its own never sees. ``http.client`` costs about half of that. Each
    request opens its own connection inside the measured time, as a reviewer's click after a
    while does (the server closes a connection idle for 5 s).
    """

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {**headers, "Content-Type": "application/json"}

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        """POST ``body`` as JSON; the status and the body of the answer."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            connection.request("POST", path, body=json.dumps(body), headers=self.headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def close(self) -> None:
        """Nothing is kept open."""


class HttpxClient:
    """A measured client on an ``httpx.Client`` (its connection kept open between requests)."""

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        self.client = httpx.Client(base_url=base, headers=headers, timeout=60)

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        """POST ``body`` as JSON; the status and the body of the answer."""
        response = self.client.post(path, json=body)
        return response.status_code, response.content

    def close(self) -> None:
        self.client.close()


Client = LightClient | HttpxClient


def _concurrently(clients: list[Client], work: Callable[[Client, int], None]) -> None:
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


def _create(client: Client, workflow: str) -> str:
    status, body = client.post("/runs", {"workflowId": workflow})
    if status != 201:
        raise SystemExit(f"POST /runs answered {status}: {body.decode(errors='replace')}")
    return str(json.loads(body)["runId"])


def resolve_round(base: str, clients: list[Client], timeout: float, cpu: ServerCpu) -> list[float]:
    """Resolve one suspended run per client, concurrently; returns the latencies (s)."""
    setup = HttpxClient(base, AUTH)
    try:
        ids = [_create(setup, "gate_then_sleep") for _ in clients]
        wait_for(all_in(setup.client, ids, WAITING), timeout, "the runs to wait at the gate")
    finally:
        setup.close()
    latencies = [0.0] * len(clients)

    def resolve(client: Client, index: int) -> None:
        path = f"/runs/{project_id(ids[index])}/interrupts/approve"
        started = time.perf_counter()
        status, answer = client.post(path, {"resumeValue": {"action": "accept"}})
        latencies[index] = time.perf_counter() - started
        if status != 200:
            raise SystemExit(f"resolve answered {status}: {answer.decode(errors='replace')}")

    cpu.measure(len(clients), lambda: _concurrently(clients, resolve))
    return latencies


def create_round(clients: list[Client], creates: int, cpu: ServerCpu) -> list[float]:
    """Each client creates ``creates`` runs back to back; returns the latencies (s)."""
    latencies: list[list[float]] = [[] for _ in clients]

    def create(client: Client, index: int) -> None:
        for _ in range(creates):
            started = time.perf_counter()
            _create(client, "sleep_first")
            latencies[index].append(time.perf_counter() - started)

    cpu.measure(len(clients) * creates, lambda: _concurrently(clients, create))
    return [x for per_client in latencies for x in per_client]


def measure(url: str, args: argparse.Namespace) -> dict[str, tuple[list[float], ServerCpu]]:
    """Latencies (s) and CPU use of each request kind."""
    env = {"WOP_BENCH_SLEEP": str(args.sleep), "WOP_SWEEP_INTERVAL_SECONDS": "0"}
    # With --worker-processes the API process drives nothing: its workers run beside it.
    in_process = 0 if args.worker_processes else args.workers
    with (
        server(url, workers=in_process, env=env) as (base, process),
        worker_processes(url, args.worker_processes, concurrency=args.workers, env=env),
    ):
        kind = HttpxClient if args.client == "httpx" else LightClient
        clients: list[Client] = [kind(base, AUTH) for _ in range(args.clients)]
        # The clients' own full garbage collections (a few hundred ms here, every thread
        # stopped) would add to the latencies they measure; the server freezes its start-up
        # heap the same way.
        gc.collect()
        gc.freeze()
        resolve_cpu, create_cpu = ServerCpu(process.pid), ServerCpu(process.pid)
        try:
            unmeasured = ServerCpu(process.pid)
            for _ in range(args.warmup_rounds):
                resolve_round(base, clients, args.timeout, unmeasured)
                create_round(clients, args.creates, unmeasured)
            resolves: list[float] = []
            creates: list[float] = []
            for _ in range(args.rounds):
                # Runs of the previous round still sleep in the workers: the server is busy.
                resolves += resolve_round(base, clients, args.timeout, resolve_cpu)
                creates += create_round(clients, args.creates, create_cpu)
            return {
                "resolve": (resolves, resolve_cpu),
                "POST /runs": (creates, create_cpu),
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
    parser.add_argument(
        "--warmup-rounds", type=int, default=1, help="unmeasured rounds first, on the new server (default 1)"
    )
    parser.add_argument("--creates", type=int, default=2, help="POST /runs per client per round")
    parser.add_argument("--sleep", type=float, default=2.0, help="seconds the slow node sleeps (default 2)")
    parser.add_argument("--workers", type=int, default=4, help="serve --workers (default 4)")
    parser.add_argument(
        "--worker-processes",
        type=int,
        default=0,
        help="serve --workers 0 and run this many `worker` processes (--concurrency WORKERS) instead",
    )
    parser.add_argument(
        "--client",
        choices=["light", "httpx"],
        default="light",
        help="the measured clients: http.client, a connection per request (default), or httpx.Client",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="bound on each wait for runs")
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV))
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default=None, help="only this one")
    args = parser.parse_args(argv)
    widths = [22, 8, 9, 9, 9, 8, 12, 10, 12]
    results: list[list[Any]] = []
    for backend in backends(args.postgres, args.backend):
        with database(backend, args.postgres) as url:
            for name, (values, cpu) in measure(url, args).items():
                ms = [1000 * v for v in values]
                p99 = percentile(ms, 0.99)
                verdict = "meets" if p99 <= TARGET_MS else "ABOVE"
                server_ms, client_ms = cpu.per_request_ms(), cpu.client_per_request_ms()
                results.append(
                    [
                        f"{backend} {name}",
                        len(ms),
                        p50(ms),
                        p99,
                        max(ms),
                        verdict,
                        "n/a" if server_ms is None else server_ms,
                        cpu.split_ms(),
                        "n/a" if client_ms is None else client_ms,
                    ]
                )
    where = (
        f"serve --workers 0 + {args.worker_processes} worker processes of {args.workers}"
        if args.worker_processes
        else f"serve --workers {args.workers}"
    )
    print(
        f"HTTP latency with busy workers: {args.clients} concurrent clients, {where}, "
        f"slow node {args.sleep:g} s, {args.rounds} round(s) after {args.warmup_rounds} unmeasured, "
        f"target p99 <= {TARGET_MS:.0f} ms"
    )
    header = ["backend / request", "samples", "p50 ms", "p99 ms", "max ms", "target"]
    print(row([*header, "server cpu", "user/sys", "client cpu"], widths))
    for cells in results:
        print(row(cells, widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
