"""Agent Inbox ``interrupt([HumanInterrupt])`` under WopHost: an approval; the node gets its response."""

from __future__ import annotations

from typing import Any

import pytest

from tests.adapters._support import outputs, refuse, resolve_then_recover
from tests.host._graphs import ALICE
from tests.host._support import HostFactory, events, only_pending, payloads, start
from wop_langgraph.examples.agent_inbox import build_graph
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import ValidationError

INPUTS = {"to": "ops@example.com", "body": "Release today"}
EDITED = {"to": "team@example.com", "body": "Release tomorrow"}


def test_suspends_as_an_approval_whose_actions_follow_the_config(host: WopHost) -> None:
    run_id, snapshot = start(host, build_graph(), INPUTS)
    assert snapshot["status"] == "waiting-approval" and snapshot["currentNodeId"] == "review"
    gate = only_pending(host, run_id)
    assert gate.kind == "approval"
    data = gate.payload["data"]
    assert data["actions"] == ["accept", "edit-accept", "refine", "reject"]
    assert (data["artifactId"], data["artifactData"]) == ("send_email", INPUTS)
    assert data["title"] == "Send this email to ops@example.com?"
    (requested,) = payloads(events(host, run_id), "interrupt.requested")
    assert requested == gate.payload


@pytest.mark.parametrize(
    ("resume", "outcome", "decision"),
    [
        ({"action": "accept"}, {"outcome": "sent", "sent": INPUTS}, "granted"),
        ([{"type": "accept", "args": None}], {"outcome": "sent", "sent": INPUTS}, "granted"),
        (
            {"action": "edit-accept", "editedArtifactData": EDITED},
            {"outcome": "sent-edited", "sent": EDITED},
            "granted",
        ),
        (
            [{"type": "edit", "args": {"action": "send_email", "args": EDITED}}],
            {"outcome": "sent-edited", "sent": EDITED},
            "granted",
        ),
        (
            {"action": "refine", "refineFeedback": {"scope": "whole", "text": "Wait for QA"}},
            {"outcome": "reviewer said: Wait for QA"},
            None,
        ),
        ([{"type": "response", "args": "Wait for QA"}], {"outcome": "reviewer said: Wait for QA"}, None),
        ({"action": "reject"}, {"outcome": "ignored"}, "rejected"),
        ([{"type": "ignore", "args": None}], {"outcome": "ignored"}, "rejected"),
    ],
)
def test_the_node_receives_the_human_response_it_expects(
    host: WopHost, resume: Any, outcome: dict[str, Any], decision: str | None
) -> None:
    run_id, _ = start(host, build_graph(), INPUTS)
    result = host.resolve(run_id, "review", resume, ALICE)
    assert result["status"] == "completed"  # an ignore is the node's to handle, never a run failure
    out = outputs(host, run_id)
    assert {k: out[k] for k in outcome} == outcome
    (resolved,) = payloads(events(host, run_id), "interrupt.resolved")
    assert resolved.get("decision") == decision
    assert "action" in resolved["resumeValue"]  # recorded in OpenWOP's vocabulary, whatever was sent


def test_a_config_without_edit_refuses_an_edit(host: WopHost) -> None:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def review(state: dict[str, Any]) -> dict[str, Any]:
        request = {
            "action_request": {"action": "deploy", "args": {"env": "prod"}},
            "config": {
                "allow_accept": True,
                "allow_edit": False,
                "allow_respond": False,
                "allow_ignore": True,
            },
            "description": None,
        }
        return {"response": interrupt([request])}

    graph = StateGraph(dict)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    run_id, _ = start(host, graph.compile(), {})
    assert only_pending(host, run_id).payload["data"]["actions"] == ["accept", "reject"]
    assert only_pending(host, run_id).payload["data"]["title"] == "Review deploy"
    refuse(host, run_id, "review", [{"type": "edit", "args": {"action": "deploy", "args": {"env": "dev"}}}])
    refuse(host, run_id, "review", [{"type": "response", "args": "no"}], "/resumeValue/0/type")
    # The refusal lists what this gate allows, not every response type the Agent Inbox knows.
    with pytest.raises(ValidationError, match=r"allows the response types accept, ignore$"):
        host.resolve(run_id, "review", [{"type": "response", "args": "no"}], ALICE)


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ([{"type": "edit", "args": "not an action"}], "/resumeValue/0/args"),
        ([{"type": "response", "args": ""}], "/resumeValue/0/args"),
        ([{"type": "maybe"}], "/resumeValue/0/type"),
        ([{"type": "accept"}, {"type": "accept"}], "/resumeValue"),
        ({"action": "edit-accept", "editedArtifactData": "to: someone"}, "/resumeValue/editedArtifactData"),
        ({"action": "refine", "refineFeedback": {"scope": "whole"}}, "/resumeValue/refineFeedback"),
        ({"action": "ask"}, "/resumeValue/action"),
        ("yes", None),
    ],
)
def test_a_bad_resume_is_refused_and_changes_nothing(host: WopHost, bad: Any, path: str | None) -> None:
    run_id, _ = start(host, build_graph(), INPUTS)
    refuse(host, run_id, "review", bad, path)
    assert host.resolve(run_id, "review", [{"type": "accept", "args": None}], ALICE)["status"] == "completed"


def test_recovery_delivers_the_human_response_and_keeps_the_key(make_host: HostFactory) -> None:
    host = make_host()
    run_id, snapshot = start(host, build_graph(), INPUTS)
    key = only_pending(host, run_id).key
    edit = [{"type": "edit", "args": {"action": "send_email", "args": EDITED}}]
    second = resolve_then_recover(make_host, host, snapshot["workflowId"], build_graph(), run_id, edit)
    assert second.snapshot(run_id)["status"] == "completed"
    assert outputs(second, run_id)["sent"] == EDITED
    assert [r.key for r in second.interrupts(run_id)] == [key] == [f"{run_id}:review:0:0"]
