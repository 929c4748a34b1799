"""Whom an approval vote counts for: the caller, or the voter a delegate names (pure).

Identity comes from authentication: a vote counts for the authenticated principal, and nothing
in a resume value (``voter``, ``decidedBy``) changes that, with one explicit exception. A
principal holding ``approvals:delegate`` (an inbox backend, a chat bot, a conformance operator
key) is trusted to relay votes: its vote counts for the voter its resume value names
(``voter``, else ``decidedBy``), eligibility is checked for that voter, and the vote is recorded
as cast by the delegate (``resolvedBy`` is the delegate's Subject; the vote names the voter).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from wop_langgraph.protocol.approval import ApprovalResume
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.principal import Principal
from wop_langgraph.tokens import is_approver

__all__ = ["Ballot", "ballot_of"]


@dataclass(frozen=True)
class Ballot:
    """Who a vote counts for, and who cast it.

    Attributes:
        voter: the principal the vote counts for (eligibility is checked for it).
        delegate: the principal that cast it for ``voter``; ``None`` when ``voter`` cast it.
    """

    voter: Principal
    delegate: Principal | None = None

    @property
    def caster(self) -> Principal:
        """The authenticated principal (recorded as ``resolvedBy``)."""
        return self.delegate or self.voter


def ballot_of(principal: Principal, resume: ApprovalResume) -> Ballot:
    """The ballot ``principal`` casts with ``resume`` (see the module docstring).

    Raises:
        ValidationError: a delegate names a voter that is not a subjectId, or names two
            different voters (``voter`` and ``decidedBy``).
    """
    if not principal.may_delegate:
        return Ballot(principal)
    named = resume.voter or resume.decided_by
    if resume.voter and resume.decided_by and resume.voter != resume.decided_by:
        raise ValidationError(
            "voter and decidedBy name different voters: a delegated vote counts for one voter",
            details={"path": "/resumeValue/voter"},
        )
    if named is None or named == principal.subject_id:
        return Ballot(principal)
    if not is_approver(named):
        raise ValidationError(
            "the voter a delegate names must be a subjectId (1..256 characters, no whitespace, "
            "'/' or control characters)",
            details={"path": "/resumeValue/voter"},
        )
    # The named voter acts in the delegate's tenant, with no rights of the delegate's own:
    # neither its scopes nor its override.
    voter = replace(
        principal, subject_id=named, scopes=frozenset({"approvals:respond"}), can_override=False, kind="user"
    )
    return Ballot(voter, delegate=principal)
