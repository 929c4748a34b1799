"""Reading run rows: the one place the host looks a run up by id."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, bindparam, select

from wop_langgraph.store._driver_sql import driver_statement
from wop_langgraph.store.run_tables import runs_table

__all__ = ["TERMINAL_STATUSES", "get_run", "unfinished"]

#: Statuses a run never leaves.
TERMINAL_STATUSES = ("completed", "failed", "cancelled")


def get_run(conn: Connection, run_id: str) -> Any | None:
    """The run's row (``None`` if there is no such run)."""
    rows = driver_statement(_get_run_statement()).named(conn, {"get_run_id": run_id})
    return rows[0] if rows else None


def unfinished() -> ColumnElement[bool]:
    """The run is not in a terminal status.

    Spelled out rather than ``status.not_in(...)``: a literal list renders per execution, and
    the statements that use this are compiled once (see :mod:`._driver_sql`).
    """
    return and_(*(runs_table.c.status != status for status in TERMINAL_STATUSES))


@functools.cache
def _get_run_statement() -> Any:
    return select(runs_table).where(runs_table.c.run_id == bindparam("get_run_id"))
