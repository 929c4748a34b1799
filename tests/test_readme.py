"""Every path the README and the docs site document, run as written: the README's quickstart (a
graph of one's own served over HTTP), the Python examples, the chat example's two terminals, and
the notebook commands.

Code is taken from README.md and the pages under docs/ themselves (a block is found by its first
line, ``# quickstart.py``, or by a command it contains, and must be the only one so found), so an
edit to a page that breaks a path breaks a test. Commands run in
child processes with the interpreter's ``bin`` folder first on ``PATH``, as after
``source .venv/bin/activate``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
#: The README (the front page) and every page of the docs site.
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
README = (REPO / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)
#: The named Python examples (first line ``# <name>``); each has a test below that runs it.
PYTHON_EXAMPLES = {
    "my_graph.py",
    "quickstart.py",
    "async_review.py",
    "node_calls.py",
    "interrupt_kind.py",
    "fork.py",
    "functional.py",
    "approval_policy.py",
    "receipts.py",
    "notify_channel.py",
    "langgraph_sdk_client.py",  # tests/server/langgraph_api/test_readme_sdk.py
}


def _blocks(language: str, pages: list[Path] = PAGES) -> list[str]:
    return [
        body
        for page in pages
        for lang, body in BLOCK.findall(page.read_text(encoding="utf-8"))
        if lang == language
    ]


def python_example(name: str) -> str:
    """The Python block (README or docs) whose first line is ``# <name>``."""
    found = [body for body in _blocks("python") if body.startswith(f"# {name}\n")]
    assert len(found) == 1, f"the README and docs have {len(found)} Python blocks named {name}"
    return found[0]


def bash_block(containing: str, pages: list[Path] = PAGES) -> str:
    found = [body for body in _blocks("bash", pages) if containing in body]
    assert len(found) == 1, f"the pages have {len(found)} bash blocks with {containing!r}"
    return found[0]


def test_the_readme_is_a_front_page() -> None:
    """At most ~200 lines; the quickstart comes first, and every page it links to exists."""
    assert len(README.splitlines()) <= 200
    headings = [line for line in README.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Quickstart: your own graph, served over HTTP"
    assert "bash scripts/demo.sh" in README and "bash scripts/test.sh" in README
    links = re.findall(r"\]\((docs/[^)#]*)", README)
    assert links and all((REPO / link).exists() for link in links), links


def test_every_named_python_example_is_run() -> None:
    named = [body.split("\n", 1)[0].removeprefix("# ") for body in _blocks("python") if body.startswith("# ")]
    named = [name for name in named if name.endswith(".py")]
    assert sorted(named) == sorted(PYTHON_EXAMPLES), "a named example was added or removed: run it below"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WOP_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_example(code: str, cwd: Path, name: str = "example.py") -> list[str]:
    (cwd / name).write_text(code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, name], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _background(command: str, cwd: Path, env: dict[str, str], ready: str, log: Path) -> Iterator[None]:
    """Run a shell command until the block ends; wait (bounded) until ``ready`` answers 200.

    Its output goes to ``log`` (shown if it exits early).
    """
    with log.open("w") as sink:
        process = subprocess.Popen(
            ["bash", "-c", command], cwd=cwd, env=env, start_new_session=True, stdout=sink, stderr=sink
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise AssertionError(f"{command!r} exited with {process.returncode}: {log.read_text()}")
            try:
                if httpx.get(ready, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"{command!r} did not answer {ready} within 120 s"
            time.sleep(0.2)
        yield
    finally:
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()


def _signal_group(pid: int, signum: int) -> None:
    # It may have exited already (the caller reports an early exit).
    with suppress(ProcessLookupError):
        os.killpg(pid, signum)


# -- agent developers ---------------------------------------------------------------------------


def _statements(block: str) -> list[str]:
    """A bash block's commands: comment lines dropped, ``\\`` continuations joined."""
    joined = re.sub(r"\\\n\s*", "", block)
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _bash(script: str, cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{script}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.slow
def test_the_quickstart_serves_your_own_graph_over_http(tmp_path: Path) -> None:
    """The README's first screen, as a new user follows it: their own module in their own folder,
    ``wop-langgraph serve my_graph:workflows`` from there, then the curl terminal."""
    front = [REPO / "README.md"]
    first_screen = README.split("\n## The two commands")[0]
    assert "# my_graph.py" in first_screen and "serve my_graph:workflows" in first_screen
    (tmp_path / "my_graph.py").write_text(python_example("my_graph.py"), encoding="utf-8")
    terminal_1 = _statements(bash_block("wop-langgraph serve my_graph:workflows", front))
    terminal_2 = _statements(bash_block("localhost:8000/runs", front))
    assert all(s.startswith("export ") for s in terminal_1[:-1]) and "--port 8000" in terminal_1[-1]
    port = str(_free_port())
    terminal_1[-1] = "exec " + terminal_1[-1].replace("--port 8000", f"--port {port}")
    terminal_2 = [s.replace("localhost:8000", f"localhost:{port}") for s in terminal_2]
    headers, create, before, resolve, after = terminal_2
    assert create.startswith("RUN=$(curl") and "/interrupts/review" in resolve
    env = _env()
    base = f"http://127.0.0.1:{port}"
    ready = f"{base}/.well-known/openwop"
    with _background("\n".join(terminal_1), tmp_path, env, ready, tmp_path / "serve.log"):
        run = _bash(f'{headers}\n{create}\necho "$RUN"', tmp_path, env).strip()
        session = f"{headers}\nRUN={shlex.quote(run)}\n"
        auth = {"Authorization": "Bearer dev-key"}

        def status() -> str:
            return str(httpx.get(f"{base}/runs/{run}", headers=auth).json()["status"])

        # A person reads the first GET after the run reached its gate; wait as long as they would.
        _wait_for(lambda: status() == "waiting-approval")
        waiting = json.loads(_bash(session + before, tmp_path, env))
        assert (waiting["status"], waiting["currentNodeId"]) == ("waiting-approval", "review")
        resolved = json.loads(_bash(session + resolve, tmp_path, env))
        assert resolved["status"] in {"running", "queued", "completed"}, resolved
        _wait_for(lambda: status() == "completed")
        done = json.loads(_bash(session + after, tmp_path, env))
    assert done["status"] == "completed"
    assert done["extensions"]["wop-langgraph.result"]["outputs"] == {"draft": "hello", "decision": "accept"}
    assert (tmp_path / "runs.db").exists()


def _wait_for(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not reached within {seconds} s"
        time.sleep(0.1)


def test_quickstart(tmp_path: Path) -> None:
    out = run_example(python_example("quickstart.py"), tmp_path)
    assert out[:4] == [
        "waiting-approval review",
        "review approval",
        "completed",
        "{'draft': 'hello', 'decision': 'accept'}",
    ]
    types = [line.split()[1] for line in out[4:]]
    assert types[0] == "run.started" and types[-1] == "run.completed"
    assert {"interrupt.requested", "interrupt.resolved"} <= set(types)
    assert (tmp_path / "runs.db").exists()


def test_async_nodes(tmp_path: Path) -> None:
    out = run_example(python_example("async_review.py"), tmp_path)
    assert out == ["waiting-approval", "completed"]
    assert (tmp_path / "async-runs.db").exists()


def test_node_call_shapes(tmp_path: Path) -> None:
    out = run_example(python_example("node_calls.py"), tmp_path)
    assert out == ["waiting-input clarify", "waiting-external", "completed"]


def test_an_interrupt_kind_of_ones_own(tmp_path: Path) -> None:
    out = run_example(python_example("interrupt_kind.py"), tmp_path)
    assert out == ["waiting-approval", "validation_error waiting-approval", "completed"]


def test_fork_and_replay(tmp_path: Path) -> None:
    out = run_example(python_example("fork.py"), tmp_path)
    assert out == ["failed approval_rejected", "waiting-approval", "completed"]


def test_functional_api(tmp_path: Path) -> None:
    out = run_example(python_example("functional.py"), tmp_path)
    assert out == ["waiting-approval announce", "completed"]


def test_an_approval_policy_given_at_registration(tmp_path: Path) -> None:
    out = run_example(python_example("approval_policy.py"), tmp_path)
    assert out == ["waiting-approval", "completed"]


def test_receipts_example_verifies_offline(tmp_path: Path) -> None:
    out = run_example(python_example("receipts.py"), tmp_path)
    assert out == ["True 1 True", "True"]


def test_a_notification_channel_of_ones_own(tmp_path: Path) -> None:
    out = run_example(python_example("notify_channel.py"), tmp_path)
    assert out == ["#releases: [release] Your input is requested: Ship release 7?", "['sent']"]


@pytest.mark.postgres
def test_quickstart_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    (line,) = [
        body.strip()
        for body in _blocks("python")
        if body.strip().startswith('host = WopHost.from_url("postgres')
    ]
    documented_url = re.search(r'"(postgresql\+psycopg://[^"]+)"', line)
    assert documented_url, line
    quickstart = python_example("quickstart.py")
    sqlite_line = 'host = WopHost.from_url("sqlite:///runs.db")'
    assert sqlite_line in quickstart
    code = quickstart.replace(sqlite_line, line.replace(documented_url.group(1), postgres_url))
    out = run_example(code, tmp_path)
    assert out[:3] == ["waiting-approval review", "review approval", "completed"]
    assert not (tmp_path / "runs.db").exists()


# -- chat apps ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_chat_example_in_two_terminals(tmp_path: Path) -> None:
    block = bash_block("chat_app:WORKFLOWS")
    lines = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    exports = [line for line in lines if line.startswith("export ")]
    (serve,) = [line for line in lines if line.startswith("wop-langgraph serve")]
    (chat,) = [line for line in lines if "-m wop_langgraph.examples.chat_app" in line]
    assert "--port 8001" in serve and "127.0.0.1:8001" in chat
    port = str(_free_port())  # the documented 8001 may be taken on a shared machine
    env = _env()
    terminal_1 = "\n".join([*exports, "exec " + serve.replace("8001", port)])
    ready = f"http://127.0.0.1:{port}/.well-known/openwop"
    with _background(terminal_1, tmp_path, env, ready, tmp_path / "serve.log"):
        argv = shlex.split(chat.replace("8001", port))
        proc = subprocess.run(
            argv,
            cwd=tmp_path,
            env=env,
            input="A-1042\nbroken\nlate\nreplacement\n",
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Thanks! order A-1042: late; customer wants a replacement" in proc.stdout
    assert "broken" in proc.stdout  # the refused answer was reported, then asked again
    assert (tmp_path / "chat.db").exists()


# -- notebook users -----------------------------------------------------------------------------


def _jupyter_env(tmp_path: Path) -> dict[str, str]:
    # Jupyter's own files go to the test's folder, not the user's home.
    env = _env()
    for name in ("JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "IPYTHONDIR"):
        env[name] = str(tmp_path / name.lower())
    return env


@pytest.mark.slow
def test_jupyter_lab_opens_the_notebooks(tmp_path: Path) -> None:
    pytest.importorskip("jupyterlab", reason="the notebooks extra is not installed")
    (command,) = [line for line in bash_block("jupyter lab").splitlines() if line.startswith("jupyter lab")]
    command = command.split("#")[0].strip()
    assert command == "jupyter lab notebooks/"
    port, token = _free_port(), "readme-test"
    flags = f"--no-browser --port={port} --IdentityProvider.token={token} --ServerApp.port_retries=0"
    if os.geteuid() == 0:
        flags += " --allow-root"  # as the README says for root (CI containers)
    base = f"http://127.0.0.1:{port}"
    env = _jupyter_env(tmp_path)
    with _background(f"exec {command} {flags}", REPO, env, f"{base}/api?token={token}", tmp_path / "lab.log"):
        listing = httpx.get(f"{base}/api/contents?token={token}", timeout=30).json()
        lab = httpx.get(f"{base}/lab?token={token}", timeout=30)
    names = {item["name"] for item in listing["content"]}
    assert {"chat_conversation.ipynb", "escalation_thresholds.ipynb", "human_review.ipynb"} <= names
    assert lab.status_code == 200 and "JupyterLab" in lab.text


@pytest.mark.slow
def test_nbconvert_executes_a_notebook(tmp_path: Path) -> None:
    pytest.importorskip("nbconvert", reason="the notebooks extra is not installed")
    (command,) = [line for line in bash_block("jupyter nbconvert").splitlines() if "nbconvert" in line]
    argv = shlex.split(command.replace("/tmp/executed", str(tmp_path / "executed")))
    proc = subprocess.run(
        argv, cwd=REPO, env=_jupyter_env(tmp_path), capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (executed,) = (tmp_path / "executed").glob("*.ipynb")
    cells = [c for c in json.loads(executed.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells and all(c["execution_count"] is not None for c in cells)
    assert not [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]
