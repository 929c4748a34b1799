"""Shared pieces of the run-engine benchmarks: databases, a real server, workers, percentiles.

Everything runs on loopback. Servers and workers are real ``wop-langgraph serve`` /
``wop-langgraph worker`` subprocesses over the graphs of :mod:`_graphs`; every one is stopped
(SIGTERM, then SIGKILL after a bound) when its context exits.
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from _postgres import scratch_database
from wop_langgraph.protocol.ids import project_id

POSTGRES_ENV = "WOP_TEST_POSTGRES_URL"
HERE = Path(__file__).resolve().parent
SIGNING_KEYS = "bench=bench-secret-0123456789abcdef"
API_KEY = "bench-key"
SCOPES = "runs:create+runs:read+approvals:respond"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
WAITING = ("waiting-approval",)
TERMINAL = ("completed", "failed", "cancelled")


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def p50(values: list[float]) -> float:
    """The median."""
    return statistics.median(values)


def paired_cycles(
    cycles: tuple[Callable[[], None], Callable[[], None]],
    count: int,
    warmup: int,
    before: tuple[Callable[[], None], Callable[[], None]] | None = None,
) -> tuple[list[list[float]], float]:
    """Run the two ``cycles`` alternately, one by one, ``count`` times each (the side that goes
    first alternating too) after ``warmup`` unmeasured runs of each: each side's times (ms), and
    the median of the paired ratios, the first side's time over the second's (above 1, the
    second is quicker). The VM's drift, which moves a cycle by tens of percent within minutes,
    falls on both sides alike. ``before``: each side's set-up, run untimed before each of its
    cycles (a switch between the two sides, say)."""
    ready = before or (_nothing, _nothing)
    for _ in range(warmup):
        for side in (0, 1):
            ready[side]()
            cycles[side]()
    times: list[list[float]] = [[], []]
    for n in range(count):
        for side in (0, 1) if n % 2 == 0 else (1, 0):
            ready[side]()
            started = time.perf_counter()
            cycles[side]()
            times[side].append(1000 * (time.perf_counter() - started))
    return times, statistics.median(a / b for a, b in zip(times[0], times[1], strict=True))


def _nothing() -> None:
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def database(backend: str, postgres: str | None) -> Iterator[str]:
    """A fresh database URL: a SQLite file in a temporary folder, or a scratch PostgreSQL database."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="wop-bench-") as folder:
            yield f"sqlite:///{folder}/bench.db"
    else:
        if not postgres:
            raise SystemExit(f"PostgreSQL needs --postgres or ${POSTGRES_ENV}")
        with scratch_database(postgres) as url:
            yield url.render_as_string(hide_password=False)


def backends(postgres: str | None, only: str | None = None) -> list[str]:
    """The backends to measure: SQLite, and PostgreSQL when a server URL is known."""
    chosen = ["sqlite"] + (["postgres"] if postgres else [])
    if not postgres:
        print(f"PostgreSQL skipped: pass --postgres or set {POSTGRES_ENV}", file=sys.stderr)
    return [b for b in chosen if only in (None, b)]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    paths = [str(HERE), os.environ.get("PYTHONPATH", "")]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        "WOP_SIGNING_KEYS": SIGNING_KEYS,
        "WOP_API_KEYS": f"{API_KEY}=acme:alice:{SCOPES}",
        **(extra or {}),
    }


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@contextmanager
def server(
    db_url: str,
    *,
    workers: int,
    env: dict[str, str] | None = None,
    target: str = "_graphs:WORKFLOWS",
    program: tuple[str, ...] = ("-m", "wop_langgraph.cli"),
    startup_seconds: float = 60,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``wop-langgraph serve`` on a free loopback port; yields its base URL and process.

    ``program``: what the interpreter runs with the ``serve`` arguments (the CLI; a wrapper
    such as ``_thread_cpu_serve.py``); ``startup_seconds``: how long it may take to answer.
    """
    port = free_port()
    cmd = [sys.executable, *program, "serve", target, "--db", db_url]
    cmd += ["--port", str(port), "--log-level", "warning", "--workers", str(workers)]
    process = subprocess.Popen(cmd, env=_env(env))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the server exited with {process.returncode}")
            try:
                if httpx.get(f"{base}/.well-known/openwop", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the server did not answer within {startup_seconds:g} s")
            time.sleep(0.1)
        yield base, process
    finally:
        _stop(process)


@contextmanager
def worker_processes(
    db_url: str,
    count: int,
    *,
    concurrency: int = 4,
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` ``wop-langgraph worker`` processes on ``db_url``, stopped on exit."""
    cmd = [sys.executable, "-m", "wop_langgraph.cli", "worker", "_graphs:WORKFLOWS", "--db", db_url]
    cmd += ["--concurrency", str(concurrency), *(args or [])]
    processes = [subprocess.Popen(cmd, env=_env(env)) for _ in range(count)]
    try:
        yield processes
    finally:
        for process in processes:
            _stop(process)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, step: float = 0.05) -> None:
    """Poll ``predicate`` until it holds; fail the benchmark after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(step)


def status(client: httpx.Client, run_id: str) -> str:
    """The run's current status (a snapshot read)."""
    response = client.get(f"/runs/{project_id(run_id)}")
    response.raise_for_status()
    return str(response.json()["status"])


def all_in(client: httpx.Client, run_ids: list[str], wanted: tuple[str, ...]) -> Callable[[], bool]:
    """A predicate for :func:`wait_for`: every run has one of the ``wanted`` statuses."""
    pending = list(run_ids)

    def check() -> bool:
        while pending:
            if status(client, pending[-1]) not in wanted:
                return False
            pending.pop()
        return True

    return check


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by process ``pid`` and every live descendant of it,
    from ``/proc`` (``None`` where there is no ``/proc``): a per-operation figure that, unlike
    wall-clock rates, holds on a loaded machine."""
    proc = Path("/proc")
    if not (proc / str(pid) / "stat").exists():
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        # Fields after the command (which may hold spaces): state ppid ... utime(14) stime(15).
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = int(fields[11]) + int(fields[12])
    tree = {pid}
    grew = True  # a child's id is not always above its parent's: grow the tree to a fixpoint
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grew = True
    return sum(used.get(p, 0) for p in tree) / ticks


def row(cells: list[Any], widths: list[int]) -> str:
    """One table line: the first cell left-aligned, the others right-aligned."""
    parts = []
    for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
        text = f"{cell:.1f}" if isinstance(cell, float) else str(cell)
        parts.append(text.ljust(width) if i == 0 else text.rjust(width))
    return " ".join(parts)
