"""Run events: ``GET /runs/{runId}/events`` (SSE) and ``GET /runs/{runId}/events/poll`` (long-poll).

Both read the durable event log through the host; neither holds anything in memory between
requests, so any replica can serve any run. SSE frames are ``id: <sequence>``, ``event: <type>``,
``data: <RunEventDoc>``; ``Last-Event-ID`` resumes after that sequence; a keep-alive comment goes
out every 15 s; the stream closes after the terminal event.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from sqlalchemy import func, select
from starlette.concurrency import run_in_threadpool

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.host.driver import TERMINAL_STATUSES
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.storable import INT64_MAX
from wop_langgraph.server.auth import require_scopes
from wop_langgraph.server.paths import run_id_from_path
from wop_langgraph.server.state import ServerState, server_state
from wop_langgraph.server.stream_modes import TERMINAL_EVENT_TYPES, EventFilter, event_filter
from wop_langgraph.store.run_tables import events_table

__all__ = ["KEEP_ALIVE_SECONDS", "POLL_INTERVAL_SECONDS", "router"]

router = APIRouter()
State = Annotated[ServerState, Depends(server_state)]
Reader = Annotated[Principal, Depends(require_scopes("runs:read"))]
KEEP_ALIVE_SECONDS = 15.0
POLL_INTERVAL_SECONDS = 0.1


@router.get("/runs/{runId}/events/poll")
async def poll_events(
    runId: str,
    state: State,
    principal: Reader,
    afterSequence: Annotated[int, Query(ge=-1, le=INT64_MAX)] = -1,
    timeout: Annotated[int, Query(ge=0, le=60)] = 30,
    streamMode: str | None = None,
) -> dict[str, Any]:
    """``{runId, events, lastSequence, status, isTerminal}``, waiting up to ``timeout`` s for events."""
    run_id = run_id_from_path(runId, principal)
    keep = event_filter(streamMode, default="debug")
    host = state.host
    deadline = time.monotonic() + timeout
    after, page = afterSequence, state.settings.events_page_size
    while True:
        batch, status, last = await run_in_threadpool(_read, host, run_id, after, page)
        events = [e for e in batch if keep(e)]
        after = batch[-1]["sequence"] if batch else after  # a page the filter emptied is passed over
        terminal = status in TERMINAL_STATUSES
        if events or terminal or time.monotonic() >= deadline:
            return {
                "runId": run_id,
                "events": events,
                "lastSequence": last,
                "status": status,
                "isTerminal": terminal,
            }
        await asyncio.sleep(POLL_INTERVAL_SECONDS)


@router.get("/runs/{runId}/events")
async def stream_events(
    runId: str,
    request: Request,
    state: State,
    principal: Reader,
    streamMode: str | None = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    """The run's events as Server-Sent Events, through its terminal event."""
    run_id = run_id_from_path(runId, principal)
    keep = event_filter(streamMode, default="updates")
    after = _cursor(last_event_id)
    await run_in_threadpool(state.host.snapshot, run_id)  # 404 before the stream starts
    return StreamingResponse(
        _frames(request, state.host, run_id, after, keep, state.settings.events_page_size),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _cursor(last_event_id: str | None) -> int:
    if last_event_id is None or not last_event_id.strip():
        return -1
    try:
        value = int(last_event_id.strip())
    except ValueError:
        raise ValidationError(
            "Last-Event-ID must be an event sequence", details={"header": "Last-Event-ID"}
        ) from None
    if not -1 <= value <= INT64_MAX:
        raise ValidationError("Last-Event-ID must be an event sequence", details={"header": "Last-Event-ID"})
    return value


async def _frames(
    request: Request, host: WopHost, run_id: str, after: int, keep: EventFilter, page: int
) -> AsyncIterator[str]:
    last_sent = time.monotonic()
    yield "retry: 1000\n\n"
    while True:
        batch, status, _ = await run_in_threadpool(_read, host, run_id, after, page)
        for event in batch:
            after = event["sequence"]
            if keep(event):
                data = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
                yield f"id: {event['sequence']}\nevent: {event['type']}\ndata: {data}\n\n"
                last_sent = time.monotonic()
            if event["type"] in TERMINAL_EVENT_TYPES:
                return
        if not batch:
            if status in TERMINAL_STATUSES or await request.is_disconnected():
                return
            if time.monotonic() - last_sent >= KEEP_ALIVE_SECONDS:
                yield ": keep-alive\n\n"
                last_sent = time.monotonic()
            await asyncio.sleep(POLL_INTERVAL_SECONDS)


def _read(host: WopHost, run_id: str, after: int, limit: int | None) -> tuple[list[dict[str, Any]], str, int]:
    """Events after ``after``, the run's status (read first) and the log's last sequence."""
    status = host.snapshot(run_id)["status"]
    events = host.events(run_id, after=after, limit=limit)
    with host.engine.connect() as conn:
        last = conn.execute(
            select(func.max(events_table.c.sequence)).where(events_table.c.run_id == run_id)
        ).scalar()
    return events, status, -1 if last is None else int(last)
