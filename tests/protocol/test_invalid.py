"""Invalid documents: our models and the official schemas refuse them alike.

``BOTH_REFUSE`` is the main table: every row is refused by our model AND by the official schema
(and by the contract we generate into ``schemas/``). ``ONLY_PROSE`` lists the rules the official
schemas state only in prose (or that we add on purpose): our models refuse, the official JSON
Schema accepts, and the test pins that so a future official schema that starts encoding the
rule is noticed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.official import event_errors, format_checker, official_errors, payload_errors
from tests.protocol.cases import (
    APPROVAL,
    CLARIFICATION,
    CONVERSATION_EXCHANGE,
    CONVERSATION_START,
    CREDENTIAL,
    CUSTOM,
    ENVELOPE,
    EVENT,
    EXTERNAL_EVENT,
    LOW_CONFIDENCE,
    RESOLVED,
    RUN_ID,
    SUBJECT,
    changed,
    without,
)
from wop_langgraph.protocol import (
    ErrorEnvelope,
    RunEvent,
    ValidationError,
    parse_event_payload,
    parse_interrupt_payload,
)

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
TURN_AGENT_NO_SPEAKER = {
    "messageId": "m1",
    "from": "a1",
    "content": "hi",
    "ts": 1,
    "role": "agent",
    "turnIndex": 0,
}


def _ours(target: str) -> Callable[[Any], object]:
    if target == "payload":
        return parse_interrupt_payload
    if target == "envelope":
        return ErrorEnvelope.from_wire
    if target == "run-event":
        return RunEvent.from_wire
    event_type = target.removeprefix("event:")
    return lambda doc: parse_event_payload(event_type, doc)


def _official(target: str, doc: Any) -> list[str]:
    if target == "payload":
        return official_errors("suspend-request.schema.json", doc)
    if target == "envelope":
        return official_errors("error-envelope.schema.json", doc)
    if target == "run-event":
        return event_errors(doc)
    return payload_errors(target.removeprefix("event:"), doc)


@cache
def _generated(target: str) -> Draft202012Validator:
    name = {
        "payload": "interrupt-payload.schema.json",
        "envelope": "error-envelope.schema.json",
        "run-event": "run-event.schema.json",
    }.get(target) or f"events/{target.removeprefix('event:')}.schema.json"
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return Draft202012Validator(schema, format_checker=format_checker())


def row(target: str, doc: Any, name: str, *, generated: bool = True) -> Any:
    return pytest.param(target, doc, generated, id=f"{target}:{name}")


A, D = APPROVAL, "data"
BOTH_REFUSE = [
    # another kind's data
    row("payload", {**APPROVAL, "data": CLARIFICATION["data"]}, "approval-with-clarification-data"),
    row("payload", {**CLARIFICATION, "data": APPROVAL["data"]}, "clarification-with-approval-data"),
    row("payload", {**LOW_CONFIDENCE, "data": CUSTOM["data"]}, "low-confidence-with-custom-data"),
    row("payload", {**CONVERSATION_START, "data": CONVERSATION_EXCHANGE["data"]}, "start-with-exchange-data"),
    row("payload", {**CREDENTIAL, "data": APPROVAL["data"]}, "credential-with-approval-data"),
    row("payload", {**EXTERNAL_EVENT, "data": {"customKind": "x"}}, "external-event-with-custom-data"),
    # extra members at every level
    row("payload", changed(A, "interruptId", "acme/i-0123456789abcdef"), "extra-interruptId"),
    row("payload", changed(A, "nodeId", "gate"), "extra-nodeId"),
    row("payload", changed(A, "data/owner", "bob"), "extra-in-approval-data"),
    row("payload", changed(A, "data/audience", {"subjects": ["s"], "teams": ["t"]}), "extra-in-audience"),
    row("payload", changed(CLARIFICATION, "data/questions/0/hint", "h"), "extra-in-question"),
    row("payload", changed(CREDENTIAL, "data/token", "secret"), "extra-in-credential-data"),
    row("payload", changed(EXTERNAL_EVENT, "data/token", "t"), "extra-in-external-event-data"),
    row("payload", changed(LOW_CONFIDENCE, "data/x-note", "n"), "hatch-key-not-admitted-in-payload"),
    # actions
    row("payload", changed(A, "data/actions", []), "empty-actions"),
    row("payload", changed(A, "data/actions", ["approve"]), "unknown-action"),
    row("payload", changed(A, "data/actions", ["accept", "reject", "accept"]), "duplicate-actions"),
    row("payload", changed(A, "data/actions", ["accept", "timeout"]), "timeout-as-action"),
    row("payload", changed(A, "data/actions", "accept"), "actions-not-a-list"),
    # key, kind, data, timeoutMs, resumeSchema
    row("payload", changed(A, "key", ""), "empty-key"),
    row("payload", changed(A, "key", "k" * 257), "key-over-256"),
    row("payload", without(A, "key"), "missing-key"),
    row("payload", without(A, "data"), "missing-data"),
    row("payload", without(A, "kind"), "missing-kind"),
    row("payload", changed(A, "kind", "approvals"), "unknown-kind"),
    row("payload", changed(A, "data", None), "data-null"),
    row("payload", changed(A, "timeoutMs", -1), "negative-timeoutMs"),
    row("payload", changed(A, "timeoutMs", 1.5), "fractional-timeoutMs"),
    row("payload", changed(A, "timeoutMs", "100"), "string-timeoutMs"),
    row("payload", changed(A, "resumeSchema", [{"type": "object"}]), "resumeSchema-not-object"),
    row("payload", changed(A, "data/description", None), "null-optional-member"),
    row("payload", {**CUSTOM, "data": {"custom_kind": "x"}}, "python-name-instead-of-wire-name"),
    row("payload", changed(A, "timeout_ms", 5), "python-name-top-level"),
    # approval data bounds
    row("payload", changed(A, "data/artifactId", ""), "empty-artifactId"),
    row("payload", without(A, "data/title"), "missing-title"),
    row("payload", changed(A, "data/requiredApprovals", 0), "requiredApprovals-zero"),
    row("payload", changed(A, "data/requiredApprovals", "2"), "requiredApprovals-string"),
    row("payload", changed(A, "data/rejectionPolicy", "unanimous"), "unknown-rejectionPolicy"),
    row("payload", changed(A, "data/onTimeout", "extend"), "unknown-onTimeout"),
    row("payload", changed(A, "data/overrideBypassesQuorum", "yes"), "overrideBypassesQuorum-string"),
    row("payload", changed(A, "data/approversList", [1]), "approversList-number"),
    # clarification, external event, custom, conversations
    row("payload", changed(CLARIFICATION, "data/questions", []), "empty-questions"),
    row("payload", changed(CLARIFICATION, "data/questions/0/id", ""), "empty-question-id"),
    row("payload", without(CLARIFICATION, "data/questions/0/question"), "missing-question-text"),
    row("payload", changed(EXTERNAL_EVENT, "data/correlation", "o-1"), "correlation-not-object"),
    row("payload", changed(EXTERNAL_EVENT, "data/eventType", 7), "eventType-number"),
    row("payload", changed(CUSTOM, "data/customKind", ""), "empty-customKind"),
    row("payload", changed(CONVERSATION_START, "data/conversationId", "c" * 257), "conversationId-over-256"),
    row("payload", changed(CONVERSATION_EXCHANGE, "data/prompt", ""), "empty-prompt"),
    row("payload", changed(CONVERSATION_EXCHANGE, "data/turnIndex", -1), "negative-turnIndex"),
    # low confidence
    row("payload", changed(LOW_CONFIDENCE, "data/threshold", 1.01), "threshold-over-1"),
    row("payload", changed(LOW_CONFIDENCE, "data/observed", -0.1), "observed-below-0"),
    row("payload", changed(LOW_CONFIDENCE, "data/threshold", "0.7"), "threshold-string"),
    row("payload", changed(LOW_CONFIDENCE, "data/threshold", True), "threshold-boolean"),
    row("payload", changed(LOW_CONFIDENCE, "data/agentId", "agent one"), "agentId-with-space"),
    row("payload", changed(LOW_CONFIDENCE, "data/agentId", "team/agent"), "agentId-with-slash"),
    row("payload", changed(LOW_CONFIDENCE, "data/agentId", "a" * 129), "agentId-over-128"),
    row("payload", changed(LOW_CONFIDENCE, "data/agentId", ""), "agentId-empty"),
    # credential
    row("payload", without(CREDENTIAL, "resumeSchema"), "credential-without-resumeSchema"),
    row(
        "payload",
        changed(CREDENTIAL, "resumeSchema/properties/outcome/enum", ["authorized"]),
        "credential-other-resumeSchema",
    ),
    row(
        "payload",
        changed(CREDENTIAL, "resumeSchema/title", "Outcome"),
        "credential-resumeSchema-extra-keyword",
    ),
    row(
        "payload", changed(CREDENTIAL, "resumeSchema", {"type": "object"}), "credential-generic-resumeSchema"
    ),
    row("payload", changed(CREDENTIAL, "data/connectUrl", "http://host.example/c"), "credential-http-url"),
    row("payload", changed(CREDENTIAL, "data/reason", "revoked"), "credential-unknown-reason"),
    row("payload", changed(CREDENTIAL, "data/scopes", ["repo", "repo"]), "credential-duplicate-scopes"),
    row("payload", changed(CREDENTIAL, "data/scopes", [""]), "credential-empty-scope"),
    row("payload", without(CREDENTIAL, "data/provider"), "credential-missing-provider"),
    # interrupt.resolved and other event payloads
    row(
        "event:interrupt.resolved",
        changed(RESOLVED, "interruptId", "gate-1-0123456789"),
        "interruptId-not-bound",
    ),
    row(
        "event:interrupt.resolved", changed(RESOLVED, "interruptId", "acme/short"), "interruptId-opaque-short"
    ),
    row("event:interrupt.resolved", without(RESOLVED, "nodeId"), "missing-nodeId"),
    row("event:interrupt.resolved", changed(RESOLVED, "action", "ask"), "action-ask-not-recordable"),
    row("event:interrupt.resolved", changed(RESOLVED, "decision", "approved"), "decision-off-vocabulary"),
    row("event:interrupt.resolved", changed(RESOLVED, "reason", "r" * 65), "reason-over-64"),
    row("event:interrupt.resolved", changed(RESOLVED, "reason", ""), "reason-empty"),
    row("event:interrupt.resolved", changed(RESOLVED, "requestedAt", "2025-06-01T12:00:00Z"), "extra-member"),
    row(
        "event:interrupt.resolved",
        changed(RESOLVED, "refineFeedback", {"scope": "whole", "note": "n"}),
        "refineFeedback-extra-member",
    ),
    row(
        "event:interrupt.resolved",
        changed(RESOLVED, "refineFeedback", {"scope": "page"}),
        "refineFeedback-scope",
    ),
    row("event:interrupt.resolved", changed(RESOLVED, "kind", "approve"), "unknown-kind"),
    row("event:interrupt.resolved", changed(RESOLVED, "resume_value", 1), "python-name-in-hatch-model"),
    row("event:node.suspended", {"nodeId": "gate"}, "suspended-missing-interruptId"),
    row("event:node.suspended", {"nodeId": "gate", "interruptId": RUN_ID, "key": ""}, "suspended-empty-key"),
    row("event:node.failed", {"nodeId": "gate", "error": {"code": "approval_rejected"}}, "failed-no-message"),
    row(
        "event:node.failed", {"nodeId": "gate", "error": {"code": "x", "message": ""}}, "failed-empty-message"
    ),
    row("event:node.failed", {"nodeId": "gate", "error": {"code": "", "message": "m"}}, "failed-empty-code"),
    row(
        "event:node.failed",
        {"nodeId": "gate", "error": {"code": "x", "message": "m"}, "attempts": 0},
        "failed-attempts-zero",
    ),
    row(
        "event:node.failed",
        {"nodeId": "gate", "error": {"code": "x", "message": "m", "stack": "..."}},
        "failed-error-extra-member",
    ),
    row("event:node.started", {"nodeId": "gate"}, "started-missing-typeId"),
    row("event:node.started", {"nodeId": "gate", "typeId": "Gate"}, "started-bad-typeId"),
    row("event:run.completed", {}, "completed-without-outputs"),
    row("event:run.completed", {"outputs": []}, "completed-outputs-list"),
    row("event:run.failed", {"failedNodeId": "gate"}, "run-failed-without-error"),
    row("event:run.started", {"inputs": {}}, "started-without-workflowId"),
    row("event:run.started", {"workflowId": "wf", "transport": "grpc"}, "started-unknown-transport"),
    row("event:run.started", {"workflowId": "wf", "owner": {"tenant": "acme"}}, "owner-without-subject"),
    row(
        "event:run.started",
        {"workflowId": "wf", "owner": {"tenant": "acme", "subject": SUBJECT, "principal": "p"}},
        "owner-extra-member",
    ),
    row("event:run.cancelled", {"parentRunId": "r1"}, "cancelled-bad-parentRunId"),
    row(
        "event:agent.decided", {"agentId": "router", "decision": "a", "confidence": 1.5}, "confidence-over-1"
    ),
    row("event:agent.decided", {"agentId": "router agent", "decision": "a"}, "decided-bad-agentId"),
    row("event:agent.decided", {"agentId": "router"}, "decided-missing-decision"),
    row("event:conversation.exchanged", {"conversationId": "c1"}, "exchanged-missing-turnIndex"),
    row(
        "event:conversation.opened",
        {"conversationId": "c1", "capabilities": ["voice"]},
        "opened-unknown-capability",
    ),
    row(
        "event:conversation.opened",
        {"conversationId": "c1", "initialTurn": TURN_AGENT_NO_SPEAKER},
        "agent-turn-without-speakerId",
    ),
    row("event:conversation.closed", {"conversationId": "c1", "turnCount": -1}, "closed-negative-turnCount"),
    # error envelope
    row("envelope", changed(ENVELOPE, "error", "approval_rejected"), "approval_rejected-is-not-registered"),
    row("envelope", changed(ENVELOPE, "error", "bogus_code"), "unknown-code"),
    row("envelope", changed(ENVELOPE, "error", "openwop.thing"), "openwop-vendor-prefix"),
    row("envelope", changed(ENVELOPE, "message", ""), "empty-message"),
    row("envelope", without(ENVELOPE, "message"), "missing-message"),
    row("envelope", changed(ENVELOPE, "runId", RUN_ID), "context-at-top-level"),
    row(
        "envelope",
        {"error": "unsupported_stream_mode", "message": "m", "details": {}},
        "stream-mode-no-supported",
    ),
    row(
        "envelope",
        {"error": "unsupported_stream_mode", "message": "m", "details": {"supported": ["live"]}},
        "stream-mode-unknown-mode",
    ),
    row(
        "envelope",
        {"error": "run_state_conflict", "message": "m", "details": {"x": 1}},
        "state-conflict-no-status",
    ),
    # run event envelope
    row("run-event", changed(EVENT, "eventId", "short"), "eventId-too-short"),
    row("run-event", changed(EVENT, "sequence", -1), "negative-sequence"),
    row("run-event", changed(EVENT, "schemaVersion", 0), "schemaVersion-zero"),
    row("run-event", changed(EVENT, "type", "openwop.custom"), "reserved-openwop-type"),
    row("run-event", changed(EVENT, "type", "Run.Completed"), "type-not-kebab"),
    row("run-event", changed(EVENT, "timestamp", "yesterday"), "timestamp-not-date-time"),
    row("run-event", changed(EVENT, "timestamp", "2025-02-30T00:00:00Z"), "timestamp-impossible-date"),
    row("run-event", changed(EVENT, "timestamp", "2025-06-01T12:00:00"), "timestamp-without-offset"),
    row("run-event", changed(EVENT, "runId", "r-0123456789abcdef"), "runId-without-tenant"),
    row("run-event", changed(EVENT, "engineVersion", -1), "negative-engineVersion"),
    row("run-event", changed(EVENT, "causationId", "c"), "causationId-too-short"),
    row("run-event", changed(EVENT, "id", "1"), "extra-member"),
    row("run-event", without(EVENT, "payload"), "missing-payload"),
    row("run-event", changed(EVENT, "payload", {}), "payload-not-fitting-type", generated=False),
    row(
        "run-event",
        changed(EVENT, "payload", {"outputs": {}, "output": 1}),
        "payload-extra-member",
        generated=False,
    ),
]


def test_the_table_is_large_enough() -> None:
    assert len(BOTH_REFUSE) >= 30
    assert sum(1 for p in BOTH_REFUSE if p.values[0] == "payload") >= 30


@pytest.mark.parametrize(("target", "doc", "generated"), BOTH_REFUSE)
def test_refused_by_our_models_and_by_the_official_schema(target: str, doc: Any, generated: bool) -> None:
    with pytest.raises(ValidationError) as caught:
        _ours(target)(doc)
    assert caught.value.code == "validation_error"
    assert (
        caught.value.details is not None and "path" in caught.value.details and "rule" in caught.value.details
    )

    assert _official(target, doc), "the official schema accepts this document, so our model should too"

    if generated:
        assert not _generated(target).is_valid(doc), "our generated contract in schemas/ accepts it"


ONLY_PROSE = [
    # interrupt.resolved: the def's description says MUST, its JSON Schema does not encode it.
    row("event:interrupt.resolved", changed(RESOLVED, "action", "refine"), "refine-without-refineFeedback"),
    row(
        "event:interrupt.resolved",
        changed(RESOLVED, "action", "edit-accept"),
        "edit-accept-without-edited-data",
    ),
    # Deliberately stricter: an embedded schema must be a usable JSON Schema.
    row("payload", changed(APPROVAL, "resumeSchema", {"type": 5}), "resumeSchema-not-a-json-schema"),
    row(
        "payload",
        changed(CLARIFICATION, "data/questions/0/schema", {"minLength": -1}),
        "question-schema-not-a-json-schema",
    ),
    # Deliberately stricter: `format: uri` is not asserted by the judge; we refuse a URL with no host.
    row("payload", changed(CREDENTIAL, "data/connectUrl", "https://"), "connectUrl-without-host"),
    # Envelope nodeId and payload nodeId must agree (the suite reads either).
    row(
        "run-event",
        {**EVENT, "type": "node.completed", "nodeId": "a", "payload": {"nodeId": "b"}},
        "nodeId-disagrees",
    ),
]


@pytest.mark.parametrize(("target", "doc", "generated"), ONLY_PROSE)
def test_rules_stated_only_in_prose_are_ours_alone(target: str, doc: Any, generated: bool) -> None:
    with pytest.raises(ValidationError):
        _ours(target)(doc)
    assert not _official(target, doc), (
        "the official schema now encodes this rule: move the row to BOTH_REFUSE"
    )
