"""Who may decide an approval gate, and whether a gate counts votes (pure; no I/O of its own).

One implementation serves both moments the rule is applied: when a link is minted for an
approver, and when a vote arrives (by run or by token).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from wop_langgraph.kinds import get_kind, kind_of
from wop_langgraph.nodes.suspend import AUTH_REQUIRED
from wop_langgraph.protocol.errors import Forbidden
from wop_langgraph.protocol.principal import MembershipResolver, Principal

__all__ = ["bearer_only", "check_eligible", "counts_votes", "may_answer"]


def bearer_only(profiles: Iterable[str] | None) -> bool:
    """Whether an interrupt with these profiles may be resolved only by a bearer credential.

    Under ``openwop-interrupt-auth-required`` (interrupt-profiles.md) a signed token is no
    credential to resolve with: its links may show the interrupt, never decide it.
    """
    return AUTH_REQUIRED in (profiles or ())


def counts_votes(payload: Mapping[str, Any], ref_kinds: Iterable[str]) -> bool:
    """Whether an interrupt is a gate whose decision depends on who votes.

    True for an ``approval`` that needs more than one approval, or names its approvers in a way
    the host honours: ``approversList``, and ``approverGroupRefs`` / ``approverRoleRefs`` only
    when ``ref_kinds`` holds ``group`` / ``role``. A link for such a gate must name the approver
    it is for. Group and role references a host does not honour bind nobody (interrupt.md
    §Approver enforcement), here exactly as in :func:`check_eligible`.
    """
    if not kind_of(payload).quorum:
        return False
    data = payload.get("data") or {}
    return int(data.get("requiredApprovals") or 1) > 1 or bool(_named_approvers(data, ref_kinds))


def _named_approvers(
    data: Mapping[str, Any], ref_kinds: Iterable[str]
) -> tuple[list[str], list[str], list[str]] | None:
    """The approvers, groups and roles a gate names that bind on this host; ``None`` if none."""
    kinds = frozenset(ref_kinds)
    approvers = list(data.get("approversList") or [])
    groups = list(data.get("approverGroupRefs") or []) if "group" in kinds else []
    roles = list(data.get("approverRoleRefs") or []) if "role" in kinds else []
    return (approvers, groups, roles) if approvers or groups or roles else None


def check_eligible(
    data: Mapping[str, Any],
    principal: Principal,
    *,
    ref_kinds: Iterable[str],
    membership: MembershipResolver | None,
) -> None:
    """Refuse a principal an approval gate does not name.

    A gate without approvers admits anyone (of the run's tenant). Otherwise the principal must be
    in ``approversList``, or hold a group or role the gate names, where group and role references
    bind only for the ``ref_kinds`` the host honours and membership is resolved now.

    Raises:
        Forbidden: the principal is not an eligible approver (403).
    """
    named = _named_approvers(data, ref_kinds)
    if named is None:
        return
    approvers, groups, roles = named
    if principal.subject_id in approvers:
        return
    if (groups or roles) and membership is not None:
        held = membership(principal)
        if set(groups) & held.groups or set(roles) & held.roles:
            return
    raise Forbidden(
        f"{principal.subject_id!r} is not an eligible approver of this gate",
        details={"subjectId": principal.subject_id},
    )


def may_answer(
    kind: str,
    data: Mapping[str, Any],
    votes: Iterable[Mapping[str, Any]] | None,
    principal: Principal,
    *,
    ref_kinds: Iterable[str],
    membership: MembershipResolver | None,
) -> bool:
    """Whether ``principal`` (of the run's tenant) may answer a pending interrupt now.

    The rule a resolution applies (:func:`check_eligible` for an approval gate), plus: a voter
    who already voted on a quorum gate has nothing left to answer there (a repeat vote changes
    nothing).
    """
    if not get_kind(kind).quorum:
        return True
    if any(vote.get("voter") == principal.subject_id for vote in votes or ()):
        return False
    try:
        check_eligible(data, principal, ref_kinds=ref_kinds, membership=membership)
    except Forbidden:
        return False
    return True
