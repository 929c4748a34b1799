"""Run events: ``GET /runs/{runId}/events`` (SSE) and ``GET /runs/{runId}/events/poll`` (long-poll).

Both read the durable event log through the host; neither holds anything in memory between
requests, so any replica can serve any run. SSE frames are ``id: <sequence>``, ``event: <type>``,
``data: <RunEventDoc>``; ``Last-Event-ID`` resumes after that sequence; a keep-alive comment goes
out every 15 s; the stream closes after the terminal event.

Readers do not poll: between reads they wait for a wake-up that an append to the run sends
after its commit (in process, and across processes through PostgreSQL ``NOTIFY``), so an idle
stream costs no queries. Only SQLite shared with separate worker processes (``serve --workers
0``) re-checks every :data:`FALLBACK_SECONDS`. Open streams are limited per caller and per
server: the slot is taken before the response starts, so a stream over the limit is answered
``429 rate_limited`` with ``Retry-After``, never a ``200`` that is cut (:mod:`.streams`).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from starlette.concurrency import run_in_threadpool

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.host.driver import TERMINAL_STATUSES
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.storable import INT64_MAX
from wop_langgraph.server.auth import require_scopes
from wop_langgraph.server.paths import run_id_from_path
from wop_langgraph.server.state import ServerState, server_state
from wop_langgraph.server.stream_modes import TERMINAL_EVENT_TYPES, EventFilter, event_filter
from wop_langgraph.server.streams import SlotStreamingResponse
from wop_langgraph.store.appended import RunWatch, signals_for
from wop_langgraph.store.engine import reading
from wop_langgraph.store.events import last_sequence

__all__ = ["FALLBACK_SECONDS", "KEEP_ALIVE_SECONDS", "router"]

router = APIRouter()
State = Annotated[ServerState, Depends(server_state)]
Reader = Annotated[Principal, Depends(require_scopes("runs:read"))]
KEEP_ALIVE_SECONDS = 15.0
#: Re-check interval where no wake-up can cross processes (SQLite with separate workers).
FALLBACK_SECONDS = 1.0


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
    with state.streams.hold(_caller(principal)), _watch(state, run_id) as appended:
        while True:
            appended.arm()
            batch, status, last = await run_in_threadpool(_read, host, run_id, after, page)
            events = [e for e in batch if keep(e)]
            after = batch[-1]["sequence"] if batch else after  # a page the filter emptied is passed over
            terminal = status in TERMINAL_STATUSES
            remaining = deadline - time.monotonic()
            if events or terminal or remaining <= 0:
                return {
                    "runId": run_id,
                    "events": events,
                    "lastSequence": last,
                    "status": status,
                    "isTerminal": terminal,
                }
            await _wait_for_append(state, appended, remaining)


@router.get("/runs/{runId}/events")
async def stream_events(
    runId: str,
    request: Request,
    state: State,
    principal: Reader,
    streamMode: str | None = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> SlotStreamingResponse:
    """The run's events as Server-Sent Events, through its terminal event."""
    run_id = run_id_from_path(runId, principal)
    keep = event_filter(streamMode, default="updates")
    after = _cursor(last_event_id)
    await run_in_threadpool(state.host.snapshot, run_id)  # 404 before the stream starts
    slot = state.streams.hold(_caller(principal))  # 429 before the stream starts
    try:
        return SlotStreamingResponse(
            slot,
            _frames(request, state, run_id, after, keep),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    except BaseException:
        slot.release()
        raise


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
    request: Request, state: ServerState, run_id: str, after: int, keep: EventFilter
) -> AsyncIterator[str]:
    with _watch(state, run_id) as appended:
        last_sent = time.monotonic()
        yield "retry: 1000\n\n"
        while True:
            page = state.settings.events_page_size
            appended.arm()
            batch, status, _ = await run_in_threadpool(_read, state.host, run_id, after, page)
            for event in batch:
                after = event["sequence"]
                if keep(event):
                    data = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
                    yield f"id: {event['sequence']}\nevent: {event['type']}\ndata: {data}\n\n"
                    last_sent = time.monotonic()
                if event["type"] in TERMINAL_EVENT_TYPES:
                    return
            if batch:
                continue  # a full batch: there may be more
            if status in TERMINAL_STATUSES or await request.is_disconnected():
                return
            quiet = KEEP_ALIVE_SECONDS - (time.monotonic() - last_sent)
            if quiet <= 0:
                yield ": keep-alive\n\n"
                last_sent = time.monotonic()
                continue
            await _wait_for_append(state, appended, quiet)


def _watch(state: ServerState, run_id: str) -> AbstractContextManager[RunWatch]:
    """Wake-ups for appends to ``run_id``; arm it before each read so none is missed."""
    return signals_for(state.host.engine).watch(run_id)


async def _wait_for_append(state: ServerState, appended: RunWatch, timeout: float) -> None:
    """Wait for an append since the last read (bounded by ``timeout``), without touching the database."""
    if not signals_for(state.host.engine).cross_process and state.settings.workers == 0:
        timeout = min(timeout, FALLBACK_SECONDS)  # other processes append here unannounced
    await appended.wait(timeout)


def _caller(principal: Principal) -> str:
    return f"{principal.tenant}/{principal.subject_id}"


def _read(host: WopHost, run_id: str, after: int, limit: int | None) -> tuple[list[dict[str, Any]], str, int]:
    """Events after ``after``, the run's status (read first) and the log's last sequence."""
    status = host.snapshot(run_id)["status"]
    events = host.events(run_id, after=after, limit=limit)
    with reading(host.engine) as conn:
        last = last_sequence(conn, run_id)
    return events, status, last
