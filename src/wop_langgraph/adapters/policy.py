"""Approval policies for gates the graph's code does not configure (bare ``interrupt()`` values).

An Agent Inbox ``HumanInterrupt`` or a ``HumanInTheLoopMiddleware`` request carries no quorum
and no approver list: the user's code has no place for them. ``WopHost.register(...,
approvals={node_id: ApprovalPolicy(...)})`` supplies them at registration, without changing the
graph; the host merges the policy into the approval the adapter builds for that node, so the
quorum, eligibility, rejection policy and timeout are enforced exactly as for
``request_approval`` with the same arguments (tokens minted for named approvers, one vote per
person, the deadline decided in the vote's transaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from wop_langgraph.nodes.suspend import timeout_ms
from wop_langgraph.protocol.payloads import parse_interrupt_payload

__all__ = ["ApprovalPolicy"]


@dataclass(frozen=True)
class ApprovalPolicy:
    """Who decides an adapter-built approval, and how many must agree.

    The fields mean what the same-named arguments of
    :func:`~wop_langgraph.nodes.request_approval` mean.
    """

    required_approvals: int | None = None
    approvers: Sequence[str] | None = None
    group_refs: Sequence[str] | None = None
    role_refs: Sequence[str] | None = None
    rejection_policy: str | None = None
    override_bypasses_quorum: bool | None = None
    timeout: timedelta | float | None = None

    def apply(self, payload: dict[str, Any]) -> dict[str, Any]:
        """``payload`` (an approval) with this policy's members set; the others kept."""
        members = {
            "requiredApprovals": self.required_approvals,
            "approversList": list(self.approvers) if self.approvers is not None else None,
            "approverGroupRefs": list(self.group_refs) if self.group_refs is not None else None,
            "approverRoleRefs": list(self.role_refs) if self.role_refs is not None else None,
            "rejectionPolicy": self.rejection_policy,
            "overrideBypassesQuorum": self.override_bypasses_quorum,
        }
        data = {**payload["data"], **{k: v for k, v in members.items() if v is not None}}
        applied = {**payload, "data": data}
        millis = timeout_ms(self.timeout)
        if millis:
            applied["timeoutMs"] = millis
        return applied

    def check(self) -> None:
        """Refuse a policy that no approval could carry (e.g. ``required_approvals=0``).

        Raises:
            ValidationError: naming the member, as for a malformed ``request_approval``.
        """
        data = {"artifactId": "policy-check", "artifactType": "t", "title": "t", "actions": ["accept"]}
        parse_interrupt_payload(self.apply({"kind": "approval", "key": "policy-check", "data": data}))
