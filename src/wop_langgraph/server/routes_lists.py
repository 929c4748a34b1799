"""The lists: ``GET /runs`` (the caller's tenant's runs) and ``GET /interrupts`` (what the caller may answer).

``GET /runs`` follows the official ``listRuns`` (RFC 0182): newest first, ``limit`` clamped to
the page size, an opaque ``cursor`` from the previous page's ``nextCursor``, exact-match
``workflowId`` and ``status``; this host adds ``createdAfter`` (inclusive), ``createdBefore``
(exclusive) and ``tag`` (repeatable: runs carrying every one). ``GET /interrupts`` is this
host's own: the pending interrupts of the caller's tenant that the caller may answer (approver
lists applied, no second vote, no passed deadline), oldest first, filtered by ``workflowId``,
``kind`` and creation time, paged the same way. The store does the reading
(:func:`~wop_langgraph.store.runs.list_runs`, :func:`~wop_langgraph.store.interrupts.list_pending`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from wop_langgraph.host import Principal
from wop_langgraph.host.listing import CURSOR_PATTERN, pending_item_wire
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.ids import AUTHOR_ID_PATTERN, project_id
from wop_langgraph.protocol.payloads import InterruptKind
from wop_langgraph.protocol.snapshot import RunStatus
from wop_langgraph.protocol.storable import INT64_MAX
from wop_langgraph.server.auth import require_scopes
from wop_langgraph.server.state import ServerState, server_state

__all__ = ["TAG_PATTERN", "router"]

router = APIRouter()
State = Annotated[ServerState, Depends(server_state)]
#: A tag filter: any text without NUL (which the store cannot compare), at most 256 characters.
TAG_PATTERN = r"^[^\u0000]{0,256}$"
_TAG = re.compile(TAG_PATTERN)

Limit = Annotated[
    int | None, Query(ge=1, le=INT64_MAX, description="Page size (default 50), clamped to 200.")
]
Cursor = Annotated[str | None, Query(pattern=CURSOR_PATTERN, description="The previous page's nextCursor.")]
WorkflowFilter = Annotated[str | None, Query(alias="workflowId", pattern=AUTHOR_ID_PATTERN)]
#: An RFC 3339 date-time (what ``format: date-time`` admits; numbers are not times here).
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
CreatedAfter = Annotated[str | None, Query(alias="createdAfter", description="Created at or after.")]
CreatedBefore = Annotated[str | None, Query(alias="createdBefore", description="Created before.")]


def _moment(text: str | None, name: str) -> datetime | None:
    """An RFC 3339 date-time query parameter, in UTC (clamped to the years 1 to 9999).

    Raises:
        ValidationError: anything else (``details.path`` names the parameter).
    """
    if text is None:
        return None
    try:
        if not _DATE_TIME.fullmatch(text):
            raise ValueError(text)
        moment = datetime.fromisoformat(text.upper())
    except ValueError:
        raise ValidationError(
            f"{name} must be an RFC 3339 date-time such as 2026-01-31T09:00:00Z", details={"path": f"/{name}"}
        ) from None
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # an offset past the first or last representable instant
        return (datetime.min if moment.year == 1 else datetime.max).replace(tzinfo=UTC)


@router.get("/runs")
async def list_runs(
    state: State,
    principal: Annotated[Principal, Depends(require_scopes("runs:read"))],
    limit: Limit = None,
    cursor: Cursor = None,
    workflow_id: WorkflowFilter = None,
    status: RunStatus | None = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    tag: Annotated[list[str] | None, Query(description="Runs carrying this tag (repeatable: all).")] = None,
) -> dict[str, Any]:
    """A page of the caller's tenant's runs (``RunSnapshot``s), newest first: ``{runs, nextCursor?}``."""
    for value in tag or ():
        if not _TAG.fullmatch(value):
            raise ValidationError("a tag is at most 256 characters, without NUL", details={"path": "/tag"})
    page = await run_in_threadpool(
        state.host.list_runs,
        principal.tenant,
        status=status,
        workflow_id=workflow_id,
        created_after=_moment(created_after, "createdAfter"),
        created_before=_moment(created_before, "createdBefore"),
        tags=tag or (),
        cursor=cursor,
        limit=limit,
    )
    body: dict[str, Any] = {"runs": page.runs}
    if page.next_cursor is not None:
        body["nextCursor"] = page.next_cursor
    return body


@router.get("/interrupts")
async def list_interrupts(
    state: State,
    principal: Annotated[Principal, Depends(require_scopes("approvals:respond"))],
    limit: Limit = None,
    cursor: Cursor = None,
    workflow_id: WorkflowFilter = None,
    kind: InterruptKind | None = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
) -> dict[str, Any]:
    """A page of the pending interrupts the caller may answer, oldest first: ``{interrupts, nextCursor?}``.

    Each item names its run, workflow, node, kind and key, when it was raised (and its deadline
    as ``expiresAt``), carries its ``InterruptPayload`` and the path to resolve it by run.
    """
    page = await run_in_threadpool(
        state.host.answerable_interrupts,
        principal,
        workflow_id=workflow_id,
        kind=kind,
        created_after=_moment(created_after, "createdAfter"),
        created_before=_moment(created_before, "createdBefore"),
        cursor=cursor,
        limit=limit,
    )
    items = [
        pending_item_wire(
            item,
            f"/runs/{project_id(item.record.run_id)}/interrupts/{project_id(item.record.node_id)}",
        )
        for item in page.items
    ]
    body: dict[str, Any] = {"interrupts": items}
    if page.next_cursor is not None:
        body["nextCursor"] = page.next_cursor
    return body
