"""Whom a minted link votes for: the approver named at mint, checked before anything is signed.

A link for a gate that counts votes (``counts_votes``) must name its approver; an approver other
than the minter needs the host-defined ``approvals:delegate`` scope (a dispatcher that sends each
reviewer their own link), so that no one holding only ``approvals:respond`` can mint a second
reviewer's vote for themselves. The approver must be eligible for the gate now; the resolver checks
again when the link is used.
"""

from __future__ import annotations

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.host.eligibility import check_eligible, counts_votes
from wop_langgraph.kinds import kind_of
from wop_langgraph.protocol.errors import Forbidden, ValidationError
from wop_langgraph.protocol.principal import DELEGATE_SCOPE
from wop_langgraph.server.token_actions import approver_principal
from wop_langgraph.store.interrupts import InterruptRecord
from wop_langgraph.tokens import is_approver

__all__ = ["DELEGATE_SCOPE", "link_approver"]


def link_approver(
    host: WopHost, record: InterruptRecord, minter: Principal, approver: str | None, intent: str
) -> str | None:
    """The approver a new link for ``record`` is for (``None``: an anonymous link).

    Raises:
        ValidationError: a resolve link for a gate that counts votes names no approver, or the
            approver is not a subjectId (400, ``details.field: approver``).
        Forbidden: the approver is someone else and the minter lacks ``approvals:delegate``, or the
            approver is not eligible for the gate (403).
    """
    if approver is None:
        if intent == "resolve" and counts_votes(record.payload, host.ref_kinds):
            raise ValidationError(
                "this gate counts each approver's vote: name the approver the link is for "
                "(the 'approver' member, a subjectId)",
                details={"field": "approver"},
            )
        return None
    if not is_approver(approver):
        raise ValidationError(
            "approver must be a subjectId (1..256 characters, no whitespace, '/' or control characters)",
            details={"field": "approver"},
        )
    if approver != minter.subject_id and not minter.may_delegate:
        raise Forbidden(
            f"only a caller with the {DELEGATE_SCOPE} scope may mint a link for another approver",
            details={"approver": approver, "requiredScope": DELEGATE_SCOPE},
        )
    if kind_of(record.payload).quorum:
        check_eligible(
            record.payload["data"],
            approver_principal(record.run_id, approver),
            ref_kinds=host.ref_kinds,
            membership=host.membership,
        )
    return approver
