"""Approval vote counting: when does a set of votes decide a gate, and how (pure).

Rules (interrupt.md §Quorum, SPEC_NOTES §10): accept is decided once accepts reach
``requiredApprovals``; reject is decided by one eligible reject under ``single-veto``, or once
rejects exceed ``requiredApprovals / 2`` under ``majority``; ``refine`` and ``edit-accept`` are
a single reviewer's decision; an override by a principal allowed to override, on a gate with
``overrideBypassesQuorum``, decides at once as ``overridden``; ``ask`` never decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wop_langgraph.protocol.approval import ApprovalResume, EditAcceptResume, RefineResume

__all__ = ["Tally", "Vote", "approval_resolution", "tally"]


@dataclass(frozen=True, slots=True)
class Vote:
    """One reviewer's vote on a gate."""

    voter: str
    action: str
    override: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"voter": self.voter, "action": self.action, "override": self.override}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Vote:
        return cls(
            voter=str(value["voter"]), action=str(value["action"]), override=bool(value.get("override"))
        )


@dataclass(frozen=True, slots=True)
class Tally:
    """The state of a gate after counting: undecided (``decision is None``) or decided.

    ``decision`` is ``granted``, ``rejected`` or ``overridden`` for accept / reject / override,
    and ``None`` with ``decided=True`` for refine (the reviewer returned the artifact for work).
    """

    decided: bool
    action: str | None = None
    decision: str | None = None
    reason: str | None = None


def tally(
    votes: Sequence[Vote],
    *,
    required_approvals: int = 1,
    rejection_policy: str = "single-veto",
    override_bypasses_quorum: bool = False,
) -> Tally:
    """Count ``votes`` (one per voter, in arrival order) against the gate's rules."""
    for vote in votes:
        if vote.override and override_bypasses_quorum and vote.action in ("accept", "edit-accept"):
            return Tally(decided=True, action=vote.action, decision="overridden", reason="override")
        if vote.action == "refine":
            return Tally(decided=True, action="refine")
        if vote.action == "edit-accept":
            return Tally(decided=True, action="edit-accept", decision="granted")
    accepts = sum(1 for v in votes if v.action == "accept")
    rejects = sum(1 for v in votes if v.action == "reject")
    if rejects and (rejection_policy == "single-veto" or rejects > required_approvals / 2):
        reason = "quorum-reject" if rejection_policy == "majority" else None
        return Tally(decided=True, action="reject", decision="rejected", reason=reason)
    if accepts >= required_approvals:
        return Tally(decided=True, action="accept", decision="granted")
    return Tally(decided=False)


def approval_resolution(outcome: Tally, deciding: ApprovalResume) -> dict[str, Any]:
    """What ``interrupt.resolved`` records for a decided gate, and what the node is handed.

    Args:
        outcome: a decided :class:`Tally`.
        deciding: the resume value of the vote that decided the gate (its ``refineFeedback``
            or ``editedArtifactData`` travels with the decision).
    """
    resolution: dict[str, Any] = {"action": outcome.action}
    if outcome.decision is not None:
        resolution["decision"] = outcome.decision
    if outcome.reason is not None:
        resolution["reason"] = outcome.reason
    if isinstance(deciding, RefineResume):
        resolution["refineFeedback"] = deciding.refine_feedback.to_wire()
    if isinstance(deciding, EditAcceptResume):
        resolution["editedArtifactData"] = deciding.edited_artifact_data
    return resolution
