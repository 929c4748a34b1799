"""What the token surface does, shared by the JSON routes and the reviewer page.

Who a token resolve acts as (the Subject recorded as ``resolvedBy``, and the voter toward a
quorum) comes from the token, never from the request body:

* a link minted for an approver acts as that approver: ``{issuer: urn:wop-langgraph:interrupt-token,
  subjectId: <approver>, tenant: <run's tenant>, lane: anonymous, kind: user}``. Its vote is the
  approver's own, so any number of links for one approver, and their by-run resolves, are one vote.
* an anonymous link (only mintable for gates that do not count votes) acts as the link itself:
  ``subjectId: token:<digest of the token>``, ``kind: anonymous``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from wop_langgraph.host import Principal
from wop_langgraph.host.driver import TERMINAL_STATUSES
from wop_langgraph.host.eligibility import bearer_only, counts_votes
from wop_langgraph.nodes.suspend import AUTH_REQUIRED
from wop_langgraph.protocol.errors import Forbidden, NotFound
from wop_langgraph.protocol.keys import tenant_of
from wop_langgraph.server.interrupt_lookup import pending_for_token
from wop_langgraph.server.state import ServerState
from wop_langgraph.store.engine import reading
from wop_langgraph.store.interrupts import InterruptRecord, get_interrupt_by_key
from wop_langgraph.tokens import TokenClaims, require_intent, verify

__all__ = [
    "TOKEN_ISSUER",
    "TokenReview",
    "approver_principal",
    "inspect_token",
    "refuse_bearer_only",
    "resolve_with_token",
    "review_token",
    "token_principal",
]

TOKEN_ISSUER = "urn:wop-langgraph:interrupt-token"
_RESPOND = frozenset({"approvals:respond"})


def approver_principal(run_id: str, approver: str) -> Principal:
    """The principal a link minted for ``approver`` acts as, in the run's tenant."""
    return Principal(
        tenant=tenant_of(run_id),
        subject_id=approver,
        scopes=_RESPOND,
        kind="user",
        # The holder presented no credential of their own; the minter vouched for the approver.
        lane="anonymous",
        issuer=TOKEN_ISSUER,
    )


def token_principal(claims: TokenClaims, token: str) -> Principal:
    """The principal a token resolve acts as (see the module docstring)."""
    if claims.approver is not None:
        return approver_principal(claims.run_id, claims.approver)
    digest = hashlib.sha256(token.encode()).hexdigest()[:24]
    return Principal(
        tenant=tenant_of(claims.run_id),
        subject_id=f"token:{digest}",
        scopes=_RESPOND,
        kind="anonymous",
        lane="anonymous",
        issuer=TOKEN_ISSUER,
    )


@dataclass(frozen=True)
class TokenReview:
    """What a reviewer's link names: its verified claims, the interrupt (in any state) and its run."""

    claims: TokenClaims
    record: InterruptRecord
    workflow_id: str
    run_status: str

    @property
    def answerable(self) -> bool:
        """Whether this link may answer the interrupt (a resolve link, and no bearer-only gate)."""
        return self.claims.intent == "resolve" and not bearer_only(self.record.profiles)

    @property
    def is_open(self) -> bool:
        """Whether the interrupt can still be answered (pending, and its run not finished)."""
        return self.record.is_pending and self.run_status not in TERMINAL_STATUSES


def review_token(state: ServerState, token: str) -> TokenReview:
    """Verify ``token`` and read what it names, answered or not (the reviewer page says which).

    Raises:
        InterruptTokenInvalid: the token is malformed or its MAC does not verify.
        InterruptExpired: the token has expired.
        NotFound: the interrupt is unknown to this host.
    """
    claims = verify(state.signing_keys, token, now=state.host.clock())
    with reading(state.host.engine) as conn:
        record = get_interrupt_by_key(conn, claims.interrupt_id)
    if record is None or record.run_id != claims.run_id or record.node_id != claims.node_id:
        raise NotFound("the interrupt this token names is not known to this host")
    snapshot = state.host.snapshot(record.run_id)
    return TokenReview(claims, record, str(snapshot["workflowId"]), str(snapshot["status"]))


def inspect_token(state: ServerState, token: str) -> dict[str, Any]:
    """The InterruptPayload a token names (any intent)."""
    claims = verify(state.signing_keys, token, now=state.host.clock())
    record = pending_for_token(state.host, claims)
    return dict(record.payload)


def refuse_bearer_only(record: InterruptRecord) -> None:
    """Refuse a signed token the right to resolve an ``openwop-interrupt-auth-required`` interrupt.

    Raises:
        Forbidden: the interrupt may be resolved only by a bearer with ``approvals:respond``.
    """
    if bearer_only(record.profiles):
        raise Forbidden(
            "this interrupt can be resolved only with a bearer credential holding approvals:respond "
            "(POST /runs/{runId}/interrupts/{nodeId}); a signed token can only inspect it",
            details={"profile": AUTH_REQUIRED, "nodeId": record.node_id},
        )


def resolve_with_token(
    state: ServerState, token: str, resume_value: Any
) -> tuple[TokenClaims, dict[str, Any]]:
    """Resolve the interrupt a ``resolve`` token names; returns the claims and ``{runId, nodeId, status}``.

    Raises:
        Forbidden: an inspect-only token, an anonymous link for a gate that counts votes, or an
            interrupt that only a bearer may resolve (nothing is recorded; it stays pending).
    """
    claims = verify(state.signing_keys, token, now=state.host.clock())
    require_intent(claims, "resolve")
    record = pending_for_token(state.host, claims)
    refuse_bearer_only(record)
    if claims.approver is None and counts_votes(record.payload, state.host.ref_kinds):
        # Never minted by this server; refused so that no link can vote without an identity.
        raise Forbidden("this link names no approver, and this gate counts each approver's vote")
    result = state.host.resolve(
        claims.run_id,
        claims.node_id,
        resume_value,
        token_principal(claims, token),
        key=claims.interrupt_id,
        wait=False,
    )
    # No callback to look for: the run is only queued (see routes_runs.resolve_by_run).
    return claims, result
