"""Read-only checks of a resume value against the interrupt it answers, before anything is written.

Each check raises :class:`~wop_langgraph.protocol.errors.ValidationError` naming the failing
member; nothing here touches the store, so a refused value changes nothing. The host's resolver
(through each kind's declaration, :mod:`wop_langgraph.kinds`) and the node API outside the host
(a plain ``Command(resume=...)``, through :data:`RESUME_RULES`) both call these, so a value is
judged the same way wherever the graph runs.

An approval resume without ``decidedAt`` is stamped with the time it was received (the
conformance suite's resolvers send ``{action}`` alone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from wop_langgraph._clock import iso_z
from wop_langgraph.protocol.approval import ApprovalResume, parse_approval_resume
from wop_langgraph.protocol.conversation import ConversationTurn
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.jsonschema_check import validate_against_schema

__all__ = [
    "RESUME_RULES",
    "ResumeRule",
    "check_approval",
    "check_clarification",
    "check_conversation_turn",
    "check_exchange",
    "check_external_event",
    "check_with_rule",
    "no_rule",
]


ResumeRule = Callable[[Mapping[str, Any], Any, datetime], ApprovalResume | None]
"""One kind's own check of a resume value (``payload``, ``value``, ``received_at``), before the
payload's ``resumeSchema``: ``None``, or the parsed vote when the kind is decided by a quorum."""


def check_with_rule(
    rule: ResumeRule, payload: Mapping[str, Any], value: Any, received_at: datetime
) -> ApprovalResume | None:
    """``rule`` on ``value``, then the payload's ``resumeSchema`` (every kind honours it)."""
    parsed = rule(payload, value, received_at)
    if payload.get("resumeSchema") is not None:
        validate_against_schema(value, payload["resumeSchema"], what="resumeValue")
    return parsed


def no_rule(payload: Mapping[str, Any], value: Any, received_at: datetime) -> None:
    """A kind with no rule of its own: only its ``resumeSchema`` judges the value."""
    return None


def check_approval(payload: Mapping[str, Any], value: Any, received_at: datetime) -> ApprovalResume:
    """An approval's vote: one of the gate's own ``actions``, then the approval resume shape."""
    actions = payload["data"]["actions"]
    action = value.get("action") if isinstance(value, dict) else None
    if isinstance(action, str) and action not in actions:
        # Checked first: the gate's own actions, not every action the protocol knows.
        raise ValidationError(
            f"action {action!r} is not allowed here; allowed: {', '.join(actions)}",
            details={"path": "/resumeValue/action", "rule": "enum", "allowed": list(actions)},
        )
    return parse_approval_resume(value, default_decided_at=iso_z(received_at))


def check_clarification(payload: Mapping[str, Any], value: Any, received_at: datetime) -> None:
    """Every question answered (and no other), each answer fitting its question's ``schema``."""
    _check_answers(payload["data"]["questions"], value)


def check_external_event(payload: Mapping[str, Any], value: Any, received_at: datetime) -> None:
    """The event is an object matching the interrupt's ``correlation`` members."""
    _check_correlation(payload["data"].get("correlation", {}), value)


def check_conversation_turn(payload: Mapping[str, Any], value: Any, received_at: datetime) -> None:
    """The other party joins, or confirms the close, with their turn (conversation-turn.schema.json)."""
    ConversationTurn.from_wire(value, what=f"resumeValue (the {payload['kind']} turn)")


def check_exchange(payload: Mapping[str, Any], value: Any, received_at: datetime) -> None:
    """An exchange's answer fits its ``outcomeSchema``, if it has one."""
    schema = payload["data"].get("outcomeSchema")
    if schema is not None:
        validate_against_schema(value, schema, what="resumeValue (the exchange's outcomeSchema)")


RESUME_RULES: Final[Mapping[str, ResumeRule]] = {
    "approval": check_approval,
    "clarification": check_clarification,
    "external-event": check_external_event,
    "conversation.start": check_conversation_turn,
    "conversation.close": check_conversation_turn,
    "conversation.exchange": check_exchange,
}
"""The rule of each specified kind that has one (the others: ``resumeSchema`` only); the
interrupt-kind registry (:mod:`wop_langgraph.kinds`) declares the same functions."""


def _check_answers(questions: list[dict[str, Any]], value: Any) -> None:
    if not isinstance(value, dict) or not isinstance(value.get("answers"), dict):
        raise ValidationError(
            "a clarification is answered with {answers: {<questionId>: <answer>}}",
            details={"path": "/resumeValue/answers"},
        )
    answers: dict[str, Any] = value["answers"]
    known = {q["id"] for q in questions}
    unknown = sorted(set(answers) - known)
    if unknown:
        raise ValidationError(
            f"no such question: {', '.join(unknown)}", details={"path": f"/resumeValue/answers/{unknown[0]}"}
        )
    for question in questions:
        qid = question["id"]
        if qid not in answers:
            raise ValidationError(
                f"question {qid!r} is not answered", details={"path": f"/resumeValue/answers/{qid}"}
            )
        if question.get("schema") is not None:
            validate_against_schema(answers[qid], question["schema"], what=f"the answer to question {qid!r}")


def _check_correlation(correlation: Mapping[str, Any], value: Any) -> None:
    if not isinstance(value, dict):
        raise ValidationError(
            "an external event is delivered as a JSON object", details={"path": "/resumeValue"}
        )
    for name, expected in correlation.items():
        if value.get(name) != expected:
            raise ValidationError(
                f"the event does not match the correlation member {name!r}",
                details={"path": f"/resumeValue/{name}", "expected": expected},
            )
