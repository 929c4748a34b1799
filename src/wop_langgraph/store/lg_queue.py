"""Enqueued LangGraph runs: what waits for a thread's current run to end, durably.

A run created with ``multitask_strategy: "enqueue"`` on a busy thread is a row of
:data:`~wop_langgraph.store.lg_threads.queued_runs_table` until its turn: the thread's
current OpenWOP run has ended (completed, failed or cancelled) and no older queued run is
ahead of it. Then it is taken (:func:`take_queued`) in the transaction that creates its
OpenWOP run and moves the thread to it, so it starts exactly once, whoever promotes it.
Every statement on that table lives here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, or_, select, update

from wop_langgraph.store.lg_threads import queued_runs_table, threads_table
from wop_langgraph.store.run_tables import runs_table
from wop_langgraph.store.runs import TERMINAL_STATUSES

__all__ = [
    "QueuedRun",
    "cancel_queued",
    "forget_queued",
    "insert_queued",
    "next_queued",
    "queued_of_thread",
    "queued_status",
    "ready_threads",
    "take_queued",
]

_QUEUED = "queued"
_CANCELLED = "cancelled"


@dataclass(frozen=True)
class QueuedRun:
    """A run waiting its turn on its thread (``status`` ``queued``), or cancelled before it started."""

    run_id: str
    thread_id: str
    tenant: str
    owner: dict[str, Any]
    graph_id: str
    assistant_id: str
    input: Any
    metadata: dict[str, Any]
    status: str
    created_at: datetime
    updated_at: datetime


def _queued(row: Any) -> QueuedRun:
    return QueuedRun(
        row.run_id,
        row.thread_id,
        row.tenant,
        dict(row.owner),
        row.graph_id,
        row.assistant_id,
        row.input,
        dict(row.metadata or {}),
        row.status,
        row.created_at,
        row.updated_at,
    )


def insert_queued(
    conn: Connection,
    run_id: str,
    thread_id: str,
    *,
    tenant: str,
    owner: Mapping[str, Any],
    graph_id: str,
    assistant_id: str,
    inputs: Any,
    metadata: Mapping[str, Any],
    now: datetime,
) -> None:
    """Queue run ``run_id`` (an id minted for ``tenant``) behind the thread's current run."""
    conn.execute(
        queued_runs_table.insert().values(
            run_id=run_id,
            thread_id=thread_id,
            tenant=tenant,
            owner=dict(owner),
            graph_id=graph_id,
            assistant_id=assistant_id,
            input=inputs,
            metadata=dict(metadata),
            status=_QUEUED,
            created_at=now,
            updated_at=now,
        )
    )


def next_queued(conn: Connection, thread_id: str) -> QueuedRun | None:
    """The thread's oldest run still waiting its turn, or ``None``."""
    q = queued_runs_table
    row = conn.execute(
        select(q)
        .where(q.c.thread_id == thread_id, q.c.status == _QUEUED)
        .order_by(q.c.created_at, q.c.run_id)
        .limit(1)
    ).first()
    return None if row is None else _queued(row)


def queued_of_thread(conn: Connection, thread_id: str, run_id: str | None = None) -> list[QueuedRun]:
    """The thread's queued and cancelled-before-start runs (only ``run_id``, if given), newest first."""
    q = queued_runs_table
    query = select(q).where(q.c.thread_id == thread_id)
    if run_id is not None:
        query = query.where(q.c.run_id == run_id)
    rows = conn.execute(query.order_by(q.c.created_at.desc(), q.c.run_id.desc())).all()
    return [_queued(row) for row in rows]


def queued_status(conn: Connection, run_id: str) -> str | None:
    """``queued`` or ``cancelled`` for a run that has not started; ``None``: no such queued run."""
    q = queued_runs_table
    row = conn.execute(select(q.c.status).where(q.c.run_id == run_id)).first()
    return None if row is None else str(row.status)


def cancel_queued(conn: Connection, run_id: str, *, now: datetime) -> bool:
    """Cancel a run before it starts (it never will); whether it was still queued."""
    q = queued_runs_table
    changed = conn.execute(
        update(q).where(q.c.run_id == run_id, q.c.status == _QUEUED).values(status=_CANCELLED, updated_at=now)
    ).rowcount
    return bool(changed)


def take_queued(conn: Connection, run_id: str) -> bool:
    """Remove a queued run as it starts (its OpenWOP run is created in the same transaction);
    whether this call took it (a concurrent promoter or a cancel may have come first)."""
    q = queued_runs_table
    return bool(conn.execute(q.delete().where(q.c.run_id == run_id, q.c.status == _QUEUED)).rowcount)


def ready_threads(conn: Connection, *, limit: int = 100) -> list[str]:
    """Threads with a queued run whose current run has ended (or that have none): their turn came."""
    t, r, q = threads_table, runs_table, queued_runs_table
    rows = conn.execute(
        select(t.c.thread_id)
        .select_from(t.outerjoin(r, r.c.run_id == t.c.run_id))
        .where(
            t.c.thread_id.in_(select(q.c.thread_id).where(q.c.status == _QUEUED)),
            or_(t.c.run_id.is_(None), r.c.status.in_(TERMINAL_STATUSES)),
        )
        .limit(limit)
    ).all()
    return [str(row.thread_id) for row in rows]


def forget_queued(conn: Connection, run_id: str) -> None:
    """Delete a run that was cancelled before it started (``DELETE /threads/{id}/runs/{run}``)."""
    q = queued_runs_table
    conn.execute(q.delete().where(q.c.run_id == run_id, q.c.status == _CANCELLED))
