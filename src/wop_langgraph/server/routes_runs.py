"""The run surface: ``POST /runs``, ``GET /runs/{runId}``, cancel, and resolve by run."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from wop_langgraph.host import Principal
from wop_langgraph.protocol.egress import check_url
from wop_langgraph.protocol.errors import IdTenantMismatch, WopError
from wop_langgraph.server.auth import require_scopes
from wop_langgraph.server.bodies import CancelRunBody, CreateRunBody, ResolveBody
from wop_langgraph.server.etag import cached_json
from wop_langgraph.server.idempotency import CompleteIn, run_idempotent, run_idempotent_atomic
from wop_langgraph.server.paths import node_id_from_path, project_id, run_id_from_path
from wop_langgraph.server.state import ServerState, server_state

__all__ = ["router"]

router = APIRouter()
State = Annotated[ServerState, Depends(server_state)]
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key")]


class ResidencyUnavailable(WopError):
    """A residency region this host does not offer (it offers none)."""

    code = "residency_unavailable"
    status = 422
    retryable = True


@router.post("/runs", status_code=201)
def create_run(
    body: CreateRunBody,
    state: State,
    principal: Annotated[Principal, Depends(require_scopes("runs:create"))],
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    """Create a run and drive it to its first suspension (``201 {runId, status, eventsUrl, statusUrl}``)."""
    if body.tenantId is not None and body.tenantId != principal.tenant:
        raise IdTenantMismatch("tenantId names another tenant than the caller's")
    if body.residency and body.residency.get("region") is not None:
        raise ResidencyUnavailable("this host offers no residency regions", details={"field": "residency"})
    if body.callbackUrl is not None:
        check_url(body.callbackUrl, field="callbackUrl", allow=state.settings.callback_allow)
    workflow_id = body.workflowId

    def created(snapshot: dict[str, Any]) -> dict[str, Any]:
        wire = project_id(snapshot["runId"])
        return {
            "runId": snapshot["runId"],
            "status": snapshot["status"],
            "eventsUrl": f"/runs/{wire}/events",
            "statusUrl": f"/runs/{wire}",
        }

    def action(complete_in: CompleteIn) -> tuple[int, dict[str, Any]]:
        snapshot = state.host.create_run(
            workflow_id,
            body.inputs,
            owner=principal,
            configurable=body.configurable,
            callback_url=body.callbackUrl,
            tags=body.tags,
            metadata=body.metadata,
            wait=False,
            # The answer is stored with the run: a retry after a crash replays it.
            on_commit=lambda conn, committed: complete_in(conn, 201, created(committed)),
        )
        if body.callbackUrl is not None:
            state.delivery.notify(snapshot["runId"])
        return 201, created(snapshot)

    return run_idempotent_atomic(
        state.host,
        tenant=principal.tenant,
        endpoint="http:createRun",
        key=idempotency_key,
        request_body=body.model_dump(mode="json", exclude_unset=True),
        action=action,
    )


@router.get("/runs/{runId}")
async def get_run(
    runId: str,
    request: Request,
    state: State,
    principal: Annotated[Principal, Depends(require_scopes("runs:read"))],
) -> Response:
    """The run's snapshot, with an ``ETag``; a matching ``If-None-Match`` answers 304."""
    run_id = run_id_from_path(runId, principal)
    snapshot = await run_in_threadpool(state.host.snapshot, run_id)
    return cached_json(request, snapshot)


@router.post("/runs/{runId}/cancel")
def cancel_run(
    runId: str,
    state: State,
    principal: Annotated[Principal, Depends(require_scopes("runs:cancel"))],
    body: Annotated[CancelRunBody | None, Body()] = None,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    """Cancel a run (``409 run_terminal`` when it already finished)."""
    run_id = run_id_from_path(runId, principal)
    reason = body.reason if body is not None else None

    def action() -> tuple[int, dict[str, Any]]:
        return 200, state.host.cancel(run_id, reason=reason, principal=principal, wait=False)

    return run_idempotent(
        state.host,
        tenant=principal.tenant,
        endpoint=f"http:cancelRun:{run_id}",
        key=idempotency_key,
        request_body={"reason": reason},
        action=action,
    )


@router.post("/runs/{runId}/interrupts/{nodeId}")
def resolve_by_run(
    runId: str,
    nodeId: str,
    body: ResolveBody,
    state: State,
    principal: Annotated[Principal, Depends(require_scopes("approvals:respond"))],
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    """Resolve (or vote on) the pending interrupt of a node: ``200 {runId, nodeId, status}``."""
    run_id = run_id_from_path(runId, principal)
    node_id = node_id_from_path(nodeId)

    def action() -> tuple[int, dict[str, Any]]:
        # Nothing here for the callbacks: the run is only queued. Its next suspension is seen by
        # the drive that reaches it (after_drive) or, from worker processes, the periodic scan.
        return 200, state.host.resolve(run_id, node_id, body.resumeValue, principal, wait=False)

    return run_idempotent(
        state.host,
        tenant=principal.tenant,
        endpoint=f"http:resolveInterruptByRun:{run_id}:{node_id}",
        key=idempotency_key,
        request_body={"resumeValue": body.resumeValue},
        action=action,
    )
