"""The callback ledger ``wop_server_callbacks`` (schema migration 7): which pending interrupts
were handed to their run's ``callbackUrl``, by whom, with what outcome.

A delivery first claims the interrupt here (insert-or-nothing), so with several replicas over
one database exactly one of them delivers it; then it records the outcome.
"""

from __future__ import annotations

import functools
from datetime import datetime

from sqlalchemy import Column, Connection, DateTime, Integer, String, Table, Text, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import SQLModel

from wop_langgraph.store.run_tables import interrupts_table, runs_table
from wop_langgraph.store.statements import DriverStatement, driver_statement

__all__ = [
    "callback_url_of",
    "callbacks_table",
    "claim_callback",
    "record_callback",
    "runs_awaiting_callbacks",
]

callbacks_table = Table(
    "wop_server_callbacks",
    SQLModel.metadata,
    Column("interrupt_id", String(300), primary_key=True),
    Column("run_id", String(300), nullable=False, index=True),
    Column("state", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("last_status", Integer, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


def runs_awaiting_callbacks(conn: Connection) -> list[str]:
    """The runs with a ``callbackUrl`` and a pending interrupt nobody claimed for delivery."""
    delivered = select(callbacks_table.c.interrupt_id)
    query = (
        select(interrupts_table.c.run_id)
        .join(runs_table, runs_table.c.run_id == interrupts_table.c.run_id)
        .where(
            interrupts_table.c.status == "pending",
            runs_table.c.callback_url.is_not(None),
            interrupts_table.c.interrupt_id.not_in(delivered),
        )
        .distinct()
    )
    return [str(run_id) for (run_id,) in conn.execute(query)]


def callback_url_of(conn: Connection, run_id: str) -> str | None:
    """The run's ``callbackUrl`` (``None``: none, or no such run)."""
    rows = _callback_url_statement().rows(conn, {"of_run": run_id})
    found = rows[0][0] if rows else None
    return None if found is None else str(found)


@functools.cache
def _callback_url_statement() -> DriverStatement:
    """The read of :func:`callback_url_of`, built and compiled once (it runs each time a run
    this process drives suspends)."""
    return driver_statement(
        select(runs_table.c.callback_url).where(runs_table.c.run_id == bindparam("of_run"))
    )


def claim_callback(conn: Connection, interrupt_id: str, run_id: str, *, now: datetime) -> bool:
    """Claim the delivery of ``interrupt_id``'s callback; ``False`` when it was claimed before."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    inserted = conn.execute(
        dialect.insert(callbacks_table)
        .values(interrupt_id=interrupt_id, run_id=run_id, state="sending", attempts=0, updated_at=now)
        .on_conflict_do_nothing(index_elements=["interrupt_id"])
        .returning(callbacks_table.c.interrupt_id)
    ).first()
    # RETURNING, not rowcount: psycopg does not report a row count for this statement.
    return inserted is not None


def record_callback(
    conn: Connection,
    interrupt_id: str,
    state: str,
    *,
    attempts: int,
    status: int | None,
    error: str | None,
    now: datetime,
) -> None:
    """Record the outcome of a claimed delivery (``delivered`` or ``failed``)."""
    conn.execute(
        update(callbacks_table)
        .where(callbacks_table.c.interrupt_id == interrupt_id)
        .values(state=state, attempts=attempts, last_status=status, last_error=error, updated_at=now)
    )
