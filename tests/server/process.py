"""Run the real server (``serve_main`` under uvicorn) in a subprocess on a free port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TypeVar

import httpx

from tests.server.conftest import API_KEYS, RESTING, SIGNING_KEYS
from wop_langgraph.protocol.ids import project_id

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served(
    db_url: str,
    *,
    target: str = "tests.server.graphs:WORKFLOWS",
    sweep: float = 0,
    extra_args: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    output: IO[bytes] | None = None,
) -> Iterator[str]:
    """A server process over ``db_url``; yields its base URL and stops it afterwards.

    ``extra_args`` are appended to the ``serve`` command line (e.g. ``["--conversations"]``),
    ``extra_env`` to its environment; ``output``, when given, receives its stdout and stderr.
    """
    with served_process(
        db_url, target=target, sweep=sweep, extra_args=extra_args, extra_env=extra_env, output=output
    ) as (base, _):
        yield base


@contextmanager
def served_process(
    db_url: str,
    *,
    target: str = "tests.server.graphs:WORKFLOWS",
    sweep: float = 0,
    extra_args: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    output: IO[bytes] | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Like :func:`served`, also yielding the process (a crash test may SIGKILL it).

    Links are built on the server's own address (``WOP_PUBLIC_URL``), as a deployment would
    configure its public origin.
    """
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "WOP_SIGNING_KEYS": SIGNING_KEYS,
        "WOP_API_KEYS": API_KEYS,
        "WOP_SWEEP_INTERVAL_SECONDS": str(sweep),
        "WOP_PUBLIC_URL": base,
        **(extra_env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "wop_langgraph.server.cli",
        target,
        "--db",
        db_url,
        "--port",
        str(port),
        "--log-level",
        "warning",
        *extra_args,
    ]
    process = subprocess.Popen(
        command, env=env, cwd=REPO, stdout=output, stderr=subprocess.STDOUT if output is not None else None
    )
    try:
        deadline = time.monotonic() + 120  # generous: a loaded machine imports slowly
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}")
            try:
                if httpx.get(f"{base}/.well-known/openwop", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start within 120 s")
            time.sleep(0.1)
        yield base, process
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def worker_process(
    db_url: str,
    *,
    target: str,
    concurrency: int = 2,
    extra_args: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    start_timeout: float = 120.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """A ``wop-langgraph worker`` process, yielded once its workers run; stopped afterwards.

    It is ready when it prints its start line (after recovery, with its workers started);
    ``start_timeout`` is generous because a loaded machine can take many seconds to import.
    A test may SIGKILL it; on exit a live one is killed.
    """
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **(extra_env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "wop_langgraph.cli",
        "worker",
        target,
        "--db",
        db_url,
        "--concurrency",
        str(concurrency),
        *extra_args,
    ]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, env=env, cwd=REPO, stderr=log)
        try:
            deadline = time.monotonic() + start_timeout
            while True:
                log.seek(0)
                if b"wop-langgraph worker:" in log.read():
                    break
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"the worker exited with {process.returncode}: {log.read()[-2000:]!r}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the worker did not start within {start_timeout} s")
                time.sleep(0.05)
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(30)


def poll_until(
    read: Callable[[], T], done: Callable[[T], bool], *, timeout: float = 30.0, what: str = ""
) -> T:
    """Call ``read`` until ``done`` holds for its answer, for at most ``timeout`` s; the answer.

    The server answers at commit, so a client follows a run by reading it until it is where it
    should be (as any client of a real server must).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"{what or 'condition'} not reached in {timeout} s: {value!r}"
        time.sleep(0.05)


def rested(client: httpx.Client, run_id: str, *, timeout: float = 30.0) -> dict[str, object]:
    """The run's snapshot (read with ``client``) once it waits on an interrupt or has ended."""

    def read() -> dict[str, object]:
        response = client.get(f"/runs/{project_id(run_id)}")
        assert response.status_code == 200, response.text
        return dict(response.json())

    return poll_until(read, lambda s: s["status"] in RESTING, timeout=timeout, what=f"run {run_id} at rest")
