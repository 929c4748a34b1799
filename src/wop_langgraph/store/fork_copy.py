"""Copying a run's checkpoint rows into a fork's thread (the statements of ``host/fork.py``).

A fork starts from a copy of one of its source's checkpoints, with the writes that are fixed
history; which rows are copied is the host's decision (``host/fork.py``), how they are read
and copied is here. Every copy keeps the row's checkpoint id (so LangGraph derives the same
task and interrupt ids in the fork) and runs in the transaction that creates the fork.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table, checkpoints_table
from wop_langgraph.store.run_tables import runs_table

__all__ = [
    "checkpoint_row",
    "copy_checkpoint",
    "copy_write",
    "insert_fork_run",
    "latest_checkpoint_writing",
    "root_checkpoints",
    "root_task_ids",
    "writes_of",
]


def insert_fork_run(
    conn: Connection, source: Any, fork_id: str, overlay: Mapping[str, Any], now: datetime
) -> None:
    """The fork's run row: the source's workflow, inputs, owner (verbatim) and run options.

    No ``callbackUrl``: a fork does not inherit its source's push configuration (replay.md
    §Fan-out), so nothing of the copied history is delivered again.
    """
    conn.execute(
        runs_table.insert().values(
            run_id=fork_id,
            workflow_id=source.workflow_id,
            tenant=source.tenant,
            owner=source.owner,
            status="pending",
            inputs=source.inputs,
            configurable=overlay.get("configurable", source.configurable),
            tags=overlay.get("tags", source.tags),
            run_metadata=overlay.get("metadata", source.run_metadata),
            callback_url=None,
            created_at=now,
            updated_at=now,
        )
    )


def root_task_ids(conn: Connection, thread_id: str) -> list[str]:
    """Every task with writes on a root checkpoint (namespace ``""``) of ``thread_id``."""
    w = checkpoint_writes_table
    return list(
        conn.execute(
            select(w.c.task_id).where(w.c.thread_id == thread_id, w.c.checkpoint_ns == "").distinct()
        ).scalars()
    )


def root_checkpoints(conn: Connection, thread_id: str) -> list[Any]:
    """The root checkpoint rows of ``thread_id``, oldest first."""
    cp = checkpoints_table
    return list(
        conn.execute(
            select(cp)
            .where(cp.c.thread_id == thread_id, cp.c.checkpoint_ns == "")
            .order_by(cp.c.checkpoint_id)
        ).all()
    )


def writes_of(
    conn: Connection, thread_id: str, checkpoint_id: str, ns: str = "", *, ordered: bool = True
) -> list[Any]:
    """The write rows of one checkpoint (by task, then index, if ``ordered``)."""
    w = checkpoint_writes_table
    query = select(w).where(
        w.c.thread_id == thread_id, w.c.checkpoint_ns == ns, w.c.checkpoint_id == checkpoint_id
    )
    if ordered:
        query = query.order_by(w.c.task_id, w.c.idx)
    return list(conn.execute(query).all())


def latest_checkpoint_writing(conn: Connection, thread_id: str, ns: str, task_id: str) -> str | None:
    """The newest checkpoint of namespace ``ns`` holding a write of ``task_id``, if any."""
    w = checkpoint_writes_table
    found = conn.execute(
        select(w.c.checkpoint_id)
        .where(w.c.thread_id == thread_id, w.c.checkpoint_ns == ns, w.c.task_id == task_id)
        .order_by(w.c.checkpoint_id.desc())
        .limit(1)
    ).scalar()
    return None if found is None else str(found)


def checkpoint_row(conn: Connection, thread_id: str, ns: str, checkpoint_id: str) -> Any | None:
    """One checkpoint row, or ``None``."""
    cp = checkpoints_table
    return conn.execute(
        select(cp).where(
            cp.c.thread_id == thread_id, cp.c.checkpoint_ns == ns, cp.c.checkpoint_id == checkpoint_id
        )
    ).first()


def copy_checkpoint(conn: Connection, row: Any, fork_id: str) -> None:
    """Store checkpoint ``row`` in ``fork_id``'s thread, as a root of its history (no parent,
    no LangGraph run id)."""
    values = dict(row._mapping)
    values.update(thread_id=fork_id, parent_checkpoint_id=None, run_id=None)
    conn.execute(checkpoints_table.insert().values(**values))


def copy_write(conn: Connection, values: Mapping[str, Any]) -> None:
    """Store one write row (``values``: its columns, the fork's ``thread_id`` already set)."""
    conn.execute(checkpoint_writes_table.insert().values(**values))
