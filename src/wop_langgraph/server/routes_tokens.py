"""``POST /runs/{runId}/interrupts/{nodeId}/tokens``: mint a signed link for a pending interrupt.

How a resolver learns a token is host-defined (SPEC_NOTES §5); this is the authenticated way.
The token's ``interruptId`` is the interrupt's key, so it can never resolve a later visit of the
same node, and its expiry is capped at the interrupt's deadline. The link names the approver it
votes for (required when the gate counts votes: see ``link_approver``), and is built only on the
configured ``WOP_PUBLIC_URL`` (``422 capability_not_provided`` without one). An
``openwop-interrupt-auth-required`` interrupt gets inspect links only (``403 forbidden``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends

from wop_langgraph._clock import iso_z
from wop_langgraph.host import Principal
from wop_langgraph.server.auth import require_scopes
from wop_langgraph.server.bodies import MintTokenBody
from wop_langgraph.server.interrupt_lookup import mint_for, pending_at_node
from wop_langgraph.server.link_approver import link_approver
from wop_langgraph.server.paths import node_id_from_path, run_id_from_path
from wop_langgraph.server.state import ServerState, server_state
from wop_langgraph.server.token_actions import refuse_bearer_only

__all__ = ["router"]

router = APIRouter()


@router.post("/runs/{runId}/interrupts/{nodeId}/tokens", status_code=201)
def mint_token(
    runId: str,
    nodeId: str,
    state: Annotated[ServerState, Depends(server_state)],
    principal: Annotated[Principal, Depends(require_scopes("approvals:respond"))],
    body: Annotated[MintTokenBody | None, Body()] = None,
) -> dict[str, Any]:
    """``201 {token, url, expiresAt, approver?}`` for the node's pending interrupt."""
    run_id = run_id_from_path(runId, principal)
    node_id = node_id_from_path(nodeId)
    spec = body or MintTokenBody()
    base = state.link_base()
    record = pending_at_node(state.host, run_id, node_id)
    if spec.intent == "resolve":
        refuse_bearer_only(record)  # such a link could never be used; inspect links are fine
    approver = link_approver(state.host, record, principal, spec.approver, spec.intent)
    ttl = timedelta(seconds=spec.ttlSeconds) if spec.ttlSeconds else state.token_ttl
    minted = mint_for(
        state.signing_keys, record, intent=spec.intent, now=state.host.clock(), ttl=ttl, approver=approver
    )
    answer: dict[str, Any] = {
        "token": minted.token,
        "url": f"{base}/interrupts/{minted.token}",
        "expiresAt": iso_z(minted.expires_at),
    }
    if approver is not None:
        answer["approver"] = approver
    return answer
