"""Open SSE streams against request latency on one real ``wop-langgraph serve`` process.

For each backend (SQLite; PostgreSQL with ``--postgres`` or ``$WOP_TEST_POSTGRES_URL``): one
server (``--workers 1``, the per-key stream limit raised with ``WOP_MAX_STREAMS_PER_KEY``),
``--runs`` runs suspended at an approval gate. ``--requests`` sequential discovery
(``GET /.well-known/openwop``) and snapshot (``GET /runs/{runId}``) requests are timed with
no stream open; then ``--streams`` SSE streams (``GET /runs/{runId}/events``, spread over the
runs, each held open on one event loop after its first frame arrived) are opened and the same
requests timed again, after ``--settle`` seconds. Interleaved: the two phases alternate
``--rounds`` times (streams closed in between) and p50s are pooled per phase.

Target: with the streams open, discovery and snapshot p50 within 2x of their p50 without.

    python benchmarks/sse_streams.py --streams 200
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from _harness import AUTH, POSTGRES_ENV, WAITING, all_in, backends, database, p50, row, server, wait_for
from wop_langgraph.protocol.ids import project_id

TARGET_RATIO = 2.0


def timed(client: httpx.Client, paths: dict[str, str], requests: int) -> dict[str, list[float]]:
    """Sequential GETs of each path; returns latencies (s) per name, the paths alternating."""
    out: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(requests):
        for name, path in paths.items():
            started = time.perf_counter()
            response = client.get(path)
            out[name].append(time.perf_counter() - started)
            if response.status_code != 200:
                raise SystemExit(f"GET {path} answered {response.status_code}")
    return out


@contextmanager
def open_streams(base: str, run_ids: list[str], count: int, timeout: float) -> Iterator[None]:
    """``count`` SSE streams held open on a background event loop until the context exits."""
    loop = asyncio.new_event_loop()
    opened = 0
    failures: list[str] = []
    stop = asyncio.Event()

    async def hold(client: httpx.AsyncClient, run_id: str) -> None:
        nonlocal opened
        async with client.stream("GET", f"/runs/{project_id(run_id)}/events") as response:
            if response.status_code != 200:
                failures.append(f"{response.status_code} {(await response.aread())[:200]!r}")
                return
            async for _chunk in response.aiter_bytes():
                break  # the first frame: the stream is established
            opened += 1
            await stop.wait()

    async def main() -> None:
        limits = httpx.Limits(max_connections=count + 10, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=base, headers=AUTH, timeout=None, limits=limits) as client:
            tasks = [asyncio.create_task(hold(client, run_ids[i % len(run_ids)])) for i in range(count)]
            await stop.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    try:
        wait_for(lambda: opened + len(failures) >= count, timeout, f"{count} streams to open", step=0.1)
        if failures:
            raise SystemExit(f"{len(failures)} streams refused, e.g. {failures[0]}")
        yield
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(60)
        loop.close()


def measure(url: str, args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    env = {
        "WOP_MAX_STREAMS_PER_KEY": str(args.streams + 10),
        "WOP_MAX_STREAMS_TOTAL": str(args.streams + 100),
        "WOP_BENCH_SLEEP": "0",
        "WOP_SWEEP_INTERVAL_SECONDS": "0",
    }
    with (
        server(url, workers=1, env=env) as (base, _process),
        httpx.Client(base_url=base, headers=AUTH) as client,
    ):
        ids = []
        for _ in range(args.runs):
            response = client.post("/runs", json={"workflowId": "gate_then_sleep"})
            response.raise_for_status()
            ids.append(str(response.json()["runId"]))
        wait_for(all_in(client, ids, WAITING), args.timeout, "the runs to suspend")
        paths = {"discovery": "/.well-known/openwop", "snapshot": f"/runs/{project_id(ids[0])}"}
        timed(client, paths, 10)  # warm up
        pooled: dict[str, dict[str, list[float]]] = {"no stream": {}, "streams": {}}
        for _ in range(args.rounds):
            for name, values in timed(client, paths, args.requests).items():
                pooled["no stream"].setdefault(name, []).extend(values)
            with open_streams(base, ids, args.streams, args.timeout):
                time.sleep(args.settle)
                for name, values in timed(client, paths, args.requests).items():
                    pooled["streams"].setdefault(name, []).extend(values)
        return pooled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=200, help="open SSE streams (default 200)")
    parser.add_argument("--runs", type=int, default=10, help="suspended runs the streams follow")
    parser.add_argument("--requests", type=int, default=100, help="timed requests per kind per phase")
    parser.add_argument("--rounds", type=int, default=2, help="no-stream / streams phase pairs")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds after the streams opened")
    parser.add_argument("--timeout", type=float, default=120.0, help="bound on each wait")
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV))
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default=None, help="only this one")
    args = parser.parse_args(argv)
    lines: list[list[Any]] = []
    for backend in backends(args.postgres, args.backend):
        with database(backend, args.postgres) as url:
            pooled = measure(url, args)
        for name in ("discovery", "snapshot"):
            quiet = 1000 * p50(pooled["no stream"][name])
            busy = 1000 * p50(pooled["streams"][name])
            verdict = "meets" if busy / quiet <= TARGET_RATIO else "ABOVE"
            lines.append([f"{backend} {name}", quiet, busy, f"{busy / quiet:.2f}x", verdict])
    print(
        f"request p50 with {args.streams} open SSE streams vs none ({args.requests} requests x "
        f"{args.rounds} rounds per phase); target <= {TARGET_RATIO:g}x"
    )
    widths = [20, 13, 15, 7, 7]
    print(row(["backend request", "p50 ms none", "p50 ms streams", "ratio", "target"], widths))
    for cells in lines:
        print(row(cells, widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
