"""Lists for operators and reviewers: a tenant's runs, and the pending interrupts a caller may answer.

Both lists are pages in a stable total order, continued by a cursor. A cursor is the position of
the last item of its page, written ``<microseconds since the epoch>.<opaque part of its id>``:
every string of that grammar names a position, so a cursor is never "expired", and the caller's
tenant (never the cursor) decides which rows can appear.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from wop_langgraph._clock import as_utc, iso_z
from wop_langgraph.host.eligibility import may_answer
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.principal import MembershipResolver, Principal
from wop_langgraph.store.engine import Engine, reading
from wop_langgraph.store.interrupts import InterruptRecord, PendingFilter, list_pending
from wop_langgraph.store.runs import RunFilter, list_runs

__all__ = [
    "CURSOR_PATTERN",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "InterruptPage",
    "PendingItem",
    "RunPage",
    "answerable_page",
    "pending_item_wire",
    "run_page",
    "utc_bound",
]

DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 200
"""The most items one page holds; a larger ``limit`` is clamped to it."""

CURSOR_PATTERN: Final = r"^(0|[1-9][0-9]{0,16})\.[A-Za-z0-9._~-]{16,128}$"
_CURSOR = re.compile(CURSOR_PATTERN)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
#: Pending interrupts read per query while filling a page with those the caller may answer.
_BATCH: Final = 200


@dataclass(frozen=True)
class RunPage:
    """One page of runs (``RunSnapshot`` dicts, newest first) and the cursor of the next, if any."""

    runs: list[dict[str, Any]]
    next_cursor: str | None


@dataclass(frozen=True)
class PendingItem:
    """A pending interrupt the caller may answer, with its run's workflow."""

    record: InterruptRecord
    workflow_id: str


@dataclass(frozen=True)
class InterruptPage:
    """One page of answerable pending interrupts (oldest first) and the cursor of the next, if any."""

    items: list[PendingItem]
    next_cursor: str | None


def page_size(limit: int | None) -> int:
    """``limit`` clamped to ``1..MAX_PAGE_SIZE`` (``None``: the default).

    Raises:
        ValidationError: a limit below 1.
    """
    if limit is None:
        return DEFAULT_PAGE_SIZE
    if limit < 1:
        raise ValidationError("limit must be at least 1", details={"path": "/limit"})
    return min(limit, MAX_PAGE_SIZE)


def encode_cursor(created_at: datetime, tenant_bound_id: str) -> str:
    """The cursor of an item created at ``created_at`` with this id."""
    micros = (as_utc(created_at) - _EPOCH) // timedelta(microseconds=1)
    return f"{micros}.{tenant_bound_id.rpartition('/')[2]}"


def decode_cursor(cursor: str | None, tenant: str) -> tuple[datetime, str] | None:
    """The ``(created_at, id)`` position a cursor names, the id bound to ``tenant``.

    Raises:
        ValidationError: text outside the cursor grammar.
    """
    if cursor is None:
        return None
    if not _CURSOR.fullmatch(cursor):
        raise ValidationError("cursor is not one this host issued (nextCursor)", details={"path": "/cursor"})
    micros, _, opaque = cursor.partition(".")
    return _EPOCH + timedelta(microseconds=int(micros)), f"{tenant}/{opaque}"


def utc_bound(moment: datetime | None) -> datetime | None:
    """A filter's datetime in UTC (a naive one is taken as UTC): the store compares in UTC."""
    return None if moment is None else as_utc(moment)


def run_page(
    engine: Engine,
    tenant: str,
    where: RunFilter,
    snapshot_of: Callable[[Any], dict[str, Any]],
    *,
    cursor: str | None,
    limit: int | None,
) -> RunPage:
    """A page of ``tenant``'s runs matching ``where``, newest first.

    Raises:
        ValidationError: a malformed cursor, or a limit below 1.
    """
    size = page_size(limit)
    after = decode_cursor(cursor, tenant)
    with reading(engine) as conn:
        rows = list_runs(conn, tenant, where, after=after, limit=size + 1)
    more = len(rows) > size
    rows = rows[:size]
    last = rows[-1] if more else None
    return RunPage(
        [snapshot_of(row) for row in rows],
        encode_cursor(last.created_at, last.run_id) if last is not None else None,
    )


def answerable_page(
    engine: Engine,
    principal: Principal,
    where: PendingFilter,
    *,
    now: datetime,
    ref_kinds: Iterable[str],
    membership: MembershipResolver | None,
    cursor: str | None,
    limit: int | None,
) -> InterruptPage:
    """A page of the pending interrupts of ``principal``'s tenant that ``principal`` may answer
    now (eligible, no vote of theirs yet, deadline not passed), oldest first.

    Eligibility is decided per row in Python (approver lists live in the payload), so the
    tenant's pending rows are read in batches until the page is full or none are left.

    Raises:
        ValidationError: a malformed cursor, or a limit below 1.
    """
    size = page_size(limit)
    after = decode_cursor(cursor, principal.tenant)
    kinds = frozenset(ref_kinds)
    found: list[PendingItem] = []
    exhausted = False
    while len(found) <= size and not exhausted:
        with reading(engine) as conn:
            batch = list_pending(conn, principal.tenant, where, after=after, limit=_BATCH)
        exhausted = len(batch) < _BATCH
        for record, workflow_id in batch:
            after = (record.created_at, record.interrupt_id)
            if _answerable(record, principal, now, kinds, membership):
                found.append(PendingItem(record, workflow_id))
                if len(found) > size:
                    break
    more = len(found) > size
    items = found[:size]
    last = items[-1].record if more else None
    return InterruptPage(items, encode_cursor(last.created_at, last.interrupt_id) if last else None)


def _answerable(
    record: InterruptRecord,
    principal: Principal,
    now: datetime,
    ref_kinds: frozenset[str],
    membership: MembershipResolver | None,
) -> bool:
    if record.deadline is not None and as_utc(record.deadline) <= as_utc(now):
        return False  # an answer now would only time it out
    data = record.payload.get("data") or {}
    return may_answer(record.kind, data, record.votes, principal, ref_kinds=ref_kinds, membership=membership)


def pending_item_wire(item: PendingItem, resolve_path: str) -> dict[str, Any]:
    """The JSON of one answerable interrupt: where it waits, since when, and its payload."""
    record = item.record
    doc: dict[str, Any] = {
        "interruptId": record.interrupt_id,
        "runId": record.run_id,
        "workflowId": item.workflow_id,
        "nodeId": record.node_id,
        "kind": record.kind,
        "key": record.key,
        "createdAt": iso_z(record.created_at),
        "payload": record.payload,
        "resolveUrl": resolve_path,
    }
    if record.deadline is not None:
        doc["expiresAt"] = iso_z(record.deadline)
    if record.votes:
        doc["votes"] = len(record.votes)
    return doc
