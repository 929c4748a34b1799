"""The adapter functions on their own (pure): what each shape recognises, accepts and hands back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.official import official_errors
from wop_langgraph.adapters import classify, is_bare, normalize_resume, payload_for, to_node_value
from wop_langgraph.protocol.errors import ValidationError

LEGACY_HITL = {
    "action_requests": [{"name": "write_file", "arguments": {"path": "a.txt"}, "description": "Write?"}],
    "review_configs": [{"action_name": "write_file", "allowed_decisions": ["approve", "edit"]}],
}


@dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("Which city?", "clarification"),
        ({"question": "Size?", "choices": ["S", "M"]}, "clarification"),
        ({"question": "Why?"}, "clarification"),
        ({"question": "Pick", "options": [{"label": "A"}]}, "custom"),  # options we cannot offer
        ("   ", "custom"),
        (None, "custom"),
        (Point(1, 2), "custom"),
        ([{"action_request": {"action": "a", "args": {}}, "config": {"allow_accept": True}}], "approval"),
        ([{"action_request": {"action": "a", "args": {}}, "config": {}}], "custom"),  # nothing allowed
        (LEGACY_HITL, "approval"),
        ({"type": "tool_approval", "name": "t", "args": {}, "tool_call_id": "c1"}, "approval"),
    ],
)
def test_every_value_becomes_a_valid_payload_of_the_right_kind(value: Any, kind: str) -> None:
    payload = payload_for(value)
    assert payload["kind"] == kind
    assert official_errors("suspend-request.schema.json", {**payload, "key": "k"}) == []
    assert is_bare(payload)


def test_a_custom_value_is_shown_as_readable_json() -> None:
    assert classify(Point(1, 2)).data == {"customKind": "langgraph.interrupt", "payload": {"x": 1, "y": 2}}
    assert "payload" not in classify(None).data


def test_node_api_payloads_are_not_bare() -> None:
    approval = {"kind": "approval", "data": {"artifactType": "text/plain", "actions": ["accept"]}}
    question = {"kind": "clarification", "data": {"questions": [{"id": "q", "question": "?"}]}}
    for payload in (approval, question):
        assert not is_bare(payload)
        assert normalize_resume(payload, {"x": 1}) == {"x": 1}
        with pytest.raises(ValueError):
            to_node_value(payload, {}, None)


def test_the_legacy_arguments_spelling_round_trips() -> None:
    payload = payload_for(LEGACY_HITL)
    assert payload["data"]["artifactData"]["items"][0]["args"] == {"path": "a.txt"}
    sent = {
        "decisions": [{"type": "edit", "edited_action": {"name": "write_file", "arguments": {"path": "b"}}}]
    }
    value = normalize_resume(payload, sent)
    assert value["editedArtifactData"]["decisions"][0]["edited_action"] == {
        "name": "write_file",
        "args": {"path": "b"},
    }
    resolution = {
        "action": "edit-accept",
        "decision": "granted",
        "editedArtifactData": value["editedArtifactData"],
    }
    back = to_node_value(payload, resolution, value)
    assert back == {
        "decisions": [{"type": "edit", "edited_action": {"name": "write_file", "arguments": {"path": "b"}}}]
    }


def test_hitl_decisions_summarise_to_the_plainest_openwop_value() -> None:
    payload = payload_for(
        {
            "action_requests": [{"name": "a", "args": {}}, {"name": "b", "args": {}}],
            "review_configs": [
                {"action_name": n, "allowed_decisions": ["approve", "reject", "respond"]} for n in "ab"
            ],
        }
    )
    approve = {"type": "approve"}
    assert normalize_resume(payload, {"decisions": [approve, approve]}) == {"action": "accept"}
    reject = {"type": "reject", "message": "no"}
    assert normalize_resume(payload, {"decisions": [reject, reject]}) == {
        "action": "reject",
        "feedback": "no",
    }
    mixed = normalize_resume(payload, {"decisions": [approve, {"type": "respond", "message": "42"}]})
    assert mixed["action"] == "edit-accept"
    with pytest.raises(ValidationError) as caught:
        normalize_resume(payload, {"decisions": [approve, {"type": "respond"}]})
    assert caught.value.details == {"path": "/resumeValue/decisions/1/message"}
    timeout = {"action": "timeout", "decision": "rejected", "reason": "timeout"}
    assert to_node_value(payload, timeout, None) == {"decisions": [{"type": "reject"}, {"type": "reject"}]}


def test_an_agent_inbox_timeout_reaches_the_node_as_an_ignore() -> None:
    payload = payload_for([{"action_request": {"action": "a", "args": {}}, "config": {"allow_accept": True}}])
    timeout = {"action": "timeout", "decision": "rejected", "reason": "timeout"}
    assert to_node_value(payload, timeout, None) == [{"type": "ignore", "args": None}]
