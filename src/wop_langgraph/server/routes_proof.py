"""Proof of a run's decisions: ``GET /runs/{runId}/receipts`` (the run's proof bundle) and
``GET /.well-known/wop-receipt-keys`` (the public keys receipts verify with, JWKS-style)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from wop_langgraph.host import Principal
from wop_langgraph.server.auth import require_scopes
from wop_langgraph.server.etag import cached_json
from wop_langgraph.server.paths import run_id_from_path
from wop_langgraph.server.state import ServerState, server_state

__all__ = ["KEYS_PATH", "router"]

router = APIRouter()
State = Annotated[ServerState, Depends(server_state)]
#: Where the receipt keys are published.
KEYS_PATH = "/.well-known/wop-receipt-keys"


@router.get(KEYS_PATH)
def get_receipt_keys(request: Request, state: State) -> Response:
    """The receipt verification keys (``{"keys": [{kty: OKP, crv: Ed25519, kid, x}]}``; a
    revoked key is listed with ``"revoked": true``), with an ``ETag``."""
    return cached_json(
        request, state.host.proofs.public_keys().to_jwks(), {"Cache-Control": "public, max-age=300"}
    )


@router.get("/runs/{runId}/receipts")
async def get_run_receipts(
    runId: str,
    state: State,
    principal: Annotated[Principal, Depends(require_scopes("runs:read"))],
) -> JSONResponse:
    """The run's proof bundle: its events with their chain values, its decision and vote
    receipts, its checkpoints and the public keys (``wop-langgraph verify`` checks it offline)."""
    run_id = run_id_from_path(runId, principal)
    return JSONResponse(await run_in_threadpool(state.host.export_proof, run_id))
