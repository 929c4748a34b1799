"""The notification outbox table ``wop_notifications`` (created by schema migration 4).

One row per (interrupt key, recipient, purpose): the unique constraint is what makes replay,
recovery and concurrent recorders plan each notification once. ``state`` moves
``pending -> sending -> sent | dead | dropped``; ``sending`` with a ``lease_until`` in the past
is a delivery whose worker died, and is taken again (delivery is at least once).
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, DateTime, Index, Integer, String, Table, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import SQLModel

__all__ = ["STATES", "notifications_table"]

#: Every state a notification can be in; ``dead`` rows are the operators' dead letters.
STATES = ("pending", "sending", "sent", "dead", "dropped")


def _utc(name: str, nullable: bool = True) -> Column[object]:
    return Column(name, DateTime(timezone=True), nullable=nullable)


notifications_table = Table(
    "wop_notifications",
    SQLModel.metadata,
    Column("notification_id", String(64), primary_key=True),
    Column("run_id", String(300), nullable=False),
    Column("interrupt_id", String(300), nullable=False),
    Column("interrupt_key", String(256), nullable=False),
    Column("recipient", String(256), nullable=False),
    Column("purpose", String(32), nullable=False),
    Column("state", String(16), nullable=False),
    Column("addresses", JSON().with_variant(JSONB(), "postgresql"), nullable=False),
    Column("delivered", JSON().with_variant(JSONB(), "postgresql"), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("last_error", Text, nullable=True),
    _utc("due_at", nullable=False),
    _utc("lease_until"),
    _utc("created_at", nullable=False),
    _utc("updated_at", nullable=False),
    _utc("sent_at"),
    UniqueConstraint("interrupt_key", "recipient", "purpose", name="uq_wop_notifications_once"),
    Index("ix_wop_notifications_due", "state", "due_at"),
    Index("ix_wop_notifications_run", "run_id"),
)
