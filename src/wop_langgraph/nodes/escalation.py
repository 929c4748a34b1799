"""``escalate_on_low_confidence``: let an agent decide, and ask a person when it is unsure."""

from __future__ import annotations

import math
from typing import Any

from wop_langgraph.nodes._context import current_call
from wop_langgraph.nodes._suspend import suspend
from wop_langgraph.nodes.questions import _answered

__all__ = ["LOW_CONFIDENCE_RESUME_SCHEMA", "escalate_on_low_confidence"]

#: How a person answers a low-confidence escalation: ``{}`` or ``{"ratify": true}`` keeps the
#: agent's decision, ``{"decision": X}`` replaces it.
LOW_CONFIDENCE_RESUME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"decision": {}, "ratify": {"type": "boolean"}, "feedback": {"type": "string"}},
}


def escalate_on_low_confidence(
    agent_id: str,
    decision: Any,
    confidence: float | None,
    threshold: float | None = None,
    *,
    decision_schema: dict[str, Any] | None = None,
) -> Any:
    """Record the agent's decision; below the threshold, suspend for a person to ratify or replace it.

    Always appends ``agent.decided {agentId, decision, confidence}`` (outside the host: writes
    it to LangGraph's ``custom`` stream). A confidence strictly below the threshold (the
    argument, else the run's ``configurable.run.escalationThreshold`` -- outside the host,
    LangGraph's ``config["configurable"]["run"]["escalationThreshold"]`` -- else 0.7) suspends
    with a ``low-confidence`` interrupt; at or above it, or when the confidence is absent or
    not finite, the decision is returned at once.

    ``decision_schema``: the JSON Schema a person's replacement decision must satisfy (a resume
    that does not is refused with ``validation_error`` and changes nothing); any value otherwise.

    Returns:
        The agent's decision, or the person's replacement.
    """
    call = current_call()
    limit = call.escalation_threshold() if threshold is None else threshold
    if not 0.0 <= limit <= 1.0:
        raise ValueError("a confidence threshold is a number from 0 to 1")
    decided: dict[str, Any] = {"agentId": agent_id, "decision": decision}
    finite = confidence is not None and math.isfinite(confidence)
    if finite:
        decided["confidence"] = confidence
    call.emit("agent.decided", decided, discriminator=[agent_id, decision, confidence])
    if not finite or confidence is None or confidence >= limit:
        return decision
    data = {"agentId": agent_id, "threshold": limit, "observed": confidence, "decision": decision}
    schema = LOW_CONFIDENCE_RESUME_SCHEMA
    if decision_schema is not None:
        schema = {**schema, "properties": {**schema["properties"], "decision": decision_schema}}
    answer = _answered(suspend("low-confidence", data, resume_schema=schema, call=call))
    value = answer.resume_value or {}
    return value.get("decision", decision)
