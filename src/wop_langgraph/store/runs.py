"""Run rows: the one place the host looks a run up by id, lists a tenant's runs, creates and
cancels a run."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, String, and_, bindparam, exists, func, or_, select, update
from sqlalchemy.dialects.postgresql import JSONB

from wop_langgraph.store.held import HeldWrite
from wop_langgraph.store.run_tables import runs_table
from wop_langgraph.store.statements import driver_statement

__all__ = [
    "TERMINAL_STATUSES",
    "RunFilter",
    "cancel_run_row",
    "get_run",
    "insert_run_leading",
    "insert_run_write",
    "list_runs",
    "queue_entry",
    "run_status",
    "status_and_workflow",
    "tenant_runs_of",
    "unfinished",
    "workflow_of",
]

#: Statuses a run never leaves.
TERMINAL_STATUSES = ("completed", "failed", "cancelled")


def get_run(conn: Connection, run_id: str) -> Any | None:
    """The run's row (``None`` if there is no such run)."""
    rows = driver_statement(_get_run_statement()).named(conn, {"get_run_id": run_id})
    return rows[0] if rows else None


def unfinished() -> ColumnElement[bool]:
    """The run is not in a terminal status.

    Spelled out rather than ``status.not_in(...)``: a literal list renders per execution, and
    the statements that use this are compiled once (see :mod:`.statements`).
    """
    return and_(*(runs_table.c.status != status for status in TERMINAL_STATUSES))


def tenant_runs_of(conn: Connection, tenant: str, workflow_ids: Sequence[str]) -> list[Any]:
    """The ``run_id`` and ``run_metadata`` (rows) of ``tenant``'s runs of ``workflow_ids``."""
    return list(
        conn.execute(
            select(runs_table.c.run_id, runs_table.c.run_metadata).where(
                runs_table.c.tenant == tenant,
                runs_table.c.workflow_id.in_(workflow_ids),
            )
        ).all()
    )


def status_and_workflow(conn: Connection, run_id: str) -> Any | None:
    """The run's ``status`` and ``workflow_id`` (a row), or ``None`` if there is no such run."""
    return conn.execute(
        select(runs_table.c.status, runs_table.c.workflow_id).where(runs_table.c.run_id == run_id)
    ).first()


def workflow_of(conn: Connection, run_id: str) -> str | None:
    """The workflow id of ``run_id`` (``None`` if there is no such run).

    Run by the statement engine, so that what waits to go ahead of the transaction's next
    statement goes first: the run's own row, in the first transaction of a drive that created
    it (``WopHost._create_held``), where the recorder asks for a registered approval policy
    before it records the first interrupt."""
    rows = driver_statement(_workflow_statement()).rows(conn, {"workflow_run_id": run_id})
    return str(rows[0][0]) if rows else None


@functools.cache
def _workflow_statement() -> Any:
    return select(runs_table.c.workflow_id).where(runs_table.c.run_id == bindparam("workflow_run_id"))


def queue_entry(conn: Connection, run_id: str) -> Any | None:
    """The run's ``queued_at`` and ``workflow_id`` (a row), or ``None`` if there is no such run."""
    return conn.execute(
        select(runs_table.c.queued_at, runs_table.c.workflow_id).where(runs_table.c.run_id == run_id)
    ).first()


def run_status(conn: Connection, run_id: str) -> str | None:
    """The run's status (``None`` if there is no such run)."""
    row = conn.execute(select(runs_table.c.status).where(runs_table.c.run_id == run_id)).first()
    return None if row is None else str(row.status)


def cancel_run_row(conn: Connection, run_id: str, *, now: datetime) -> bool:
    """Mark the run ``cancelled`` and out of the queue, unless it is terminal; whether it was
    not (the row changed)."""
    changed = conn.execute(
        update(runs_table)
        .where(runs_table.c.run_id == run_id, runs_table.c.status.not_in(TERMINAL_STATUSES))
        .values(
            status="cancelled",
            current_node_id=None,
            updated_at=now,
            completed_at=now,
            queued_at=None,
        )
    ).rowcount
    return bool(changed)


def insert_run_leading(values: dict[str, Any], *, notify_channel: str | None) -> tuple[Any, dict[str, Any]]:
    """A new run's row with ``values`` (column -> value), as the statement and parameters that
    lead the append of its ``run.started`` (one statement with it); with ``notify_channel``
    (PostgreSQL) the statement also sends the queue's NOTIFY."""
    params = {f"new_run_{name}": value for name, value in values.items()}
    if notify_channel is not None:
        params["new_run_queue_channel"] = notify_channel
    return _insert_run_statement(tuple(values), notify=notify_channel is not None), params


def insert_run_write(values: dict[str, Any]) -> HeldWrite:
    """A new run's row with ``values`` (column -> value), as a write to hold and store with
    what comes next (it reads no answer back: in a pipeline it goes out with the statements
    that follow it)."""
    statement, params = insert_run_leading(values, notify_channel=None)
    inserting = driver_statement(statement)

    def insert(conn: Connection) -> None:
        inserting.rowcount(conn, params)

    return insert


@functools.cache
def _insert_run_statement(columns: tuple[str, ...], *, notify: bool) -> Any:
    """The insert of a new run's row with these columns (parameters ``new_run_<column>``),
    compiled once per column set; with ``notify`` it also sends the queue's NOTIFY (PostgreSQL,
    parameter ``new_run_queue_channel``)."""
    values = {name: bindparam(f"new_run_{name}", type_=runs_table.c[name].type) for name in columns}
    statement = runs_table.insert().values(values)
    if notify:
        return statement.returning(func.pg_notify(bindparam("new_run_queue_channel"), runs_table.c.run_id))
    return statement


@functools.cache
def _get_run_statement() -> Any:
    return select(runs_table).where(runs_table.c.run_id == bindparam("get_run_id"))


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which of a tenant's runs to list: every given member must hold (``tags``: all of them)."""

    status: str | None = None
    workflow_id: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    tags: Sequence[str] = ()


def list_runs(
    conn: Connection,
    tenant: str,
    where: RunFilter,
    *,
    after: tuple[datetime, str] | None,
    limit: int,
) -> list[Any]:
    """Up to ``limit`` run rows of ``tenant`` matching ``where``, newest first.

    The order is ``(created_at, run_id)`` descending, a total order, so that ``after`` (the
    ``(created_at, run_id)`` of the last row of the previous page) continues exactly where that
    page ended however many runs were created since. Datetimes are compared in UTC.
    """
    runs = runs_table.c
    query = select(runs_table).where(runs.tenant == tenant)
    if where.status is not None:
        query = query.where(runs.status == where.status)
    if where.workflow_id is not None:
        query = query.where(runs.workflow_id == where.workflow_id)
    if where.created_after is not None:
        query = query.where(runs.created_at >= where.created_after)
    if where.created_before is not None:
        query = query.where(runs.created_at < where.created_before)
    for tag in dict.fromkeys(where.tags):
        query = query.where(_has_tag(conn.dialect.name, tag))
    if after is not None:
        created, run_id = after
        query = query.where(
            or_(runs.created_at < created, and_(runs.created_at == created, runs.run_id < run_id))
        )
    query = query.order_by(runs.created_at.desc(), runs.run_id.desc()).limit(limit)
    return list(conn.execute(query))


def _has_tag(dialect: str, tag: str) -> ColumnElement[bool]:
    """The run's ``tags`` (a JSON array) hold ``tag``."""
    if dialect == "postgresql":
        return runs_table.c.tags.op("@>")(bindparam(None, [tag], type_=JSONB))
    each = func.json_each(runs_table.c.tags).table_valued("value", joins_implicitly=True)
    # json_each yields a string element's text: compared with the tag as plain text.
    return exists(select(1).select_from(each).where(each.c.value == bindparam(None, tag, type_=String())))
