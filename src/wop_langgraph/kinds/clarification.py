"""``clarification``: questions for missing context, answered with ``{answers: {id: answer}}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from wop_langgraph.kinds.base import InterruptKind
from wop_langgraph.kinds.review.questions import ClarificationPage
from wop_langgraph.nodes.questions import ask
from wop_langgraph.protocol.payloads import ClarificationInterrupt
from wop_langgraph.protocol.resume_check import check_clarification
from wop_langgraph.protocol.snapshot import waiting_status_for

__all__ = ["CLARIFICATION"]


def _resolved_alias(resolution: Mapping[str, Any]) -> str:
    return "clarification.resolved"


CLARIFICATION: Final = InterruptKind(
    name="clarification",
    wire_kind="clarification",
    payload_model=ClarificationInterrupt,
    waiting_status=waiting_status_for("clarification"),
    review=ClarificationPage(),
    node_call=ask,
    resume_rule=check_clarification,
    requested_alias="clarification.requested",
    resolved_alias=_resolved_alias,
)
