"""An OpenWOP approval gate (``request_approval``) answered through the LangGraph API, with the
``HumanInTheLoopMiddleware`` decision shape agent-chat-ui sends or with the gate's own resume
value; the OpenWOP record shows the translated resolution and who decided."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.server.langgraph_api.conftest import SdkFactory, of_type, openwop_events

GRAPH = "publish-gate"


def interrupted(client: SyncLangGraphClient) -> tuple[str, str]:
    thread_id = client.threads.create()["thread_id"]
    waited = client.runs.wait(thread_id, GRAPH, input={"draft": "hello"})
    assert len(waited["__interrupt__"]) == 1
    [run] = client.runs.list(thread_id)
    return thread_id, run["run_id"]


def answer(client: SyncLangGraphClient, thread_id: str, resume: Any) -> dict[str, Any]:
    return dict(client.runs.wait(thread_id, GRAPH, command={"resume": resume}, raise_error=False))


@pytest.mark.parametrize(
    ("resume", "published", "action"),
    [
        ({"decisions": [{"type": "approve"}]}, "hello", "accept"),
        (
            {"decisions": [{"type": "edit", "edited_action": {"name": "publish", "args": "HELLO"}}]},
            "HELLO",
            "edit-accept",
        ),
        ({"action": "accept"}, "hello", "accept"),
        ({"action": "edit-accept", "editedArtifactData": "Hi"}, "Hi", "edit-accept"),
    ],
)
def test_a_gate_granted_with_either_shape(
    base: str, sdk: SdkFactory, resume: Any, published: str, action: str
) -> None:
    client = sdk()
    thread_id, run_id = interrupted(client)
    assert answer(client, thread_id, resume)["published"] == published
    assert client.threads.get(thread_id)["status"] == "idle"
    [resolved] = of_type(openwop_events(base, run_id), "interrupt.resolved")
    assert resolved["action"] == action and resolved["decision"] == "granted"
    assert resolved["resolvedBy"]["subjectId"] == "alice"


def test_a_gate_rejected_with_the_decision_shape_records_the_message(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id, run_id = interrupted(client)
    outcome = answer(client, thread_id, {"decisions": [{"type": "reject", "message": "not yet"}]})
    assert outcome["__error__"]["error"] == "approval_rejected"
    assert client.threads.get(thread_id)["status"] == "error"  # a rejected gate raises in the node
    [resolved] = of_type(openwop_events(base, run_id), "interrupt.resolved")
    assert resolved["action"] == "reject" and resolved["resumeValue"]["feedback"] == "not yet"
    assert "published" not in client.threads.get_state(thread_id)["values"]


@pytest.mark.parametrize(
    "resume",
    [
        {"decisions": [{"type": "approve"}, {"type": "approve"}]},  # one gate, one decision
        {"decisions": [{"type": "respond", "message": "hm"}]},
        {"decisions": [{"type": "edit"}]},
    ],
)
def test_a_decision_the_gate_cannot_take_is_refused_and_nothing_applied(
    base: str, sdk: SdkFactory, resume: Any
) -> None:
    client = sdk()
    thread_id, run_id = interrupted(client)
    refused = httpx.post(
        f"{base}/langgraph/threads/{thread_id}/runs/wait",
        json={"assistant_id": GRAPH, "command": {"resume": resume}},
        headers={"x-api-key": "alice-key"},
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "validation_error", refused.text
    assert client.threads.get(thread_id)["status"] == "interrupted"
    assert of_type(openwop_events(base, run_id), "interrupt.resolved") == []
