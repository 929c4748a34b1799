"""The real CLI, in a child process: each configuration error is one line naming the fix, exit 2.

``serve`` and ``worker`` import ``MODULE:ATTR`` from the working directory (as uvicorn does), so
the graphs live in a module written to a temporary folder that is not on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.cli._support import BLOCKER, REPO, _console_script, _run
from tests.server.conftest import API_KEYS, SIGNING_KEYS
from tests.server.process import free_port

pytestmark = pytest.mark.slow

APP = """
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    n: int


def step(state: State) -> State:
    return {"n": state.get("n", 0) + 1}


builder = StateGraph(State)
builder.add_node("step", step)
builder.add_edge(START, "step")
builder.add_edge("step", END)
workflows = {"refund": builder.compile()}
uncompiled = builder
uncompiled_in_dict = {"refund": builder}
"""
ENV = {"WOP_SIGNING_KEYS": SIGNING_KEYS}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The user's own folder, holding ``refund_app.py`` (not on ``PYTHONPATH``)."""
    (tmp_path / "refund_app.py").write_text(APP)
    (tmp_path / "agent_app.py").write_text("import langchain.agents\nworkflows = {}\n")
    (tmp_path / "typo_app.py").write_text("import numpyy\nworkflows = {}\n")
    return tmp_path


def _one_line(proc: subprocess.CompletedProcess[str], *expected: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def _closed_port() -> int:
    return free_port()  # bound and released: nothing listens there


BAD_DATABASES = [
    ("sqlit:///x.db", ["scheme 'sqlit' is not supported", "sqlite:///", "postgresql://"]),
    ("mysql://user@localhost/db", ["scheme 'mysql' is not supported", "sqlite:///"]),
    ("not a url", ["is not a database URL", "sqlite:///"]),
    ("sqlite:///missing/folder/runs.db", ["folder", "does not exist", "mkdir -p"]),
]


@pytest.mark.parametrize("command", ["serve", "worker"])
@pytest.mark.parametrize(("url", "expected"), BAD_DATABASES, ids=[u for u, _ in BAD_DATABASES])
def test_a_bad_database_url_is_one_line(folder: Path, command: str, url: str, expected: list[str]) -> None:
    proc = _run([*_console_script(), command, "refund_app:workflows", "--db", url], cwd=folder, env=ENV)
    _one_line(proc, f"wop-langgraph {command}:", *expected)
    assert not (folder / "missing").exists()  # nothing was created on the way


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_an_unreachable_postgresql_is_one_line_without_the_password(folder: Path, command: str) -> None:
    url = f"postgresql://wop:s3cret-pw@127.0.0.1:{_closed_port()}/wop"
    proc = _run([*_console_script(), command, "refund_app:workflows", "--db", url], cwd=folder, env=ENV)
    line = _one_line(proc, "cannot open the database", "postgresql://wop:***@127.0.0.1", "check that")
    assert "s3cret-pw" not in proc.stderr + proc.stdout, line


@pytest.mark.parametrize("command", ["serve", "worker"])
@pytest.mark.parametrize("attr", ["uncompiled", "uncompiled_in_dict"])
def test_an_uncompiled_state_graph_says_call_compile(folder: Path, command: str, attr: str) -> None:
    proc = _run([*_console_script(), command, f"refund_app:{attr}"], cwd=folder, env=ENV)
    _one_line(proc, "StateGraph that was not compiled", "call .compile()")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("no_such_app:workflows", ["no module named 'no_such_app'", "run the command from the folder"]),
        ("refund_app:nothing", ["has no attribute 'nothing'", "MODULE:ATTR"]),
        ("refund_app", ["expected MODULE:ATTR"]),
        ("typo_app:workflows", ["imports 'numpyy', which is not installed", "pip install numpyy"]),
    ],
)
def test_a_target_that_does_not_import_is_one_line(folder: Path, target: str, expected: list[str]) -> None:
    proc = _run([*_console_script(), "serve", target], cwd=folder, env=ENV)
    _one_line(proc, *expected)


def test_a_graph_module_needing_langchain_names_the_adapters_extra(folder: Path) -> None:
    proc = _run([*_console_script(), "worker", "agent_app:workflows"], cwd=folder, env=ENV, block="langchain")
    _one_line(proc, "'adapters' extra", 'pip install "wop-langgraph[adapters]"')


def test_a_bad_setting_is_one_line(folder: Path) -> None:
    proc = _run(
        [*_console_script(), "serve", "refund_app:workflows", "--db", "sqlite:///runs.db"],
        cwd=folder,
        env={**ENV, "WOP_WORKERS": "many"},
    )
    _one_line(proc, "WOP_WORKERS")


def test_serve_imports_from_the_working_directory_and_prints_its_banner(folder: Path) -> None:
    """``serve refund_app:workflows`` from the user's folder serves the graph and says what it serves."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WOP_")}
    env |= {"PYTHONPATH": os.pathsep.join([str(BLOCKER), str(REPO / "src")]), "WOP_API_KEYS": API_KEYS}
    env |= ENV
    argv = [*_console_script(), "serve", "refund_app:workflows", "--db", "sqlite:///runs.db"]
    argv += ["--port", str(port), "--workers", "2", "--log-level", "warning"]
    with (folder / "stderr.txt").open("w+") as log:
        process = subprocess.Popen(argv, cwd=folder, env=env, stderr=log, stdout=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, (folder / "stderr.txt").read_text()
                try:
                    if httpx.get(f"{base}/.well-known/openwop", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
            response = httpx.post(
                f"{base}/runs",
                json={"workflowId": "refund", "inputs": {"n": 1}},
                headers={"Authorization": "Bearer alice-key"},
            )
            assert response.status_code == 201, response.text
        finally:
            process.terminate()
            process.wait(30)
        banner = (folder / "stderr.txt").read_text()
    assert f"wop-langgraph serve: http://127.0.0.1:{port}" in banner
    assert f"http://127.0.0.1:{port}/docs" in banner
    assert "database:      sqlite:///runs.db" in banner
    assert "workflows:     refund" in banner
    assert "workers:       2 in this process" in banner
    assert "conversations: off; credentials: off; notifications: off" in banner
    assert (folder / "runs.db").exists()  # relative to the working directory
