"""A host raises and resolves every interrupt kind the interrupt page lists, including
``conversation.start`` (waits for the other party to join) and ``conversation.close`` (waits for
the close to be confirmed); payloads and resume values are judged by the official schemas."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.host._graphs import ALICE, single_node
from tests.host._support import HostFactory, events, footprint, of_type, only_pending, payloads, start
from tests.host.nine_kinds import STEPS, nine_kinds_graph, turn
from tests.official import validate_official
from wop_langgraph.host import WopHost
from wop_langgraph.nodes import close_conversation, start_conversation
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.payloads import INTERRUPT_KINDS


def check_resume_value(payload: dict[str, Any], value: Any) -> None:
    """The resume value passes the official schema that governs it."""
    if payload["kind"] in ("conversation.start", "conversation.close"):
        validate_official("conversation-turn.schema.json", value)
    schemas = [payload.get("resumeSchema"), payload["data"].get("outcomeSchema")]
    schemas += [q.get("schema") for q in payload["data"].get("questions", [])]
    for schema in filter(None, schemas):
        target = value["answers"]["colour"] if payload["kind"] == "clarification" else value
        assert list(Draft202012Validator(schema).iter_errors(target)) == []


def test_all_nine_kinds_are_raised_and_resolved(make_host: HostFactory) -> None:
    host = make_host(conversations=True, credentials=True)
    run_id, snapshot = start(host, nine_kinds_graph())
    assert sorted(kind for _, kind, _ in STEPS) == sorted(INTERRUPT_KINDS)
    for node_id, kind, value in STEPS:
        pending = only_pending(host, run_id)
        assert (pending.node_id, pending.kind) == (node_id, kind)
        validate_official("suspend-request.schema.json", pending.payload)
        check_resume_value(pending.payload, value)
        snapshot = host.resolve(run_id, node_id, value, ALICE)
    assert snapshot["status"] == "completed"
    docs = events(host, run_id)  # every event judged by the official schemas
    requested = payloads(docs, "interrupt.requested")
    resolved = payloads(docs, "interrupt.resolved")
    assert [p["kind"] for p in requested] == [kind for _, kind, _ in STEPS]
    recorded = [(r["nodeId"], r["kind"], r["resumeValue"]) for r in resolved]
    assert recorded[0][2].pop("decidedAt")  # the host stamps an approval's decision time
    assert recorded == STEPS
    start_payload = requested[4]["data"]
    conversation_id = start_payload["conversationId"]
    assert start_payload == {
        "conversationId": conversation_id,
        "title": "Support",
        "initialPrompt": "How can we help?",
    }
    assert requested[6]["data"] == {"conversationId": conversation_id, "reason": "goal-reached"}
    # The conversation's events: opened before its start waits, closed after the close is confirmed.
    order = [d["type"] for d in docs if d["type"].startswith("conversation.")]
    assert order == ["conversation.opened", "conversation.exchanged", "conversation.closed"]
    (closed,) = payloads(docs, "conversation.closed")
    assert closed == {"conversationId": conversation_id, "reason": "goal-reached", "turnCount": 3}
    close_resolved = of_type(docs, "interrupt.resolved")[6]
    assert of_type(docs, "conversation.closed")[0]["sequence"] > close_resolved["sequence"]
    suspended = [p["kind"] for p in payloads(docs, "node.suspended")]
    assert suspended == [kind for _, kind, _ in STEPS]


BAD_TURNS: list[Any] = [
    None,
    "hello",
    {"text": "hi"},
    {**turn(0, "hi"), "role": "robot"},
    {**turn(0, "hi"), "role": "agent"},  # an agent turn must name its speaker
    {k: v for k, v in turn(0, "hi").items() if k != "messageId"},
    {**turn(0, "hi"), "extra": 1},
]


@pytest.mark.parametrize("wait", ["join", "confirm"])
def test_a_join_or_a_confirmation_is_a_conversation_turn(make_host: HostFactory, wait: str) -> None:
    host = make_host(conversations=True)

    def body(state: Any) -> str:
        conversation = start_conversation(title="Help", wait_for_join=wait == "join")
        close_conversation(conversation, reason="done", confirm=wait == "confirm")
        return conversation

    run_id, snapshot = start(host, single_node("chat", body))
    assert snapshot["status"] == "waiting-approval"
    kind = "conversation.start" if wait == "join" else "conversation.close"
    assert only_pending(host, run_id).kind == kind
    before = footprint(host, run_id)
    for value in BAD_TURNS:
        with pytest.raises(ValidationError):
            host.resolve(run_id, "chat", value, ALICE)
        assert footprint(host, run_id) == before, value
    assert host.resolve(run_id, "chat", turn(0, "hi"), ALICE)["status"] == "completed"
    docs = events(host, run_id)
    assert len(payloads(docs, "conversation.opened")) == len(payloads(docs, "conversation.closed")) == 1


def test_waiting_conversation_calls_need_the_capability(host: WopHost) -> None:
    """Like every conversation call, a waiting start is refused on a host without conversations."""
    run_id, snapshot = start(
        host, single_node("chat", lambda state: start_conversation(title="x", wait_for_join=True))
    )
    assert snapshot["status"] == "failed"
    docs = events(host, run_id)
    (failed,) = payloads(docs, "node.failed")
    assert failed["error"]["code"] == "capability_required"
    assert not of_type(docs, "interrupt.requested")
