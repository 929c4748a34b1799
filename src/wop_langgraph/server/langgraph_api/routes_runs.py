"""Runs of a thread: create (background, stream, wait), read, list, join, cancel; stateless runs.

Each creating response carries ``Content-Location: <prefix>/threads/{thread_id}/runs/{run_id}``,
which the SDKs read for the run's id; a creating stream also carries ``Location:
/threads/{thread_id}/runs/{run_id}/stream?stream_mode=...``, where both SDKs reconnect (with
``Last-Event-ID``) when the stream breaks. ``Location`` is relative to the API's base URL, without
the mount prefix, because both SDKs append it to their base URL (``/langgraph``) rather than
resolve it against the origin; it names the stream's modes, so the reconnect streams what the
run was started with. A ``command.resume`` needs the ``approvals:respond``
scope (it is a decision, recorded with the key's principal); new input needs ``runs:create``.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from wop_langgraph.host import Principal
from wop_langgraph.protocol.errors import Forbidden, ValidationError
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server.langgraph_api.auth import caller_key, require
from wop_langgraph.server.langgraph_api.bodies import changing, json_body, service_of
from wop_langgraph.server.langgraph_api.service import LangGraphService, Started
from wop_langgraph.server.langgraph_api.shapes import run_doc
from wop_langgraph.server.langgraph_api.streaming import frames, stream_modes, wait_until_resting
from wop_langgraph.server.state import state_of
from wop_langgraph.server.streams import SlotStreamingResponse

__all__ = ["router"]

router = APIRouter()
#: LangGraph's checkpoint ids (uuid6 text), which our stream events carry as their ids.
_CHECKPOINT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
Caller = Annotated[Principal, Depends(require())]
Reader = Annotated[Principal, Depends(require("runs:read"))]
Canceller = Annotated[Principal, Depends(require("runs:cancel"))]


def _need(principal: Principal, body: dict[str, Any]) -> None:
    """A resume is a decision (``approvals:respond``); anything else starts work (``runs:create``)."""
    command = body.get("command")
    scope = "approvals:respond" if isinstance(command, dict) and command else "runs:create"
    if scope not in principal.scopes:
        raise Forbidden(f"the API key lacks the scope {scope}", details={"requiredScopes": [scope]})


def _location(request: Request, started: Started) -> dict[str, str]:
    prefix = request.scope.get("root_path", "")
    return {"Content-Location": f"{prefix}/threads/{started.thread_id}/runs/{project_id(started.run_id)}"}


def _reconnect(started: Started, modes: list[str]) -> dict[str, str]:
    path = f"/threads/{started.thread_id}/runs/{project_id(started.run_id)}/stream"
    return {"Location": f"{path}?{urlencode([('stream_mode', m) for m in modes])}"}


async def _start(
    request: Request, principal: Principal, thread_id: str | None, *, wait: bool = False, stream: bool = False
) -> tuple[Started, dict[str, Any]]:
    """Start or resume the run a request names. ``wait`` (``runs/wait``): the request drives it
    to rest itself when one of the service's drive threads is free (see ``LangGraphService``)."""
    body = await json_body(request)
    _need(principal, body)
    modes = stream_modes(body.get("stream_mode"))  # refuse a bad mode before anything starts
    service = service_of(request)
    if thread_id is None:  # a stateless run: a thread of its own
        thread_id = str(uuid.uuid4())
        body = {**body, "if_not_exists": "create"}
    limiter = service.drive_limiter if wait else None
    if limiter is not None and limiter.available_tokens < 1:
        limiter = None  # every drive thread is busy: the workers drive this run
    operation = functools.partial(
        service.start, wait=wait, drive=limiter is not None, custom=stream and "custom" in modes
    )
    started = await changing(request, operation, principal, thread_id, body, limiter=limiter)
    return started, body


def _unwatching(
    service: LangGraphService, started: Started, modes: Sequence[str]
) -> Callable[[], None] | None:
    """What ends a custom-mode stream's watch of its run (taken by ``service.start`` or by the
    join route) when its response ends, however it ends."""
    if "custom" not in modes:
        return None
    return functools.partial(service.relay.unwatch, started.run_id)


async def _run_doc(request: Request, principal: Principal, started: Started) -> dict[str, Any]:
    service = service_of(request)
    row = await run_in_threadpool(service.run, principal, started.thread_id, project_id(started.run_id))
    return run_doc(row)


@router.post("/threads/{thread_id}/runs")
async def create_run(thread_id: str, request: Request, principal: Caller) -> JSONResponse:
    """A background run: answers at commit with the ``Run``."""
    started, _ = await _start(request, principal, thread_id)
    return JSONResponse(await _run_doc(request, principal, started), headers=_location(request, started))


async def _stream(request: Request, principal: Principal, thread_id: str | None) -> SlotStreamingResponse:
    # The slot is taken first: over the limit, the caller gets 429 before a run starts or a
    # byte of the stream is sent.
    slot = state_of(request).streams.hold(caller_key(principal))
    try:
        started, body = await _start(request, principal, thread_id, stream=True)
        service = service_of(request)
        modes = stream_modes(body.get("stream_mode"))
        return SlotStreamingResponse(
            slot,
            frames(
                request,
                state_of(request),
                service,
                principal,
                started,
                modes,
                cancel_on_disconnect=body.get("on_disconnect") == "cancel",
            ),
            media_type="text/event-stream",
            on_close=_unwatching(service, started, modes),
            headers={
                **_location(request, started),
                **_reconnect(started, modes),
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            },
        )
    except BaseException:
        slot.release()
        raise


@router.post("/threads/{thread_id}/runs/stream")
async def stream_run(thread_id: str, request: Request, principal: Caller) -> SlotStreamingResponse:
    return await _stream(request, principal, thread_id)


@router.post("/runs/stream")
async def stream_stateless(request: Request, principal: Caller) -> SlotStreamingResponse:
    return await _stream(request, principal, None)


async def _wait(request: Request, principal: Principal, thread_id: str | None) -> JSONResponse:
    started, _ = await _start(request, principal, thread_id, wait=True)
    outcome = started.outcome  # read by the call that drove the run to rest, if it did
    if outcome is None:  # a worker drives it
        await wait_until_resting(state_of(request), service_of(request), started)
        outcome = await run_in_threadpool(service_of(request).outcome, started)
    return JSONResponse(outcome, headers=_location(request, started))


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(thread_id: str, request: Request, principal: Caller) -> JSONResponse:
    return await _wait(request, principal, thread_id)


@router.post("/runs/wait")
async def wait_stateless(request: Request, principal: Caller) -> JSONResponse:
    return await _wait(request, principal, None)


@router.get("/threads/{thread_id}/runs")
async def list_runs(thread_id: str, request: Request, principal: Reader) -> list[dict[str, Any]]:
    rows = await run_in_threadpool(service_of(request).runs, principal, thread_id)
    return [run_doc(row) for row in rows]


def _started(row: Any) -> Started:
    return Started(row.thread_id, row.run_id, row.workflow_id, None)


@router.get("/threads/{thread_id}/runs/{run_id}")
async def get_run(thread_id: str, run_id: str, request: Request, principal: Reader) -> dict[str, Any]:
    return run_doc(await run_in_threadpool(service_of(request).run, principal, thread_id, run_id))


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(thread_id: str, run_id: str, request: Request, principal: Reader) -> dict[str, Any]:
    """Wait until the run rests; its outcome (as ``runs.wait``)."""
    service = service_of(request)
    started = _started(await run_in_threadpool(service.run, principal, thread_id, run_id))
    await wait_until_resting(state_of(request), service_of(request), started)
    return await run_in_threadpool(service.outcome, started)


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_stream(
    thread_id: str, run_id: str, request: Request, principal: Reader
) -> SlotStreamingResponse:
    """Follow a run in the requested modes: from now on, or, with ``Last-Event-ID`` (an event id of
    an earlier stream of the run: a checkpoint id), from the step after that event."""
    service = service_of(request)
    row = await run_in_threadpool(service.run, principal, thread_id, run_id)
    last_event_id = request.headers.get("last-event-id", "").strip()
    if last_event_id and not _CHECKPOINT_ID.fullmatch(last_event_id):
        raise ValidationError(
            "Last-Event-ID must be an event id of this run's stream", details={"header": "Last-Event-ID"}
        )
    baseline: str | None = last_event_id or None
    if baseline is None:
        baseline = await run_in_threadpool(service.latest_checkpoint, row.workflow_id, row.run_id)
    started = Started(
        row.thread_id, row.run_id, row.workflow_id, baseline, service.relay.position(row.run_id)
    )
    modes = stream_modes([m for m in request.query_params.getlist("stream_mode") if m] or None)
    slot = state_of(request).streams.hold(caller_key(principal))  # 429 before the stream starts
    if "custom" in modes:
        service.relay.watch(row.run_id)  # its next drives relay, until the response ends
    try:
        return SlotStreamingResponse(
            slot,
            frames(request, state_of(request), service, principal, started, modes),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            on_close=_unwatching(service, started, modes),
        )
    except BaseException:
        if "custom" in modes:
            service.relay.unwatch(row.run_id)
        slot.release()
        raise


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(thread_id: str, run_id: str, request: Request, principal: Canceller) -> Response:
    """Cancel the run (nothing its interrupted step returns is committed); ``wait=1`` waits for it."""
    service = service_of(request)
    await changing(request, service.cancel, principal, thread_id, run_id)
    if request.query_params.get("wait") in ("1", "true"):
        row = await run_in_threadpool(service.run, principal, thread_id, run_id)
        await wait_until_resting(state_of(request), service, _started(row))
    return Response(status_code=202)


@router.delete("/threads/{thread_id}/runs/{run_id}")
async def delete_run(thread_id: str, run_id: str, request: Request, principal: Canceller) -> Response:
    """Delete an ended run from the thread's runs (``409`` while it has not ended); its OpenWOP
    run and event log stay."""
    await changing(request, service_of(request).delete_run, principal, thread_id, run_id)
    return Response(status_code=204)
