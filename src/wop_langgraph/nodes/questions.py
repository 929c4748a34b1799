"""Node calls that wait for input: clarifications, external events, credentials, custom kinds.

A ``timeout`` is enforced by the host (the node then fails with ``interrupt_expired``); outside
the host it is carried in the payload as ``timeoutMs`` and nothing enforces it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from wop_langgraph.nodes.context import current_call
from wop_langgraph.nodes.suspend import Delivery, suspend
from wop_langgraph.protocol.errors import CapabilityRequired, InterruptExpired
from wop_langgraph.protocol.resume_check import ResumeRule

__all__ = ["CREDENTIAL_RESUME_SCHEMA", "ask", "custom_interrupt", "request_credential", "wait_for_event"]

#: The fixed resume schema of a credential interrupt (suspend-request.schema.json).
CREDENTIAL_RESUME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["outcome"],
    "properties": {"outcome": {"enum": ["authorized", "declined"]}},
}


def ask(
    questions: Sequence[Mapping[str, Any]],
    *,
    context_type: str | None = None,
    timeout: timedelta | float | None = None,
) -> dict[str, Any]:
    """Ask clarification questions; returns ``{questionId: answer}``.

    Each question is ``{"id", "question", "schema"?}``; every answer is validated against its
    question's schema before the node resumes.
    """
    data: dict[str, Any] = {"questions": [dict(q) for q in questions]}
    if context_type is not None:
        data["contextType"] = context_type
    delivery = _answered(suspend("clarification", data, timeout=timeout))
    answers: dict[str, Any] = delivery.resume_value["answers"]
    return answers


def wait_for_event(
    event_type: str, correlation: Mapping[str, Any], *, timeout: timedelta | float | None = None
) -> dict[str, Any]:
    """Wait for an external event whose members match ``correlation``; returns the event."""
    data = {"eventType": event_type, "correlation": dict(correlation)}
    event: dict[str, Any] = _answered(suspend("external-event", data, timeout=timeout)).resume_value
    return event


def custom_interrupt(
    custom_kind: str,
    payload: Any = None,
    *,
    resume_schema: dict[str, Any] | None = None,
    timeout: timedelta | float | None = None,
    resume_rule: ResumeRule | None = None,
) -> Any:
    """Suspend with a ``custom`` interrupt; returns the resume value (checked by ``resume_schema``).

    ``resume_rule``: the rule of the kind registered for ``custom_kind`` (the host applies it
    from its registry; outside the host, this is how the same rule applies).
    """
    data: dict[str, Any] = {"customKind": custom_kind}
    if payload is not None:
        data["payload"] = payload
    delivery = suspend("custom", data, resume_schema=resume_schema, timeout=timeout, resume_rule=resume_rule)
    return _answered(delivery).resume_value


def request_credential(
    provider: str,
    scopes: Sequence[str],
    reason: str,
    connect_url: str,
    *,
    credential_ref: Mapping[str, Any] | None = None,
    timeout: timedelta | float | None = None,
) -> str:
    """Ask a person to connect a credential; returns ``authorized`` or ``declined``.

    The interrupt carries no credential material: only where to connect and why
    (``credential_ref`` is a credential-reference object, e.g. ``{"id": "gh-1"}``). Off unless
    the host enables credentials; outside the host (plain LangGraph) always available.
    """
    call = current_call()
    if call.context is not None and not call.context.credentials:
        raise CapabilityRequired(
            "credential interrupts are not enabled on this host (WopHost(credentials=True))",
            details={"capability": "oauth.credentialInterrupt"},
        )
    data: dict[str, Any] = {
        "provider": provider,
        "scopes": list(scopes),
        "reason": reason,
        "connectUrl": connect_url,
    }
    if credential_ref is not None:
        data["credentialRef"] = dict(credential_ref)
    delivery = suspend("credential", data, resume_schema=CREDENTIAL_RESUME_SCHEMA, timeout=timeout, call=call)
    outcome: str = _answered(delivery).resume_value["outcome"]
    return outcome


def _answered(delivery: Delivery) -> Delivery:
    """The delivery, unless the interrupt timed out (then the node fails: nobody answered)."""
    if delivery.status == "expired":
        raise InterruptExpired(
            "nobody answered before the interrupt's timeout", details={"reason": "timeout"}
        )
    return delivery
