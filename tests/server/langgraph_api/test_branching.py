"""agent-chat-ui's regenerate and edit: a new run of the thread from one of its checkpoints
(``checkpoint`` or ``checkpoint_id`` on the run), through LangGraph's Python SDK.

The UI finds the checkpoint in the thread's history (the parent of the state where a message
first appears) and streams a run from it: with no input to regenerate a reply, with the edited
message to replace one. The new run is an OpenWOP run of its own that starts from that state;
the thread's values are then the branch's, and the abandoned branch stays in the history.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.server.langgraph_api.conftest import SdkFactory, of_type, openwop_events
from tests.server.langgraph_api.test_chat_flow import GRAPH, last_values, say, stream

HITL = "HumanInTheLoopMiddleware"


def texts(values: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in values["messages"]]


def two_turns(client: SyncLangGraphClient) -> tuple[str, list[dict[str, Any]]]:
    """A thread with two turns ("hello", "and again"); its history, newest first."""
    thread_id = client.threads.create()["thread_id"]
    stream(client, thread_id, input=say("hello"))
    stream(client, thread_id, input=say("and again"))
    return thread_id, client.threads.get_history(thread_id, limit=20)


def state_with(history: list[dict[str, Any]], messages: list[str], next_nodes: list[str]) -> dict[str, Any]:
    """The newest state of ``history`` holding exactly ``messages`` and about to run ``next_nodes``."""
    return next(s for s in history if texts(s["values"]) == messages and s["next"] == next_nodes)


def test_regenerate_runs_the_reply_again_from_the_state_before_it(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id, history = two_turns(client)
    # agent-chat-ui regenerates a reply from the parent of the state it first appears in
    asked = ["hello", "turn 1: you said 'hello'", "and again"]
    replied = state_with(history, [*asked, "turn 2: you said 'and again'"], [f"{HITL}.after_model"])
    before = state_with(history, asked, ["model"])
    assert replied["parent_checkpoint"]["checkpoint_id"] == before["checkpoint"]["checkpoint_id"]

    parts, created = stream(client, thread_id, input=None, checkpoint=replied["parent_checkpoint"])

    run_id = parts[0].data["run_id"]
    assert created[0]["run_id"] == run_id
    assert texts(last_values(parts)) == texts(replied["values"])  # the reply again, once: not appended
    events = openwop_events(base, run_id)
    started = [e["nodeId"] for e in of_type(events, "node.started")]
    assert started.count("model") == 1 and "tools" not in started  # the model ran again, once
    assert len(client.runs.list(thread_id)) == 3
    assert texts(client.threads.get_state(thread_id)["values"]) == texts(replied["values"])


def test_edit_replaces_a_message_and_what_followed_it(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id, history = two_turns(client)
    # agent-chat-ui edits a message from the parent of the state it first appears in
    asked = state_with(history, ["hello", "turn 1: you said 'hello'", "and again"], ["model"])
    branch = asked["parent_checkpoint"]["checkpoint_id"]

    result = client.runs.wait(thread_id, GRAPH, input=say("something else"), checkpoint_id=branch)

    expected = ["hello", "turn 1: you said 'hello'", "something else", "turn 2: you said 'something else'"]
    assert texts(result) == expected
    thread = client.threads.get(thread_id)
    assert thread["status"] == "idle" and texts(thread["values"]) == expected
    # the abandoned branch stays readable, as on LangGraph's server
    later = client.threads.get_history(thread_id, limit=50)
    assert any(texts(s["values"])[-1:] == ["turn 2: you said 'and again'"] for s in later)
    assert texts(later[0]["values"]) == expected


def test_a_branch_point_is_one_of_this_threads_root_checkpoints(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id, history = two_turns(client)
    other_id, other_history = two_turns(client)
    theirs = other_history[0]["checkpoint"]["checkpoint_id"]
    ours = history[0]["checkpoint"]
    http = httpx.Client(base_url=f"{base}/langgraph", headers={"x-api-key": "alice-key"})
    with http:

        def run(body: dict[str, Any], on: str = thread_id) -> httpx.Response:
            return http.post(f"/threads/{on}/runs/wait", json={"assistant_id": GRAPH, **body})

        refused = [
            (run({"checkpoint_id": theirs}), 404),  # another thread's checkpoint seeds nothing here
            (run({"checkpoint_id": "1f0-no-such-checkpoint"}), 404),
            (run({"checkpoint": {**ours, "checkpoint_ns": "tools:1"}}), 422),  # a subgraph's
            (run({"checkpoint": "not an object"}), 400),
            (run({"checkpoint_id": 7}), 400),
            (run({"checkpoint": ours, "command": {"resume": "yes"}}), 422),
            (run({"checkpoint": ours, "multitask_strategy": "enqueue", "input": say("x")}), 422),
        ]
        for response, status in refused:
            assert response.status_code == status, response.text
            assert response.json()["error"] in ("not_found", "validation_error", "wop-langgraph.unsupported")
    assert len(client.runs.list(thread_id)) == 2  # nothing started
    assert len(client.runs.list(other_id)) == 2


def test_a_branch_waits_like_any_new_input_while_the_thread_is_interrupted(
    base: str, sdk: SdkFactory
) -> None:
    client = sdk()
    thread_id, history = two_turns(client)
    stream(client, thread_id, input=say("send an email"))
    assert client.threads.get(thread_id)["status"] == "interrupted"
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.runs.wait(thread_id, GRAPH, input=say("x"), checkpoint=history[0]["checkpoint"])
    assert refused.value.response.status_code == 409
    assert client.threads.get(thread_id)["status"] == "interrupted"  # its run still waits
