"""``low-confidence``: an agent's decision below the confidence threshold, for a person to check."""

from __future__ import annotations

from typing import Final

from wop_langgraph.kinds.base import InterruptKind
from wop_langgraph.kinds.review.low_confidence import LowConfidencePage
from wop_langgraph.nodes.escalation import escalate_on_low_confidence
from wop_langgraph.protocol.payloads import LowConfidenceInterrupt
from wop_langgraph.protocol.snapshot import waiting_status_for

__all__ = ["LOW_CONFIDENCE"]

LOW_CONFIDENCE: Final = InterruptKind(
    name="low-confidence",
    wire_kind="low-confidence",
    payload_model=LowConfidenceInterrupt,
    waiting_status=waiting_status_for("low-confidence"),
    review=LowConfidencePage(),
    node_call=escalate_on_low_confidence,  # its resumeSchema (the node's) is the resume rule
)
