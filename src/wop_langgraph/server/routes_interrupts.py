"""The token surface: ``GET /interrupts/{token}`` and ``POST /interrupts/{token}`` (no API key).

The token is the only credential. Verification order: grammar, alg, kid, MAC (``401
interrupt_token_invalid``), expiry (``410 interrupt_expired``), intent (``403 forbidden``), then
the interrupt's state (``409 interrupt_already_resolved``). A browser asking for ``text/html``
gets the reviewer page instead of JSON. A resolve with an ``Idempotency-Key`` already recorded
answers its recorded response even after the token expired (the MAC is still checked); only a
new request is judged on expiry.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from wop_langgraph.protocol.keys import tenant_of
from wop_langgraph.server import html
from wop_langgraph.server.bodies import ResolveBody
from wop_langgraph.server.idempotency import check_key, run_idempotent
from wop_langgraph.server.state import ServerState, server_state
from wop_langgraph.server.token_actions import inspect_token, resolve_with_token
from wop_langgraph.tokens import require_intent, verify_signed

__all__ = ["router"]

router = APIRouter()
State = Annotated[ServerState, Depends(server_state)]


@router.get("/interrupts/{token}")
async def inspect_by_token(token: str, request: Request, state: State) -> Response:
    """``200`` InterruptPayload, or the reviewer page for a browser."""
    if html.wants_html(request):
        return await run_in_threadpool(html.review_page, state, token)
    payload = await run_in_threadpool(inspect_token, state, token)
    return JSONResponse(payload)


@router.post("/interrupts/{token}")
def resolve_by_token(
    token: str,
    body: ResolveBody,
    state: State,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> JSONResponse:
    """Resolve with a token: ``200 {runId, nodeId, status}``."""
    check_key(idempotency_key)
    if idempotency_key is None:
        _, result = resolve_with_token(state, token, body.resumeValue)
        return JSONResponse(result)
    # The idempotency record needs the tenant, which only a signed token can say. Expiry is left
    # to the action (resolve_with_token verifies again): a replay of an answer given while the
    # token was valid is no new use of it, so it answers as recorded after the token expired.
    claims = verify_signed(state.signing_keys, token)
    require_intent(claims, "resolve")

    def action() -> tuple[int, dict[str, Any]]:
        return 200, resolve_with_token(state, token, body.resumeValue)[1]

    return run_idempotent(
        state.host,
        tenant=tenant_of(claims.run_id),
        endpoint=f"http:resolveInterruptByToken:{claims.interrupt_id}",
        key=idempotency_key,
        request_body={"resumeValue": body.resumeValue},
        action=action,
    )
