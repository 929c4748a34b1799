"""Reading run rows: the one place the host looks a run up by id, and lists a tenant's runs."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, String, and_, bindparam, exists, func, or_, select
from sqlalchemy.dialects.postgresql import JSONB

from wop_langgraph.store.run_tables import runs_table
from wop_langgraph.store.statements import driver_statement

__all__ = ["TERMINAL_STATUSES", "RunFilter", "get_run", "list_runs", "unfinished"]

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
