"""Reading run rows: the one place the host looks a run up by id."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Connection, bindparam, select

from wop_langgraph.store.run_tables import runs_table

__all__ = ["TERMINAL_STATUSES", "get_run"]

#: Statuses a run never leaves.
TERMINAL_STATUSES = ("completed", "failed", "cancelled")


def get_run(conn: Connection, run_id: str) -> Any | None:
    """The run's row (``None`` if there is no such run)."""
    return conn.execute(_get_run_statement(), {"get_run_id": run_id}).first()


@functools.cache
def _get_run_statement() -> Any:
    return select(runs_table).where(runs_table.c.run_id == bindparam("get_run_id"))
