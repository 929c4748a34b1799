"""``escalate_on_low_confidence``: let an agent decide, and ask a person when it is unsure."""

from __future__ import annotations

import math
from typing import Any

from wop_langgraph.nodes.context import current_call, stable_id
from wop_langgraph.nodes.questions import _answered
from wop_langgraph.nodes.suspend import suspend

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
    audit_rate: float = 0.0,
) -> Any:
    """Record the agent's decision; below the threshold, suspend for a person to ratify or replace it.

    Always appends ``agent.decided {agentId, decision, confidence}`` (outside the host: writes
    it to LangGraph's ``custom`` stream). A confidence strictly below the threshold (the
    argument, else the run's ``configurable.run.escalationThreshold`` -- outside the host,
    LangGraph's ``config["configurable"]["run"]["escalationThreshold"]`` -- else 0.7) suspends
    with a ``low-confidence`` interrupt; at or above it, or when the confidence is absent or
    not finite, the decision is returned at once.

    ``audit_rate``: the share of confident decisions (at or above the threshold, with a finite
    confidence) that are *also* sent to a person, as a random audit sample for calibrating the
    threshold (:func:`wop_langgraph.analysis.calibration`). An audit sample is the same
    ``low-confidence`` interrupt, told apart in the log by its data: ``observed`` is at or above
    ``threshold`` (an escalation always has ``observed`` below it). The draw is not a fresh
    random number but a hash of the run id, the task namespace and the decision, so LangGraph
    re-running the node on resume draws the same answer; different runs draw independently.
    Default 0: no decision at or above the threshold ever suspends.

    ``decision_schema``: the JSON Schema a person's replacement decision must satisfy (a resume
    that does not is refused with ``validation_error`` and changes nothing); any value otherwise.

    Returns:
        The agent's decision, or the person's replacement.
    """
    call = current_call()
    limit = call.escalation_threshold() if threshold is None else threshold
    if not 0.0 <= limit <= 1.0:
        raise ValueError("a confidence threshold is a number from 0 to 1")
    if not 0.0 <= audit_rate <= 1.0:
        raise ValueError("an audit rate is a number from 0 to 1")
    decided: dict[str, Any] = {"agentId": agent_id, "decision": decision}
    finite = confidence is not None and math.isfinite(confidence)
    if finite:
        decided["confidence"] = confidence
    call.emit("agent.decided", decided, discriminator=[agent_id, decision, confidence])
    if not finite or confidence is None:
        return decision
    if confidence >= limit and not _audited(
        audit_rate, call.run_id, call.task_ns, agent_id, decision, confidence
    ):
        return decision
    data = {"agentId": agent_id, "threshold": limit, "observed": confidence, "decision": decision}
    schema = LOW_CONFIDENCE_RESUME_SCHEMA
    if decision_schema is not None:
        schema = {**schema, "properties": {**schema["properties"], "decision": decision_schema}}
    answer = _answered(suspend("low-confidence", data, resume_schema=schema, call=call))
    value = answer.resume_value or {}
    return value.get("decision", decision)


def _audited(rate: float, *parts: Any) -> bool:
    """Whether this execution is in the audit sample: a uniform draw in [0, 1) derived from ``parts``."""
    if rate <= 0.0:
        return False
    return int(stable_id("audit", *parts), 16) / 16**32 < rate
