"""The fork table ``wop_run_forks`` (schema migration 5): which runs are forks, of what, from where.

A fork is an ordinary run (its own row, thread and log) plus one row here, written in the
transaction that creates it and never changed. Replay behaviour (re-delivered resolutions,
suppressed side effects) is read from this row, never from the event types (replay.md §Fan-out).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import BigInteger, Column, Connection, DateTime, String, Table, func, select
from sqlmodel import SQLModel

from wop_langgraph.store.run_tables import events_table

__all__ = ["ForkMode", "ForkRecord", "fork_of", "forks_table", "insert_fork", "node_outcomes_logged"]

ForkMode = Literal["replay", "branch"]

forks_table = Table(
    "wop_run_forks",
    SQLModel.metadata,
    Column("run_id", String(300), primary_key=True),
    Column("source_run_id", String(300), nullable=False, index=True),
    Column("mode", String(16), nullable=False),
    Column("from_seq", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)


@dataclass(frozen=True, slots=True)
class ForkRecord:
    """A fork run: its source, its mode and its ``fromSeq`` (events before it are fixed history)."""

    run_id: str
    source_run_id: str
    mode: ForkMode
    from_seq: int

    @property
    def is_replay(self) -> bool:
        return self.mode == "replay"


def insert_fork(conn: Connection, record: ForkRecord, *, now: datetime) -> None:
    """Record ``record`` (in the transaction that creates the fork run)."""
    conn.execute(
        forks_table.insert().values(
            run_id=record.run_id,
            source_run_id=record.source_run_id,
            mode=record.mode,
            from_seq=record.from_seq,
            created_at=now,
        )
    )


def fork_of(conn: Connection, run_id: str) -> ForkRecord | None:
    """The fork record of ``run_id``, or ``None`` when the run is not a fork."""
    row = conn.execute(select(forks_table).where(forks_table.c.run_id == run_id)).first()
    if row is None:
        return None
    mode: ForkMode = "replay" if row.mode == "replay" else "branch"
    return ForkRecord(row.run_id, row.source_run_id, mode, int(row.from_seq))


def node_outcomes_logged(conn: Connection, run_id: str, node_id: str) -> int:
    """How many outcomes (``node.completed`` / ``node.failed``) ``node_id`` logged in ``run_id``:
    a replayed node's next execution takes the source's outcome of the same rank."""
    return int(
        conn.execute(
            select(func.count()).where(
                events_table.c.run_id == run_id,
                events_table.c.node_id == node_id,
                events_table.c.type.in_(("node.completed", "node.failed")),
            )
        ).scalar_one()
    )
