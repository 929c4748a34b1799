"""Read-only checks of a resume value against the interrupt it answers, before anything is written.

Each check raises :class:`~wop_langgraph.protocol.errors.ValidationError` naming the failing
member; nothing here touches the store, so a refused value changes nothing. The host's resolver
and the node API outside the host (a plain ``Command(resume=...)``) both call these, so a
value is judged the same way wherever the graph runs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from wop_langgraph._clock import iso_z
from wop_langgraph.protocol.approval import ApprovalResume, parse_approval_resume
from wop_langgraph.protocol.conversation import ConversationTurn
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.jsonschema_check import validate_against_schema

__all__ = ["check_resume_value"]


def check_resume_value(
    payload: dict[str, Any], value: Any, *, received_at: datetime
) -> ApprovalResume | None:
    """Validate ``value`` as the resume of the interrupt ``payload``.

    Returns the parsed approval resume for approval interrupts, ``None`` for the other kinds.
    An approval resume without ``decidedAt`` is stamped with ``received_at`` (the conformance
    suite's resolvers send ``{action}`` alone).
    """
    kind = payload["kind"]
    data = payload.get("data", {})
    parsed: ApprovalResume | None = None
    if kind == "approval":
        action = value.get("action") if isinstance(value, dict) else None
        if isinstance(action, str) and action not in data["actions"]:
            # Checked first: the gate's own actions, not every action the protocol knows.
            raise ValidationError(
                f"action {action!r} is not allowed here; allowed: {', '.join(data['actions'])}",
                details={"path": "/resumeValue/action", "rule": "enum", "allowed": list(data["actions"])},
            )
        parsed = parse_approval_resume(value, default_decided_at=iso_z(received_at))
    elif kind == "clarification":
        _check_answers(data["questions"], value)
    elif kind == "external-event":
        _check_correlation(data.get("correlation", {}), value)
    elif kind in ("conversation.start", "conversation.close"):
        # The other party joins, or confirms the close, with their turn (conversation-turn.schema.json).
        ConversationTurn.from_wire(value, what=f"resumeValue (the {kind} turn)")
    elif kind == "conversation.exchange" and data.get("outcomeSchema") is not None:
        validate_against_schema(
            value, data["outcomeSchema"], what="resumeValue (the exchange's outcomeSchema)"
        )
    if payload.get("resumeSchema") is not None:
        validate_against_schema(value, payload["resumeSchema"], what="resumeValue")
    return parsed


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


def _check_correlation(correlation: dict[str, Any], value: Any) -> None:
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
