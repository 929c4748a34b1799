"""Run events: every payload the project emits, in its envelope, passes the official schemas."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.official import official_schema, payload_errors, validate_event, validate_official
from tests.protocol.cases import ALL_PAYLOADS, INTERRUPT_ID, RUN_ID, SUBJECT
from tests.protocol.strategies import EVENT_PAYLOADS, PAYLOADS
from wop_langgraph.protocol import (
    EVENT_PAYLOAD_MODELS,
    AgentDecided,
    AgentRef,
    ConversationClosed,
    ConversationExchanged,
    ConversationOpened,
    ConversationTurn,
    ErrorObject,
    InterruptResolved,
    NodeCompleted,
    NodeFailed,
    NodeResumed,
    NodeStarted,
    NodeSuspended,
    RefineFeedback,
    RunCancelled,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunOwner,
    RunStarted,
    Subject,
    ValidationError,
    WopError,
    is_event_type,
    make_event,
    parse_event_payload,
    parse_interrupt_payload,
)
from wop_langgraph.protocol.errors import ApprovalRejected

PAYLOADS_FILE = "run-event-payloads.schema.json"
AT = "2025-06-01T12:00:00.250Z"
SUBJECT_MODEL = Subject.from_wire(SUBJECT)
TURN = ConversationTurn(
    message_id="c1:0:agent",
    from_="router",
    content={"text": "hi"},
    ts=1,
    role="agent",
    turn_index=0,
    speaker_id="r1",
)


def _event(event_type: str, payload: Any, sequence: int = 0, **kwargs: Any) -> RunEvent:
    return make_event(
        event_type,
        payload,
        event_id=f"ev-{sequence:04d}-0123456789ab",
        run_id=RUN_ID,
        sequence=sequence,
        timestamp=AT,
        **kwargs,
    )


SAMPLES: list[tuple[str, Any]] = [
    *(("interrupt.requested", parse_interrupt_payload(doc)) for doc in ALL_PAYLOADS),
    (
        "interrupt.resolved",
        InterruptResolved(
            node_id="gate",
            interrupt_id=INTERRUPT_ID,
            kind="approval",
            resume_value={"action": "accept", "decidedAt": AT},
            resolved_by=SUBJECT_MODEL,
            decision="granted",
            action="accept",
        ),
    ),
    (
        "interrupt.resolved",
        InterruptResolved(
            node_id="gate",
            interrupt_id=INTERRUPT_ID,
            kind="approval",
            decision="rejected",
            action="timeout",
            reason="timeout",
        ),
    ),
    (
        "interrupt.resolved",
        InterruptResolved(
            node_id="gate",
            interrupt_id=INTERRUPT_ID,
            action="refine",
            decision="rejected",
            refine_feedback=RefineFeedback(scope="section", section_path="$.intro", text="shorter"),
        ),
    ),
    (
        "interrupt.resolved",
        InterruptResolved(
            node_id="gate", interrupt_id=INTERRUPT_ID, action="edit-accept", edited_artifact_data=None
        ),
    ),
    ("interrupt.resolved", InterruptResolved(node_id="ask", interrupt_id=INTERRUPT_ID, resume_value=None)),
    ("node.suspended", NodeSuspended(node_id="gate", interrupt_id=INTERRUPT_ID, kind="approval", key="k:0")),
    ("node.suspended", NodeSuspended(node_id="router", interrupt_id=INTERRUPT_ID, reason="low-confidence")),
    ("node.started", NodeStarted(node_id="gate", type_id="langgraph.node", attempt=0)),
    ("node.completed", NodeCompleted(node_id="gate", outputs={"ok": True}, duration_ms=12)),
    (
        "node.failed",
        NodeFailed(node_id="gate", error=ErrorObject.from_error(ApprovalRejected("gate rejected"))),
    ),
    (
        "node.resumed",
        NodeResumed(node_id="gate", interrupt_id=INTERRUPT_ID, resume_value={"answers": {"q1": "blue"}}),
    ),
    (
        "run.started",
        RunStarted(
            workflow_id="review:v1",
            inputs={"doc": "d1"},
            transport="rest",
            owner=RunOwner(tenant="acme", workspace="ws1", subject=SUBJECT_MODEL),
            tags=["t"],
        ),
    ),
    ("run.completed", RunCompleted(outputs={})),
    (
        "run.failed",
        RunFailed(error=ErrorObject.from_error(ApprovalRejected("gate rejected")), failed_node_id="gate"),
    ),
    ("run.cancelled", RunCancelled(reason="parent-cancelled", parent_run_id="acme/r-fedcba9876543210")),
    ("agent.decided", AgentDecided(agent_id="router", decision=None, confidence=0.4)),
    (
        "conversation.opened",
        ConversationOpened(
            conversation_id="c1",
            agent_id="router",
            participants=[AgentRef(agent_id="host:a1", name="A")],
            initial_turn=TURN,
            capabilities=["multi-turn"],
        ),
    ),
    (
        "conversation.exchanged",
        ConversationExchanged(conversation_id="c1", turn_index=1, turn=TURN, outcome=None),
    ),
    ("conversation.closed", ConversationClosed(conversation_id="c1", reason="goal-reached", turn_count=2)),
]


def test_every_modelled_type_is_in_the_normative_type_index() -> None:
    index = official_schema(PAYLOADS_FILE)["_typeIndex"]["properties"]
    for event_type in EVENT_PAYLOAD_MODELS:
        assert event_type in index, event_type
        assert is_event_type(event_type)


def test_legacy_aliases_share_the_canonical_payloads() -> None:
    defs = official_schema(PAYLOADS_FILE)["$defs"]
    index = official_schema(PAYLOADS_FILE)["_typeIndex"]["properties"]
    for alias in ("approval.requested", "clarification.requested"):
        assert defs[index[alias]["$ref"].rsplit("/", 1)[1]]["$ref"] == "#/$defs/interruptRequested"
        assert EVENT_PAYLOAD_MODELS[alias] == EVENT_PAYLOAD_MODELS["interrupt.requested"]
    for alias in ("approval.received", "approval.granted", "approval.rejected", "approval.overridden"):
        assert defs[index[alias]["$ref"].rsplit("/", 1)[1]]["$ref"] == "#/$defs/interruptResolved"
        assert EVENT_PAYLOAD_MODELS[alias] == (InterruptResolved,)


def test_samples_cover_every_canonical_type() -> None:
    aliases = {"approval", "clarification"}
    canonical = {t for t in EVENT_PAYLOAD_MODELS if t.split(".")[0] not in aliases}
    assert {t for t, _ in SAMPLES} == canonical


@pytest.mark.parametrize(
    ("event_type", "payload"), SAMPLES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(SAMPLES)]
)
def test_emitted_events_pass_the_official_schemas(event_type: str, payload: Any) -> None:
    event = _event(event_type, payload, sequence=3, causation_id="ev-0002-0123456789ab", engine_version=1)
    doc = event.to_wire()
    validate_event(doc)
    assert RunEvent.from_wire(copy.deepcopy(doc)).to_wire() == doc
    assert event.typed_payload() == payload
    node_id = getattr(payload, "node_id", None)
    assert doc.get("nodeId") == node_id  # node-scoped events carry nodeId on the envelope too


def test_legacy_alias_events_pass_too() -> None:
    requested = parse_interrupt_payload(ALL_PAYLOADS[0])
    validate_event(_event("approval.requested", requested, node_id="gate").to_wire())
    resolved = InterruptResolved(
        node_id="gate", interrupt_id=INTERRUPT_ID, decision="rejected", action="reject"
    )
    validate_event(_event("approval.rejected", resolved).to_wire())


@pytest.mark.parametrize("event_type", sorted(EVENT_PAYLOADS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_generated_event_payloads_agree_with_the_official_defs(event_type: str, data: st.DataObject) -> None:
    doc = data.draw(EVENT_PAYLOADS[event_type], label="payload")
    assert not payload_errors(event_type, doc), payload_errors(event_type, doc)
    model = parse_event_payload(event_type, doc)
    assert model.to_wire() == doc  # extension members are carried, never dropped


@pytest.mark.parametrize("kind", sorted(PAYLOADS))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_interrupt_requested_through_the_type_index(kind: str, data: st.DataObject) -> None:
    doc = data.draw(PAYLOADS[kind], label="payload")
    event = _event("interrupt.requested", parse_interrupt_payload(doc), node_id="gate")
    validate_event(event.to_wire())


def test_hatch_members_are_carried_opaquely() -> None:
    doc = {"nodeId": "gate", "interruptId": INTERRUPT_ID, "x-trace": None, "vendor.acme": {"a": [1]}}
    model = parse_event_payload("node.suspended", doc)
    assert isinstance(model, NodeSuspended)
    assert model.extensions == {"x-trace": None, "vendor.acme": {"a": [1]}}
    assert model.to_wire() == doc
    assert not payload_errors("node.suspended", doc)


def test_node_failed_error_code_is_open_but_envelope_code_is_not() -> None:
    # `approval_rejected` is used in events' error objects although no registry lists it.
    error_object = ErrorObject.from_error(ApprovalRejected("rejected"))
    assert error_object.to_wire() == {"code": "approval_rejected", "message": "rejected", "retryable": False}
    validate_official(PAYLOADS_FILE, error_object.to_wire(), def_name="_errorObject")


def test_make_event_refuses_a_payload_of_another_type() -> None:
    with pytest.raises(ValidationError, match=r"not a payload of 'run\.completed'"):
        _event("run.completed", RunCancelled())
    with pytest.raises(ValidationError):
        _event("acme.custom", RunCompleted(outputs={}))
    with pytest.raises(ValidationError, match="nodeId"):
        _event("node.completed", NodeCompleted(node_id="a"), node_id="b")


def test_make_event_checks_the_envelope_grammar() -> None:
    with pytest.raises(ValidationError) as caught:
        make_event(
            "run.completed", RunCompleted(outputs={}), event_id="e1", run_id=RUN_ID, sequence=0, timestamp=AT
        )
    assert caught.value.details is not None and caught.value.details["path"] == "/eventId"


def test_unknown_and_vendor_types_are_carried_with_any_payload() -> None:
    doc = {
        "eventId": "ev-0123456789abcdef",
        "runId": RUN_ID,
        "type": "acme.audit.logged",
        "payload": ["anything", 1],
        "timestamp": AT,
        "sequence": 9,
        "schemaVersion": 1,
    }
    event = RunEvent.from_wire(doc)
    assert event.to_wire() == doc
    validate_event(doc)
    with pytest.raises(ValidationError):
        event.typed_payload()


def test_envelope_payload_errors_point_into_the_payload() -> None:
    doc = {
        "eventId": "ev-0123456789abcdef",
        "runId": RUN_ID,
        "type": "interrupt.requested",
        "payload": {
            "kind": "approval",
            "key": "k",
            "data": {"artifactId": "a", "artifactType": "t", "title": "T"},
        },
        "timestamp": AT,
        "sequence": 0,
        "schemaVersion": 1,
    }
    with pytest.raises(ValidationError) as caught:
        RunEvent.from_wire(doc)
    assert caught.value.details is not None
    assert caught.value.details["path"] == "/payload/data/actions"
    assert caught.value.details["rule"] == "required"


def test_every_wop_error_can_fill_an_error_object() -> None:
    def subclasses(cls: type[WopError]) -> list[type[WopError]]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    for cls in subclasses(WopError):
        payload = NodeFailed(node_id="n", error=ErrorObject.from_error(cls("it failed")), attempts=1)
        validate_event(_event("node.failed", payload).to_wire())
