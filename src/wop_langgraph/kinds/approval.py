"""``approval``: a gate decided by votes (accept, reject, refine, edit-accept, ask), with a quorum."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from wop_langgraph._clock import iso_z
from wop_langgraph.kinds.base import InterruptKind
from wop_langgraph.kinds.review.approval import ApprovalPage
from wop_langgraph.nodes.approval import request_approval
from wop_langgraph.protocol.payloads import ApprovalInterrupt
from wop_langgraph.protocol.resume_check import check_approval
from wop_langgraph.protocol.snapshot import waiting_status_for

__all__ = ["APPROVAL", "APPROVAL_TIMEOUT"]

APPROVAL_TIMEOUT: Final[Mapping[str, Any]] = {
    "action": "timeout",
    "decision": "rejected",
    "reason": "timeout",
}
"""What a gate records when its deadline passes (interrupt.md: a timeout never grants)."""

_RESOLVED_ALIAS: Final[Mapping[str, str]] = {
    "granted": "approval.granted",
    "rejected": "approval.rejected",
    "overridden": "approval.overridden",
}


def _stamped(value: Any, received_at: datetime) -> Any:
    # Recorded as normalised: the stamp the value is validated with is the one logged (the
    # conformance suite's resolvers send ``{action}`` alone).
    if isinstance(value, dict) and "decidedAt" not in value:
        return {**value, "decidedAt": iso_z(received_at)}
    return value


def _resolved_alias(resolution: Mapping[str, Any]) -> str | None:
    return _RESOLVED_ALIAS.get(resolution.get("decision", ""))


APPROVAL: Final = InterruptKind(
    name="approval",
    wire_kind="approval",
    payload_model=ApprovalInterrupt,
    waiting_status=waiting_status_for("approval"),
    review=ApprovalPage(),
    node_call=request_approval,
    resume_rule=check_approval,  # a vote, counted by the quorum rules
    quorum=True,
    prepare_resume=_stamped,
    timeout_resolution=APPROVAL_TIMEOUT,
    requested_alias="approval.requested",
    resolved_alias=_resolved_alias,
)
