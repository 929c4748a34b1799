"""HTTP resolve throughput and latency against one uvicorn worker, versus the in-process resolve.

For each backend (SQLite; PostgreSQL when ``--postgres`` or ``WOP_TEST_POSTGRES_URL`` is set) and
each client count (1, 8, 32): create ``--runs`` suspended runs, then resolve them all over HTTP
from that many concurrent clients. Reports resolves/s, p50 and p99 latency, and the ratio of the
HTTP rate to the in-process ``WopHost.resolve`` rate on the same backend.

    python benchmarks/http_resolve.py --runs 200
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

import httpx
from langgraph.graph import END, START, StateGraph

from _postgres import scratch_database
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.nodes import request_approval
from wop_langgraph.protocol.ids import project_id

SIGNING_KEYS = "bench=bench-secret-0123456789abcdef"
API_KEY = "bench-key"
ALICE = Principal("acme", "alice", frozenset({"runs:create", "runs:read", "approvals:respond"}))


class State(TypedDict, total=False):
    decision: str


def _review(state: State) -> State:
    return {"decision": request_approval("doc", "text", "Ship it?").action}


def _graph() -> Any:
    g = StateGraph(State)
    g.add_node("review", _review)
    g.add_edge(START, "review")
    g.add_edge("review", END)
    return g.compile()


WORKFLOWS = {"approve": _graph()}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _server(db_url: str) -> Iterator[str]:
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).parent) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "WOP_SIGNING_KEYS": SIGNING_KEYS,
        "WOP_API_KEYS": f"{API_KEY}=acme:alice:runs:create+runs:read+approvals:respond",
        "WOP_SWEEP_INTERVAL_SECONDS": "0",
    }
    cmd = [sys.executable, "-m", "wop_langgraph.server.cli", "http_resolve:WORKFLOWS", "--db", db_url]
    process = subprocess.Popen([*cmd, "--port", str(port), "--log-level", "warning"], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/.well-known/openwop", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(30)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def http_round(base: str, runs: int, clients: int) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with httpx.Client(base_url=base, headers=headers, timeout=120) as setup:
        ids = [setup.post("/runs", json={"workflowId": "approve"}).json()["runId"] for _ in range(runs)]
    latencies: list[float] = []
    failures: list[int] = []
    pool_clients = [httpx.Client(base_url=base, headers=headers, timeout=120) for _ in range(clients)]

    def resolve(index: int) -> None:
        client = pool_clients[index % clients]
        started = time.perf_counter()
        response = client.post(
            f"/runs/{project_id(ids[index])}/interrupts/review", json={"resumeValue": {"action": "accept"}}
        )
        latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            failures.append(response.status_code)

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(resolve, range(runs)))
    wall = time.perf_counter() - started
    for client in pool_clients:
        client.close()
    return {
        "rate": runs / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * _percentile(latencies, 0.99),
        "failed": float(len(failures)),
    }


def in_process_rate(db_url: str, runs: int) -> float:
    host = WopHost.from_url(db_url)
    host.register("approve", WORKFLOWS["approve"])
    ids = [host.create_run("approve", None, owner=ALICE)["runId"] for _ in range(runs)]
    started = time.perf_counter()
    for run_id in ids:
        host.resolve(run_id, "review", {"action": "accept"}, ALICE)
    rate = runs / (time.perf_counter() - started)
    host.saver.close()
    return rate


@contextmanager
def _postgres_database(server_url: str) -> Iterator[str]:
    with scratch_database(server_url) as url:
        yield url.render_as_string(hide_password=False)


@contextmanager
def _database(backend: str, postgres: str | None) -> Iterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/bench.db"
    else:
        assert postgres is not None
        with _postgres_database(postgres) as url:
            yield url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200, help="resolves per measurement (default 200)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--postgres", default=os.environ.get("WOP_TEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    backends = ["sqlite"] + (["postgres"] if args.postgres else [])
    print(
        f"{'backend':<9} {'clients':>7} {'resolves/s':>11} {'p50 ms':>8} {'p99 ms':>8} {'vs in-process':>14}"
    )
    for backend in backends:
        with _database(backend, args.postgres) as url:
            baseline = in_process_rate(url, args.runs)
        print(f"{backend:<9} {'in-proc':>7} {baseline:>11.1f} {'':>8} {'':>8} {1.0:>14.2f}")
        for clients in args.clients:
            with _database(backend, args.postgres) as url, _server(url) as base:
                result = http_round(base, args.runs, clients)
            ratio = result["rate"] / baseline
            print(
                f"{backend:<9} {clients:>7} {result['rate']:>11.1f} {result['p50_ms']:>8.1f} "
                f"{result['p99_ms']:>8.1f} {ratio:>14.2f} {int(result['failed']):>6}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
