"""Personal reviewer links: a token minted FOR one recipient, on the configured public URL.

Each message also carries the recipient's inbox link (:meth:`LinkSigner.inbox`): the list of
everything waiting for them, which can open each request's page but answers nothing itself.

The link votes as the recipient (the token's ``approver``), so each reviewer of a quorum gets
their own. A recipient the gate does not make eligible (an ``audience`` member who is only to
be told) gets an inspect-only link. The lifetime never passes the interrupt's deadline.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from wop_langgraph._clock import as_utc
from wop_langgraph.host.eligibility import bearer_only, check_eligible
from wop_langgraph.inbox_tokens import mint_inbox
from wop_langgraph.protocol.errors import Forbidden
from wop_langgraph.protocol.keys import tenant_of
from wop_langgraph.protocol.principal import MembershipResolver, Principal
from wop_langgraph.store.interrupts import InterruptRecord
from wop_langgraph.tokens import Intent, SigningKeys, is_approver, mint

__all__ = ["LinkSigner"]


@dataclass(frozen=True)
class LinkSigner:
    """Mints personal links: ``{public_url}/interrupts/{token}`` (the reviewer page)."""

    keys: SigningKeys
    public_url: str

    def link(
        self,
        record: InterruptRecord,
        recipient: str,
        *,
        now: datetime,
        ttl: timedelta,
        ref_kinds: Collection[str],
        membership: MembershipResolver | None,
    ) -> str | None:
        """The recipient's link, or ``None`` once the deadline has passed or for an unusable subject."""
        if not is_approver(recipient):
            return None
        deadline = as_utc(record.deadline) if record.deadline is not None else None
        if deadline is not None and deadline <= now:
            return None
        intent: Intent = "inspect" if bearer_only(record.profiles) else "resolve"
        if intent == "resolve" and record.kind == "approval":
            try:
                check_eligible(
                    record.payload["data"],
                    Principal(tenant=tenant_of(record.run_id), subject_id=recipient),
                    ref_kinds=ref_kinds,
                    membership=membership,
                )
            except Forbidden:
                intent = "inspect"  # told, not asked: the link shows the gate but cannot decide it
        minted = mint(
            self.keys,
            run_id=record.run_id,
            node_id=record.node_id,
            interrupt_id=record.key,
            intent=intent,
            now=now,
            ttl=ttl,
            not_after=deadline,
            approver=recipient,
        )
        return f"{self.public_url.rstrip('/')}/interrupts/{minted.token}"

    def inbox(self, record: InterruptRecord, recipient: str, *, now: datetime, ttl: timedelta) -> str | None:
        """The recipient's inbox link in the tenant of ``record``, or ``None`` for an unusable subject."""
        if not is_approver(recipient):
            return None
        minted = mint_inbox(self.keys, tenant=tenant_of(record.run_id), subject=recipient, now=now, ttl=ttl)
        return f"{self.public_url.rstrip('/')}/inbox/{minted.token}"
