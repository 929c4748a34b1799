"""agent-chat-ui's calls through LangGraph's JavaScript SDK (``@langchain/langgraph-sdk``, installed
with npm into a temporary folder), unchanged, against a served process: a turn, a batch of tool
calls approved and rejected, and an edit of the first message (a run from a checkpoint)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.langgraph_api.graphs import EMAIL
from tests.server.langgraph_api.test_stream_reconnect import relay
from wop_langgraph.server.langgraph_api.shapes import assistant_uuid

SCRIPTS = Path(__file__).parent / "js"


@pytest.fixture(scope="module")
def js_sdk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder with the SDK installed and the scripts beside it (skips without node and npm)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("the JavaScript SDK test needs node and npm")
    folder = tmp_path_factory.mktemp("js-sdk")
    for name in ("package.json", "chat_flow.mjs", "reconnect.mjs"):
        shutil.copy(SCRIPTS / name, folder / name)
    installed = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if installed.returncode != 0:
        pytest.skip(f"npm could not install @langchain/langgraph-sdk: {installed.stderr[-500:]}")
    yield folder


def test_the_chat_ui_flow_through_the_js_sdk(base: str, js_sdk: Path) -> None:
    done = subprocess.run(
        ["node", "chat_flow.mjs", f"{base}/langgraph", "alice-key"],
        cwd=js_sdk,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["events"][0] == "metadata" and "values" in out["events"] and "messages" in out["events"]
    assert out["created"] == {"run_id": out["runId"], "thread_id": out["threadId"]}  # Content-Location
    assert out["reply"] == "turn 1: you said 'hello'" and out["streamedMessages"] == ["ai-echo-1"]
    (interrupt,) = out["interrupt"]
    assert [a["name"] for a in interrupt["value"]["action_requests"]] == ["send_email", "delete_file"]
    assert (
        interrupt["value"]["action_requests"][0]["args"] == EMAIL
        and out["interruptedStatus"] == "interrupted"
    )
    assert out["tools"]["send_email"] == "EXECUTED send_email to=ops@example.com subject=Release"
    assert "keep the log" in out["tools"]["delete_file"] and "EXECUTED" not in out["tools"]["delete_file"]
    assert out["status"] == "idle" and out["metadata"]["assistant_id"] == assistant_uuid("chat-agent")
    assert out["threadId"] in out["searched"] and out["history"] == 2
    # the edit of the first message starts the thread again from before it
    assert out["edited"] == out["editedThread"] == ["hi", "turn 1: you said 'hi'"]


def test_the_js_sdk_resumes_a_cut_stream_from_location(base: str, js_sdk: Path) -> None:
    """``streamWithRetry`` reconnects to the stream's ``Location`` with ``Last-Event-ID``."""
    with relay(base) as cutting:
        done = subprocess.run(
            ["node", "reconnect.mjs", f"{cutting.url}/langgraph", "alice-key"],
            cwd=js_sdk,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert cutting.cuts == 1
    reconnects = [r for r in cutting.requests if r.startswith(b"GET ") and b"/stream" in r.split(b"\r\n")[0]]
    assert len(reconnects) == 1 and b"last-event-id: " in reconnects[0].lower()
    assert out["values"] == [{"n": 0}, {"n": 1}, {"n": 2}]  # every step once, across the cut
