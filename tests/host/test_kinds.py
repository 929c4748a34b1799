"""Interrupt kinds other than approval: clarification, external event, low confidence, conversation,
credential, custom."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.host._graphs import (
    ALICE,
    chat_graph,
    clarification_graph,
    count,
    credential_graph,
    custom_graph,
    external_event_graph,
    low_confidence_graph,
)
from tests.host._support import (
    HostFactory,
    all_run_ids,
    events,
    footprint,
    of_type,
    only_pending,
    payloads,
    start,
)
from wop_langgraph.host import WopHost
from wop_langgraph.nodes.questions import CREDENTIAL_RESUME_SCHEMA
from wop_langgraph.protocol.errors import ValidationError


def result_of(host: WopHost, run_id: str) -> Any:
    (completed,) = payloads(events(host, run_id), "run.completed")
    return completed["outputs"]["result"]


def assert_node_failed(host: WopHost, run_id: str, node_id: str, code: str) -> None:
    docs = events(host, run_id)
    (failed,) = payloads(docs, "node.failed")
    assert (failed["nodeId"], failed["error"]["code"]) == (node_id, code)
    (run_failed,) = payloads(docs, "run.failed")
    assert run_failed["error"]["code"] == code
    snapshot = host.snapshot(run_id)
    assert snapshot["status"] == "failed"
    assert snapshot["error"]["code"] == code


# -- clarification ---------------------------------------------------------------------------


BAD_ANSWERS: list[Any] = [
    {"answers": {"colour": "green", "copies": 2}},  # not in the enum
    {"answers": {"colour": "red", "copies": 0}},  # below the minimum
    {"answers": {"colour": "red", "copies": "2"}},  # wrong type
    {"answers": {"colour": "red"}},  # a question left unanswered
    {"answers": {"colour": "red", "copies": 2, "extra": 1}},  # no such question
    {"answers": ["red", 2]},
    {"colour": "red", "copies": 2},
    None,
]


def test_clarification_answers_are_checked_per_question(host: WopHost) -> None:
    run_id, snapshot = start(host, clarification_graph())
    assert snapshot["status"] == "waiting-input"
    before = footprint(host, run_id)
    for value in BAD_ANSWERS:
        with pytest.raises(ValidationError):
            host.resolve(run_id, "clarify", value, ALICE)
        assert footprint(host, run_id) == before, value
    assert count("clarify:past") == 0


def test_clarification_answered(host: WopHost) -> None:
    run_id, _ = start(host, clarification_graph())
    gate = only_pending(host, run_id)
    assert gate.kind == "clarification"
    answers = {"colour": "blue", "copies": 3}
    assert host.resolve(run_id, "clarify", {"answers": answers}, ALICE)["status"] == "completed"
    assert result_of(host, run_id) == answers
    docs = events(host, run_id)
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert resolved["resumeValue"] == {"answers": answers}
    assert resolved["resolvedBy"] == ALICE.subject()
    assert len(of_type(docs, "clarification.requested")) == 1
    assert len(of_type(docs, "clarification.resolved")) == 1
    assert count("clarify:past") == 1


# -- external event --------------------------------------------------------------------------


def test_external_event_correlation(host: WopHost) -> None:
    run_id, snapshot = start(host, external_event_graph())
    assert snapshot["status"] == "waiting-external"
    assert snapshot["currentNodeId"] == "wait"
    for wrong in ({"orderId": "o-2", "amount": 5}, {"amount": 5}, "o-1", None):
        before = footprint(host, run_id)
        with pytest.raises(ValidationError):
            host.resolve(run_id, "wait", wrong, ALICE)
        assert footprint(host, run_id) == before
    event = {"orderId": "o-1", "amount": 5}
    assert host.resolve(run_id, "wait", event, ALICE)["status"] == "completed"
    assert result_of(host, run_id) == event
    (requested,) = payloads(events(host, run_id), "interrupt.requested")
    assert requested["data"] == {"eventType": "payment.settled", "correlation": {"orderId": "o-1"}}


# -- low confidence --------------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.9, 0.7, None, float("nan"), float("inf")])
def test_confident_enough_agent_continues_but_is_recorded(host: WopHost, confidence: float | None) -> None:
    graph = low_confidence_graph(confidence=confidence)
    run_id, snapshot = start(host, graph, {"decision": "route-a"})
    assert snapshot["status"] == "completed"
    docs = events(host, run_id)
    (decided,) = payloads(docs, "agent.decided")
    assert decided["agentId"] == "triage-agent"
    assert decided["decision"] == "route-a"
    if confidence is not None and math.isfinite(confidence):
        assert decided["confidence"] == confidence
    else:
        assert "confidence" not in decided
    assert not of_type(docs, "node.suspended")
    assert not of_type(docs, "interrupt.requested")
    assert result_of(host, run_id) == "route-a"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [({"decision": "route-b"}, "route-b"), ({}, "route-a"), ({"ratify": True}, "route-a")],
)
def test_low_confidence_suspends_and_person_replaces_or_ratifies(
    host: WopHost, answer: dict[str, Any], expected: str
) -> None:
    run_id, snapshot = start(host, low_confidence_graph(), {"decision": "route-a", "confidence": 0.5})
    assert snapshot["status"] == "waiting-approval"
    docs = events(host, run_id)
    (decided,) = payloads(docs, "agent.decided")
    assert decided["confidence"] == 0.5
    (suspended,) = payloads(docs, "node.suspended")
    assert suspended["reason"] == "low-confidence"
    assert suspended["kind"] == "low-confidence"
    gate = only_pending(host, run_id)
    assert gate.payload["data"] == {
        "agentId": "triage-agent",
        "threshold": 0.7,
        "observed": 0.5,
        "decision": "route-a",
    }
    assert of_type(docs, "agent.decided")[0]["sequence"] < of_type(docs, "node.suspended")[0]["sequence"]

    assert host.resolve(run_id, "agent", answer, ALICE)["status"] == "completed"
    assert result_of(host, run_id) == expected
    # agent.decided is recorded once, not again when the node replays on resume.
    assert len(of_type(events(host, run_id), "agent.decided")) == 1


def test_low_confidence_resume_is_checked(host: WopHost) -> None:
    run_id, _ = start(host, low_confidence_graph(), {"decision": "route-a", "confidence": 0.1})
    before = footprint(host, run_id)
    for bad in ({"decision": "x", "bogus": 1}, {"ratify": "yes"}, "route-b"):
        with pytest.raises(ValidationError):
            host.resolve(run_id, "agent", bad, ALICE)
    assert footprint(host, run_id) == before


@pytest.mark.parametrize(("confidence", "suspends"), [(0.8, True), (0.9, False), (0.95, False)])
def test_escalation_threshold_from_configurable_is_a_percentage(
    host: WopHost, confidence: float, suspends: bool
) -> None:
    configurable = {"version": 1, "run": {"escalationThreshold": 90}}
    run_id, snapshot = start(
        host, low_confidence_graph(), {"decision": "d", "confidence": confidence}, configurable=configurable
    )
    assert snapshot["configurable"] == configurable
    if suspends:
        assert snapshot["status"] == "waiting-approval"
        assert only_pending(host, run_id).payload["data"]["threshold"] == 0.9
    else:
        assert snapshot["status"] == "completed"


BAD_CONFIGURABLES: list[dict[str, Any]] = [
    {"version": 1, "run": {"escalationThreshold": 150}},
    {"version": 1, "run": {"escalationThreshold": 0.7}},
    {"version": 1, "run": {"escalationThreshold": -1}},
    {"version": 1, "bogus": {}},
    {"version": 1, "run": {"bogus": 1}},
    {"version": 1, "run.escalationThreshold": 70},
    {"run": {"escalationThreshold": 70}},
    {"version": 2},
]


def test_bad_configurable_is_refused_at_create_run(host: WopHost) -> None:
    host.register("lc", low_confidence_graph())
    for configurable in BAD_CONFIGURABLES:
        with pytest.raises(ValidationError) as info:
            host.create_run(
                "lc", {"decision": "d", "confidence": 0.1}, owner=ALICE, configurable=configurable
            )
        assert info.value.status == 400, configurable
    assert all_run_ids(host) == []
    assert count("agent:run") == 0


# -- conversations ---------------------------------------------------------------------------


def test_conversations_are_off_by_default(host: WopHost) -> None:
    run_id, snapshot = start(host, chat_graph())
    assert snapshot["status"] == "failed"
    assert_node_failed(host, run_id, "chat", "capability_required")
    docs = events(host, run_id)
    assert not of_type(docs, "conversation.opened")
    assert not of_type(docs, "interrupt.requested")


def test_chat_loop_one_exchange_per_step(make_host: HostFactory) -> None:
    host = make_host(conversations=True)
    run_id, snapshot = start(host, chat_graph())
    assert snapshot["status"] == "waiting-approval"
    turns = [{"text": "hello"}, {"text": "more please"}, {"text": "bye", "done": True}]
    for index, outcome in enumerate(turns):
        gate = only_pending(host, run_id)
        assert gate.kind == "conversation.exchange"
        assert gate.key == f"{run_id}:chat:{index}:0"
        assert host.snapshot(run_id)["status"] == "waiting-approval"
        if index == 1:
            for bad in ({"text": ""}, {"txt": "x"}, {"text": "x", "done": "yes"}, "hi"):
                before = footprint(host, run_id)
                with pytest.raises(ValidationError):
                    host.resolve(run_id, "chat", bad, ALICE)
                assert footprint(host, run_id) == before
        host.resolve(run_id, "chat", outcome, ALICE)
    assert host.snapshot(run_id)["status"] == "completed"
    (completed,) = payloads(events(host, run_id), "run.completed")
    assert completed["outputs"]["log"] == ["hello", "more please", "bye"]

    docs = events(host, run_id)
    (opened,) = payloads(docs, "conversation.opened")
    conversation_id = opened["conversationId"]
    exchanged = payloads(docs, "conversation.exchanged")
    assert [p["turnIndex"] for p in exchanged] == [0, 1, 2]
    assert {p["conversationId"] for p in exchanged} == {conversation_id}
    assert [p["outcome"] for p in exchanged] == turns
    (closed,) = payloads(docs, "conversation.closed")
    assert closed["conversationId"] == conversation_id
    assert closed["turnCount"] == 3
    seq = {d["type"]: d["sequence"] for d in docs if d["type"].startswith("conversation.")}
    assert (
        of_type(docs, "conversation.opened")[0]["sequence"]
        < of_type(docs, "conversation.exchanged")[0]["sequence"]
    )
    assert seq["conversation.closed"] > max(d["sequence"] for d in of_type(docs, "conversation.exchanged"))
    reasons = {p["reason"] for p in payloads(docs, "node.suspended")}
    assert reasons == {"conversation-input"}
    assert count("chat:past") == 3


# -- credential ------------------------------------------------------------------------------


def test_credentials_are_off_by_default(host: WopHost) -> None:
    run_id, snapshot = start(host, credential_graph())
    assert snapshot["status"] == "failed"
    assert_node_failed(host, run_id, "connect", "capability_required")


@pytest.mark.parametrize("outcome", ["authorized", "declined"])
def test_credential_resume_is_exactly_an_outcome(make_host: HostFactory, outcome: str) -> None:
    host = make_host(credentials=True)
    run_id, snapshot = start(host, credential_graph())
    assert snapshot["status"] == "waiting-input"
    gate = only_pending(host, run_id)
    assert gate.payload["resumeSchema"] == CREDENTIAL_RESUME_SCHEMA
    data = gate.payload["data"]
    assert set(data) <= {"provider", "scopes", "reason", "connectUrl", "credentialRef"}
    assert data["connectUrl"].startswith("https://")
    for bad in (
        {"outcome": "maybe"},
        {"outcome": outcome, "accessToken": "gho_secret"},
        {},
        outcome,
    ):
        before = footprint(host, run_id)
        with pytest.raises(ValidationError):
            host.resolve(run_id, "connect", bad, ALICE)
        assert footprint(host, run_id) == before
    assert host.resolve(run_id, "connect", {"outcome": outcome}, ALICE)["status"] == "completed"
    assert result_of(host, run_id) == outcome
    text = json.dumps(events(host, run_id)).lower()
    for secret in ("gho_secret", "accesstoken", "access_token", "password", "client_secret"):
        assert secret not in text


# -- custom ----------------------------------------------------------------------------------


def test_custom_interrupt_is_persisted_and_resolvable(make_host: HostFactory) -> None:
    host = make_host()
    run_id, snapshot = start(host, custom_graph())
    assert snapshot["status"] == "waiting-input"
    gate = only_pending(host, run_id)
    assert gate.kind == "custom"
    assert gate.payload["data"] == {"customKind": "acme.review-sheet", "payload": {"sheet": 7}}

    # Persisted: a fresh host over the same database sees it and resolves it.
    other = make_host()
    other.register(snapshot["workflowId"], custom_graph())
    assert only_pending(other, run_id).key == gate.key
    before = footprint(other, run_id)
    with pytest.raises(ValidationError):
        other.resolve(run_id, "custom", {"ok": "yes"}, ALICE)
    assert footprint(other, run_id) == before
    assert other.resolve(run_id, "custom", {"ok": True}, ALICE)["status"] == "completed"
    assert result_of(other, run_id) == {"ok": True}


def test_an_explicit_threshold_argument_wins(host: WopHost) -> None:
    run_id, snapshot = start(host, low_confidence_graph(threshold=0.3), {"decision": "d", "confidence": 0.5})
    assert snapshot["status"] == "completed"
    run_id, snapshot = start(host, low_confidence_graph(threshold=0.6), {"decision": "d", "confidence": 0.5})
    assert snapshot["status"] == "waiting-approval"
    assert only_pending(host, run_id).payload["data"]["threshold"] == 0.6


# -- values that are not JSON -----------------------------------------------------------------


def test_inputs_that_are_not_json_are_refused(host: WopHost) -> None:
    host.register("lc", low_confidence_graph())
    for bad in ({"decision": "d", "confidence": float("nan")}, {"decision": "d", "confidence": float("inf")}):
        with pytest.raises(ValidationError):
            host.create_run("lc", bad, owner=ALICE)
    assert all_run_ids(host) == []


def test_resume_values_that_are_not_json_are_refused(host: WopHost) -> None:
    run_id, _ = start(host, external_event_graph())
    before = footprint(host, run_id)
    with pytest.raises(ValidationError):
        host.resolve(run_id, "wait", {"orderId": "o-1", "amount": float("nan")}, ALICE)
    assert footprint(host, run_id) == before
