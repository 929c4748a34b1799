"""The signed receipts and checkpoints of runs (schema migration 8), by run and name.

A receipt's ``name`` says what it proves and is unique per run (``decision/<sequence>``,
``vote/<sequence>/<voter>``, ``checkpoint/<sequence>``): issuing one twice stores it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Connection, DateTime, String, Table, delete, exists, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import SQLModel

from wop_langgraph._clock import as_utc
from wop_langgraph.store.run_tables import event_counters_table, interrupts_table

__all__ = [
    "StoredReceipt",
    "checkpoints_at",
    "delete_receipts",
    "insert_receipts",
    "log_head",
    "read_receipts",
    "receipt_names",
    "receipts_table",
    "waiting_unrefreshed",
]

receipts_table = Table(
    "wop_receipts",
    SQLModel.metadata,
    Column("run_id", String(300), primary_key=True),
    Column("name", String(400), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("sequence", BigInteger, nullable=False),
    Column("kid", String(128), nullable=False),
    Column("envelope", JSON().with_variant(JSONB(), "postgresql"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)


@dataclass(frozen=True, slots=True)
class StoredReceipt:
    """A receipt as stored: ``envelope`` is the DSSE envelope (JSON)."""

    run_id: str
    name: str
    kind: str
    sequence: int
    kid: str
    envelope: dict[str, Any]
    created_at: datetime


def insert_receipts(conn: Connection, receipts: Sequence[StoredReceipt]) -> int:
    """Store ``receipts`` in ``conn``'s transaction; one already stored under its name is kept.
    Returns how many were stored."""
    if not receipts:
        return 0
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    rows = [
        {
            "run_id": r.run_id,
            "name": r.name,
            "kind": r.kind,
            "sequence": r.sequence,
            "kid": r.kid,
            "envelope": r.envelope,
            "created_at": r.created_at,
        }
        for r in receipts
    ]
    statement = dialect.insert(receipts_table).on_conflict_do_nothing().returning(receipts_table.c.name)
    return len(conn.execute(statement, rows if len(rows) > 1 else rows[0]).all())


def read_receipts(conn: Connection, run_id: str) -> list[StoredReceipt]:
    """The receipts of ``run_id``, in sequence order (then by name)."""
    t = receipts_table
    query = select(t).where(t.c.run_id == run_id).order_by(t.c.sequence, t.c.name)
    return [
        StoredReceipt(r.run_id, r.name, r.kind, r.sequence, r.kid, r.envelope, r.created_at)
        for r in conn.execute(query)
    ]


def receipt_names(conn: Connection, run_id: str) -> set[str]:
    """The names of the receipts ``run_id`` has."""
    t = receipts_table
    return set(conn.execute(select(t.c.name).where(t.c.run_id == run_id)).scalars())


def log_head(conn: Connection, run_id: str) -> tuple[int, bool]:
    """The last sequence ``run_id``'s counter has handed out (``-1``: none) and whether its log
    is closed (its run ended), in one read. From the counter, not from the events, so a deleted
    last event is not taken for the log's end."""
    counters = event_counters_table
    query = select(counters.c.next_sequence, counters.c.closed).where(counters.c.run_id == run_id)
    found = conn.execute(query).first()
    return (-1, False) if found is None else (int(found.next_sequence) - 1, bool(found.closed))


def checkpoints_at(conn: Connection, run_id: str, sequence: int) -> list[tuple[str, datetime]]:
    """The ``(name, created_at)`` of ``run_id``'s checkpoints of its log up to ``sequence``,
    oldest first."""
    t = receipts_table
    query = (
        select(t.c.name, t.c.created_at)
        .where(t.c.run_id == run_id, t.c.kind == "checkpoint", t.c.sequence == sequence)
        .order_by(t.c.created_at, t.c.name)
    )
    return [(str(row.name), as_utc(row.created_at)) for row in conn.execute(query)]


def delete_receipts(conn: Connection, run_id: str, names: Sequence[str]) -> None:
    """Delete ``run_id``'s receipts named ``names`` (a superseded periodic checkpoint)."""
    if names:
        t = receipts_table
        conn.execute(delete(t).where(t.c.run_id == run_id, t.c.name.in_(list(names))))


def waiting_unrefreshed(conn: Connection, older_than: datetime, *, limit: int) -> list[str]:
    """Up to ``limit`` runs waiting for a person (a pending interrupt) that have a checkpoint,
    none of them signed at or after ``older_than``.

    Starts from the pending interrupts' ``(status, deadline)`` index: with none waiting it
    reads nothing else.
    """
    i, r = interrupts_table, receipts_table
    checkpointed = select(r.c.run_id).where(r.c.run_id == i.c.run_id, r.c.kind == "checkpoint")
    fresh = checkpointed.where(r.c.created_at >= older_than)
    query = (
        select(i.c.run_id)
        .where(i.c.status == "pending", exists(checkpointed), ~exists(fresh))
        .distinct()
        .limit(limit)
    )
    return [str(run_id) for run_id in conn.execute(query).scalars()]
