"""LangGraph's reference dev server (``langgraph dev`` from ``langgraph-cli[inmem]``) and
``wop-langgraph serve --config``, each over the same ``langgraph.json``, for side-by-side runs.

Both are real subprocesses on free loopback ports, stopped (SIGTERM, then SIGKILL after a bound)
when their context exits. ``langgraph dev`` runs in a temporary folder (it keeps its in-memory
state under ``.langgraph_api`` there) with tracing off, no reload and no browser.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from _harness import SIGNING_KEYS, _stop, free_port

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
#: The graphs both servers serve in the comparison (tests' scripted, offline graphs).
COMPARE_CONFIG = HERE / "langgraph_compare" / "langgraph.json"
#: A key with every scope the compared flows use (``x-api-key``; ``langgraph dev`` ignores it).
COMPARE_KEY = "compare-key"
_SCOPES = "runs:create+runs:read+runs:cancel+approvals:respond"


def _pythonpath(*extra: Path) -> str:
    """The servers' import path: ``extra``, this checkout, the caller's; never this folder, whose
    ``langgraph_api.py`` would shadow LangGraph's ``langgraph_api`` package."""
    inherited = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    paths = [str(p) for p in (*extra, REPO / "src", REPO)] + inherited
    return os.pathsep.join(p for p in paths if p and Path(p).resolve() != HERE)


def _wait_ready(process: subprocess.Popen[bytes], url: str, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not answer within {timeout:.0f} s")
        time.sleep(0.2)


def _absolute_copy(config: Path, folder: Path) -> Path:
    """``config`` copied into ``folder`` with its relative paths made absolute: ``langgraph dev``
    reads them from its working directory (here a temporary one), not from the file's folder."""
    root = config.resolve().parent
    document = json.loads(config.read_text(encoding="utf-8"))

    def absolute(spec: str) -> str:
        return str((root / spec).resolve()) if spec.startswith(".") else spec

    document["dependencies"] = [absolute(d) for d in document.get("dependencies", [])]
    document["graphs"] = {name: absolute(spec) for name, spec in document["graphs"].items()}
    copy = folder / "langgraph.json"
    copy.write_text(json.dumps(document), encoding="utf-8")
    return copy


@contextmanager
def langgraph_dev(config: Path, *, jobs: int | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``langgraph dev --no-browser`` serving ``config``'s graphs; yields its API base URL and process.

    ``jobs``: ``--n-jobs-per-worker`` (how many runs it executes at once; the CLI's default
    when ``None``).
    """
    cli = Path(sys.executable).with_name("langgraph")
    if not cli.exists():
        raise SystemExit("langgraph dev needs langgraph-cli[inmem]: pip install 'langgraph-cli[inmem]'")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="langgraph-dev-") as folder:
        cmd = [str(cli), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)]
        cmd += ["--config", str(_absolute_copy(config, Path(folder)))]
        if jobs is not None:
            cmd += ["--n-jobs-per-worker", str(jobs)]
        env = {
            **os.environ,
            "PYTHONPATH": _pythonpath(config.resolve().parent),
            "LANGSMITH_TRACING": "false",
            "LANGCHAIN_TRACING_V2": "false",
            "LANGGRAPH_NO_ANALYTICS": "1",
        }
        with open(Path(folder) / "dev.log", "wb") as log:
            process = subprocess.Popen(cmd, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
            base = f"http://127.0.0.1:{port}"
            try:
                _wait_ready(process, f"{base}/ok", 120, "langgraph dev")
                yield base, process
            finally:
                _stop(process)


@contextmanager
def wop_serve(config: Path, db_url: str, *, workers: int = 4) -> Iterator[str]:
    """``wop-langgraph serve --config`` over ``db_url``; yields the LangGraph API's base URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "wop_langgraph.cli", "serve", "--config", str(config.resolve())]
    cmd += ["--db", db_url, "--port", str(port), "--log-level", "warning", "--workers", str(workers)]
    env = {
        **os.environ,
        "PYTHONPATH": _pythonpath(),
        "WOP_SIGNING_KEYS": SIGNING_KEYS,
        "WOP_API_KEYS": f"{COMPARE_KEY}=acme:alice:{_SCOPES}",
    }
    process = subprocess.Popen(cmd, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, f"{base}/.well-known/openwop", 120, "wop-langgraph serve")
        yield f"{base}/langgraph"
    finally:
        _stop(process)
