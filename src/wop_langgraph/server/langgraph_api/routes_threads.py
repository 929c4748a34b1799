"""Threads: create, read, search, patch, delete; their state, its history, and Agent Inbox's "ignore"."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from starlette.concurrency import run_in_threadpool

from wop_langgraph.host import Principal
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.server.langgraph_api.auth import require
from wop_langgraph.server.langgraph_api.bodies import changing, json_body, service_of

__all__ = ["router"]

router = APIRouter()
Reader = Annotated[Principal, Depends(require("runs:read"))]
Creator = Annotated[Principal, Depends(require("runs:create"))]
Responder = Annotated[Principal, Depends(require("approvals:respond"))]
Canceller = Annotated[Principal, Depends(require("runs:cancel"))]


@router.post("/threads")
async def create_thread(request: Request, principal: Creator) -> dict[str, Any]:
    body = await json_body(request)
    service = service_of(request)
    return await changing(
        request,
        service.create_thread,
        principal,
        body.get("thread_id"),
        body.get("metadata"),
        body.get("if_exists"),
    )


@router.post("/threads/search")
async def search_threads(request: Request, principal: Reader) -> list[dict[str, Any]]:
    body = await json_body(request)
    return await run_in_threadpool(service_of(request).search, principal, body)


@router.get("/threads/{thread_id}")
async def get_thread(thread_id: str, request: Request, principal: Reader) -> dict[str, Any]:
    service = service_of(request)
    row = await run_in_threadpool(service.thread, principal, thread_id)
    return await run_in_threadpool(service.thread_doc, row)


@router.patch("/threads/{thread_id}")
async def patch_thread(thread_id: str, request: Request, principal: Creator) -> dict[str, Any]:
    body = await json_body(request)
    return await changing(
        request, service_of(request).patch_thread, principal, thread_id, body.get("metadata")
    )


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(thread_id: str, request: Request, principal: Canceller) -> Response:
    await changing(request, service_of(request).delete, principal, thread_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/state")
async def get_state(thread_id: str, request: Request, principal: Reader) -> dict[str, Any]:
    return await run_in_threadpool(service_of(request).state, principal, thread_id)


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
async def get_state_at(
    thread_id: str, checkpoint_id: str, request: Request, principal: Reader
) -> dict[str, Any]:
    return await run_in_threadpool(service_of(request).state_at, principal, thread_id, checkpoint_id)


@router.post("/threads/{thread_id}/state")
async def update_state(thread_id: str, request: Request, principal: Responder) -> dict[str, Any]:
    """Only Agent Inbox's "ignore" (``{values: null, as_node: "__end__"}``): the run ends as cancelled."""
    body = await json_body(request)
    return await changing(request, service_of(request).ignore, principal, thread_id, body)


async def _history(
    request: Request, principal: Principal, thread_id: str, limit: Any, before: Any
) -> list[Any]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise ValidationError("limit must be an integer from 1 to 1000", details={"field": "limit"})
    if isinstance(before, dict):
        before = (before.get("configurable") or before).get("checkpoint_id")
    if before is not None and not isinstance(before, str):
        raise ValidationError("before must name a checkpoint", details={"field": "before"})
    return await run_in_threadpool(service_of(request).history, principal, thread_id, limit, before)


@router.post("/threads/{thread_id}/history")
async def post_history(thread_id: str, request: Request, principal: Reader) -> list[Any]:
    body = await json_body(request)
    return await _history(request, principal, thread_id, body.get("limit", 10), body.get("before"))


@router.get("/threads/{thread_id}/history")
async def get_history(thread_id: str, request: Request, principal: Reader, limit: int = 10) -> list[Any]:
    return await _history(request, principal, thread_id, limit, None)
