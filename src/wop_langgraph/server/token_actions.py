"""What the token surface does, shared by the JSON routes and the reviewer page.

The resolver of a token resolve is the token holder, recorded as the Subject
``{issuer: urn:wop-langgraph:interrupt-token, subjectId: token:<digest>, tenant: <run's tenant>,
lane: anonymous, kind: anonymous}``, where ``<digest>`` identifies the link itself: every minted
link is its own voter toward a quorum, and the same link used twice is one voter.
"""

from __future__ import annotations

import hashlib
from typing import Any

from wop_langgraph.host import Principal
from wop_langgraph.host.keys import tenant_of
from wop_langgraph.server.interrupt_lookup import pending_for_token
from wop_langgraph.server.state import ServerState
from wop_langgraph.tokens import TokenClaims, require_intent, verify

__all__ = ["TOKEN_ISSUER", "inspect_token", "resolve_with_token", "token_principal"]

TOKEN_ISSUER = "urn:wop-langgraph:interrupt-token"


def token_principal(claims: TokenClaims, token: str) -> Principal:
    """The principal a token resolve acts as (see the module docstring)."""
    digest = hashlib.sha256(token.encode()).hexdigest()[:24]
    return Principal(
        tenant=tenant_of(claims.run_id),
        subject_id=f"token:{digest}",
        scopes=frozenset({"approvals:respond"}),
        kind="anonymous",
        lane="anonymous",
        issuer=TOKEN_ISSUER,
    )


def inspect_token(state: ServerState, token: str) -> dict[str, Any]:
    """The InterruptPayload a token names (any intent)."""
    claims = verify(state.signing_keys, token, now=state.host.clock())
    record = pending_for_token(state.host, claims)
    return dict(record.payload)


def resolve_with_token(
    state: ServerState, token: str, resume_value: Any
) -> tuple[TokenClaims, dict[str, Any]]:
    """Resolve the interrupt a ``resolve`` token names; returns the claims and ``{runId, nodeId, status}``."""
    claims = verify(state.signing_keys, token, now=state.host.clock())
    require_intent(claims, "resolve")
    pending_for_token(state.host, claims)
    result = state.host.resolve(
        claims.run_id,
        claims.node_id,
        resume_value,
        token_principal(claims, token),
        key=claims.interrupt_id,
        wait=False,
    )
    state.delivery.notify(claims.run_id)
    return claims, result
