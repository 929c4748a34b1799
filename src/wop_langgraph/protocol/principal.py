"""Who is acting: an authenticated caller as the host sees it, and its OpenWOP Subject."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DELEGATE_SCOPE", "HOST_ISSUER", "Membership", "MembershipResolver", "Principal"]

HOST_ISSUER = "urn:wop-langgraph:api-key"
#: A host-defined scope: its holder (an inbox backend, a chat bot, an operator key) may cast an
#: approval vote for the voter a resume value names, and mint a link for another approver.
DELEGATE_SCOPE = "approvals:delegate"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller.

    Attributes:
        tenant: the tenant the caller's credential belongs to.
        subject_id: the caller's stable id (what ``approversList`` names).
        scopes: granted scopes (``approvals:respond``, ``runs:create``, ...;
            :data:`DELEGATE_SCOPE` to vote for others).
        can_override: may decide a gate with ``overrideBypassesQuorum`` on its own.
    """

    tenant: str
    subject_id: str
    scopes: frozenset[str] = field(default_factory=frozenset)
    can_override: bool = False
    kind: str = "user"
    lane: str = "api-key"
    issuer: str = HOST_ISSUER

    @property
    def may_delegate(self) -> bool:
        """Whether this caller may cast a vote for a voter it names (:data:`DELEGATE_SCOPE`)."""
        return DELEGATE_SCOPE in self.scopes

    def subject(self) -> dict[str, Any]:
        """The OpenWOP Subject object recorded as ``resolvedBy`` and as the run's owner."""
        return {
            "issuer": self.issuer,
            "subjectId": self.subject_id,
            "tenant": self.tenant,
            "lane": self.lane,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class Membership:
    """The groups and roles a principal holds at decision time."""

    groups: frozenset[str] = field(default_factory=frozenset)
    roles: frozenset[str] = field(default_factory=frozenset)


#: Resolves a principal's groups and roles; supplied by the embedding application.
MembershipResolver = Callable[[Principal], Membership]
