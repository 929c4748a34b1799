"""Approval vote counting: when does a set of votes decide a gate, and how (pure).

Rules (interrupt.md §Approval, SPEC_NOTES §10). Every voter's vote counts once toward
``requiredApprovals``, whatever its action; counted in arrival order, the gate is decided by
the first vote after which:

* an override: the vote grants (``accept`` / ``edit-accept``), its voter may override and the
  gate has ``overrideBypassesQuorum`` -> ``overridden`` (the one vote that releases a quorum
  alone);
* a reject: one reject under ``single-veto``, or rejects above ``requiredApprovals / 2`` under
  ``majority`` -> ``rejected``;
* a grant: granting votes (``accept`` and ``edit-accept``) reach ``requiredApprovals`` ->
  ``granted``. The action is ``edit-accept`` when any of them edited, and the edit delivered
  is the last one made (in arrival order): a grant never silently drops an edit;
* a refine: ``refine`` votes reach ``requiredApprovals`` -> the artifact goes back for work
  (no ``decision``), with the feedback of the vote that completed it.

A ``refine`` is therefore a vote that does not grant: one reviewer's refine on a gate that
needs two never returns the artifact, nor does one reviewer's ``edit-accept`` release it.
``ask`` is no vote at all (the resolver never counts it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wop_langgraph.protocol.approval import ApprovalResume, EditAcceptResume, RefineResume

__all__ = ["VOTES_MEMBER", "Tally", "Vote", "approval_resolution", "tally", "vote_of"]

GRANTING = frozenset({"accept", "edit-accept"})
#: The extension member (run-event-payloads: ``^(openwop-|x-|vendor\\.)``) of
#: ``interrupt.resolved`` that records every vote of a quorum or delegated decision.
VOTES_MEMBER = "x-votes"
_DETAILS = ("editedArtifactData", "refineFeedback")


@dataclass(frozen=True, slots=True)
class Vote:
    """One reviewer's vote on a gate.

    Attributes:
        voter: the subjectId the vote counts for (one vote per voter).
        action: ``accept``, ``reject``, ``refine`` or ``edit-accept``.
        override: its voter may release a gate with ``overrideBypassesQuorum`` alone.
        detail: what the action carries: ``{"editedArtifactData": ...}`` for an edit-accept,
            ``{"refineFeedback": {...}}`` for a refine, else empty.
        delegate: the subjectId of the principal that cast the vote for ``voter``
            (``approvals:delegate``); ``None`` when the voter cast it.
    """

    voter: str
    action: str
    override: bool = False
    detail: Mapping[str, Any] = field(default_factory=dict)
    delegate: str | None = None

    def as_json(self) -> dict[str, Any]:
        recorded: dict[str, Any] = {"voter": self.voter, "action": self.action, "override": self.override}
        recorded.update(self.detail)
        if self.delegate is not None:
            recorded["delegate"] = self.delegate
        return recorded

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Vote:
        delegate = value.get("delegate")
        return cls(
            voter=str(value["voter"]),
            action=str(value["action"]),
            override=bool(value.get("override")),
            detail={name: value[name] for name in _DETAILS if name in value},
            delegate=None if delegate is None else str(delegate),
        )


def vote_of(
    voter: str, resume: ApprovalResume, *, override: bool = False, delegate: str | None = None
) -> Vote:
    """The vote a parsed approval resume casts for ``voter``."""
    detail: dict[str, Any] = {}
    if isinstance(resume, EditAcceptResume):
        detail["editedArtifactData"] = resume.edited_artifact_data
    if isinstance(resume, RefineResume):
        detail["refineFeedback"] = resume.refine_feedback.to_wire()
    return Vote(voter=voter, action=resume.action, override=override, detail=detail, delegate=delegate)


@dataclass(frozen=True, slots=True)
class Tally:
    """The state of a gate after counting: undecided (``decided=False``) or decided.

    ``decision`` is ``granted``, ``rejected`` or ``overridden`` for a grant / reject /
    override, and ``None`` with ``decided=True`` for refine (the artifact goes back for work).
    ``detail`` is what the decision delivers (``editedArtifactData`` or ``refineFeedback``).
    """

    decided: bool
    action: str | None = None
    decision: str | None = None
    reason: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)


def tally(
    votes: Sequence[Vote],
    *,
    required_approvals: int = 1,
    rejection_policy: str = "single-veto",
    override_bypasses_quorum: bool = False,
) -> Tally:
    """Count ``votes`` (one per voter, in arrival order) against the gate's rules (module docstring)."""
    required = max(1, required_approvals)
    grants = rejects = refines = 0
    last_edit: Mapping[str, Any] | None = None
    for vote in votes:
        if vote.action in GRANTING:
            if vote.action == "edit-accept":
                last_edit = vote.detail
            if vote.override and override_bypasses_quorum:
                return Tally(True, vote.action, "overridden", "override", dict(vote.detail))
            grants += 1
            if grants >= required:
                if last_edit is None:
                    return Tally(True, "accept", "granted")
                return Tally(True, "edit-accept", "granted", detail=dict(last_edit))
        elif vote.action == "reject":
            rejects += 1
            if rejection_policy == "single-veto" or rejects > required / 2:
                reason = "quorum-reject" if rejection_policy == "majority" else None
                return Tally(True, "reject", "rejected", reason)
        elif vote.action == "refine":
            refines += 1
            if refines >= required:
                return Tally(True, "refine", detail=dict(vote.detail))
    return Tally(decided=False)


def approval_resolution(
    outcome: Tally, votes: Sequence[Vote] = (), *, required_approvals: int = 1
) -> dict[str, Any]:
    """What ``interrupt.resolved`` records for a decided gate, and what the node is handed.

    Args:
        outcome: a decided :class:`Tally` (its ``detail`` travels with the decision).
        votes: every vote counted, in arrival order; recorded under :data:`VOTES_MEMBER`
            (each voter's action and edit or feedback, and the delegate that cast it) when the
            gate needs more than one approval or a delegate cast a vote, so that no voter's
            edit is lost from the audit trail.
    """
    resolution: dict[str, Any] = {"action": outcome.action}
    if outcome.decision is not None:
        resolution["decision"] = outcome.decision
    if outcome.reason is not None:
        resolution["reason"] = outcome.reason
    resolution.update(outcome.detail)
    if required_approvals > 1 or any(v.delegate is not None for v in votes):
        resolution[VOTES_MEMBER] = [v.as_json() for v in votes]
    return resolution
