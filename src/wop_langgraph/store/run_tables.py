"""Tables of the OpenWOP side of the store: runs, the event log, interrupts, idempotency records.

These are storage rows, not wire models: the wire shapes live in :mod:`wop_langgraph.protocol`.
They share one database (and one transaction, when needed) with the checkpoint tables, which
is what lets an interrupt, its events and the checkpoint write commit or roll back together.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Column, DateTime, Index, Table, UniqueConstraint, false
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

__all__ = [
    "EventCounterRow",
    "EventRow",
    "IdempotencyRow",
    "InterruptRow",
    "RunRow",
    "event_counters_table",
    "events_table",
    "idempotency_table",
    "interrupts_table",
    "json_column",
    "runs_table",
]

#: Longest tenant-bound id: a 128-char tenant, "anon:", "/" and a 128-char opaque part.
ID_LENGTH = 300


def json_column(nullable: bool = True) -> Any:
    """A JSON column: JSONB on PostgreSQL, JSON text elsewhere."""
    return Column(JSON().with_variant(JSONB(), "postgresql"), nullable=nullable)


def _utc_column(nullable: bool = True, index: bool = False) -> Any:
    return Column(DateTime(timezone=True), nullable=nullable, index=index)


class RunRow(SQLModel, table=True):
    """One OpenWOP run; its LangGraph thread has ``thread_id == run_id``.

    The queue columns (see :mod:`wop_langgraph.store.run_queue`): ``queued_at`` is set while the
    run has work for a worker (never cleared by anything but the worker that did the work),
    ``queue_version`` counts enqueues so a worker can tell whether more work arrived while it
    drove the run, and ``lease_owner``/``lease_until`` name the worker driving it and until when.
    """

    __tablename__ = "wop_runs"
    __table_args__ = (Index("ix_wop_runs_queued", "queued_at"),)

    run_id: str = Field(primary_key=True, max_length=ID_LENGTH)
    workflow_id: str = Field(max_length=128)
    tenant: str = Field(max_length=140, index=True)
    owner: dict[str, Any] = Field(sa_column=json_column(nullable=False))
    status: str = Field(max_length=32)
    inputs: Any = Field(default=None, sa_column=json_column())
    configurable: Any = Field(default=None, sa_column=json_column())
    tags: Any = Field(default=None, sa_column=json_column())
    run_metadata: Any = Field(default=None, sa_column=json_column())
    callback_url: str | None = Field(default=None, max_length=2048)
    current_node_id: str | None = Field(default=None, max_length=1024)
    error: Any = Field(default=None, sa_column=json_column())
    outputs: Any = Field(default=None, sa_column=json_column())
    created_at: datetime = Field(sa_column=_utc_column(nullable=False))
    updated_at: datetime = Field(sa_column=_utc_column(nullable=False))
    completed_at: datetime | None = Field(default=None, sa_column=_utc_column())
    queued_at: datetime | None = Field(default=None, sa_column=_utc_column())
    queue_version: int = Field(default=0, sa_column=Column(BigInteger, nullable=False, server_default="0"))
    lease_owner: str | None = Field(default=None, max_length=64)
    lease_until: datetime | None = Field(default=None, sa_column=_utc_column())


class EventCounterRow(SQLModel, table=True):
    """The next free event ``sequence`` of a run, bumped in the same transaction as the append."""

    __tablename__ = "wop_event_counters"

    run_id: str = Field(primary_key=True, max_length=ID_LENGTH)
    next_sequence: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    #: Set with the run's terminal event: nothing is appended to a closed log.
    closed: bool = Field(default=False, sa_column=Column(Boolean, nullable=False, server_default=false()))
    #: PostgreSQL: the run's hash chain head, and the head before the latest append (see
    #: :mod:`wop_langgraph.store.events`); SQLite reads the head from the last event instead.
    chain_head: str | None = Field(default=None, max_length=64)
    chain_prev: str | None = Field(default=None, max_length=64)


class EventRow(SQLModel, table=True):
    """One OpenWOP run event, numbered gap-free per run from 0."""

    __tablename__ = "wop_events"
    __table_args__ = (
        UniqueConstraint("event_id", name="uq_wop_events_event_id"),
        Index("ix_wop_events_run_type", "run_id", "type"),
    )

    run_id: str = Field(primary_key=True, max_length=ID_LENGTH)
    sequence: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    event_id: str = Field(max_length=128)
    type: str = Field(max_length=128)
    node_id: str | None = Field(default=None, max_length=1024)
    payload: Any = Field(sa_column=json_column(nullable=False))
    timestamp: datetime = Field(sa_column=_utc_column(nullable=False))
    schema_version: int = Field(default=1)
    causation_id: str | None = Field(default=None, max_length=128)
    #: The event's value in the run's hash chain (:mod:`wop_langgraph.proof.chain`); ``None``
    #: for events logged before schema version 7.
    chain_hash: str | None = Field(default=None, max_length=64)


class InterruptRow(SQLModel, table=True):
    """One interrupt a node raised: its key, LangGraph identity, state and resolution.

    ``status`` moves ``pending -> resolved | cancelled | expired`` exactly once, by a
    compare-and-set on ``status`` (see :mod:`wop_langgraph.store.interrupts`). ``consumed_at``
    is set once the graph has resumed past it, which is how recovery finds resolutions that a
    crashed process claimed but never delivered.
    """

    __tablename__ = "wop_interrupts"
    __table_args__ = (
        UniqueConstraint("key", name="uq_wop_interrupts_key"),
        UniqueConstraint("run_id", "lg_interrupt_id", name="uq_wop_interrupts_lg_id"),
        Index("ix_wop_interrupts_status_deadline", "status", "deadline"),
        Index("ix_wop_interrupts_run_node", "run_id", "node_id", "status"),
    )

    interrupt_id: str = Field(primary_key=True, max_length=ID_LENGTH)
    run_id: str = Field(max_length=ID_LENGTH)
    node_id: str = Field(max_length=1024)
    key: str = Field(max_length=256)
    lg_interrupt_id: str = Field(max_length=64)
    checkpoint_ns: str = Field(default="", max_length=2048)
    task_id: str = Field(max_length=64)
    visit_index: int = Field(default=0)
    ordinal: int = Field(default=0)
    kind: str = Field(max_length=64)
    payload: Any = Field(sa_column=json_column(nullable=False))
    status: str = Field(default="pending", max_length=16)
    deadline: datetime | None = Field(default=None, sa_column=_utc_column())
    votes: Any = Field(default=None, sa_column=json_column())
    resume_value: Any = Field(default=None, sa_column=json_column())
    resolution: Any = Field(default=None, sa_column=json_column())
    resolved_by: Any = Field(default=None, sa_column=json_column())
    created_at: datetime = Field(sa_column=_utc_column(nullable=False))
    resolved_at: datetime | None = Field(default=None, sa_column=_utc_column())
    consumed_at: datetime | None = Field(default=None, sa_column=_utc_column())
    # Interrupt profiles the node asked for (nodes/suspend.py); host-side, never in the payload.
    profiles: Any = Field(default=None, sa_column=json_column())


class IdempotencyRow(SQLModel, table=True):
    """A stored outcome of a mutating request, keyed by (scope, endpoint, caller key)."""

    __tablename__ = "wop_idempotency"
    __table_args__ = (Index("ix_wop_idempotency_expires", "expires_at"),)

    scope: str = Field(primary_key=True, max_length=ID_LENGTH)
    endpoint: str = Field(primary_key=True, max_length=256)
    key: str = Field(primary_key=True, max_length=128)
    request_hash: str = Field(max_length=64)
    state: str = Field(default="in_flight", max_length=16)
    status_code: int | None = Field(default=None)
    headers: Any = Field(default=None, sa_column=json_column())
    body: Any = Field(default=None, sa_column=json_column())
    created_at: datetime = Field(sa_column=_utc_column(nullable=False))
    expires_at: datetime = Field(sa_column=_utc_column(nullable=False))


def _table_of(model: type[SQLModel]) -> Table:
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


runs_table = _table_of(RunRow)
event_counters_table = _table_of(EventCounterRow)
events_table = _table_of(EventRow)
interrupts_table = _table_of(InterruptRow)
idempotency_table = _table_of(IdempotencyRow)
