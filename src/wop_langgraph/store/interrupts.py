"""Interrupt rows and the compare-and-set that makes every resolution exactly-once.

An interrupt is inserted once per key (a replayed execution finds its row again), and leaves
``pending`` exactly once: :func:`claim` flips ``pending`` to a final status with a conditional
``UPDATE ... WHERE status = 'pending'``, so of any number of concurrent claimers, on any number
of processes sharing the database, exactly one sees its update applied.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, and_, bindparam, false, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from wop_langgraph._clock import as_utc
from wop_langgraph.store.run_tables import interrupts_table, runs_table
from wop_langgraph.store.statements import DriverStatement, driver_statement

__all__ = [
    "FINAL_STATUSES",
    "InterruptRecord",
    "InterruptStatus",
    "PendingFilter",
    "cancel_pending",
    "claim",
    "claim_write",
    "conflicting",
    "count_consumed",
    "expired_pending",
    "get_interrupt",
    "get_interrupt_by_key",
    "insert_interrupt",
    "inserting_gate",
    "interrupts_at_node",
    "interrupts_of_run",
    "known_interrupts",
    "list_pending",
    "lock_interrupt",
    "mark_consumed",
    "mark_waiting",
    "next_deadline",
    "record_of",
    "resolved_unconsumed",
    "set_votes",
    "waiting_params",
]

InterruptStatus = Literal["pending", "resolved", "cancelled", "expired"]
FINAL_STATUSES: tuple[InterruptStatus, ...] = ("resolved", "cancelled", "expired")

_table = interrupts_table


@dataclass(frozen=True, slots=True)
class InterruptRecord:
    """One interrupt as stored: identity, LangGraph coordinates, payload and resolution."""

    interrupt_id: str
    run_id: str
    node_id: str
    key: str
    lg_interrupt_id: str
    task_id: str
    kind: str
    payload: dict[str, Any]
    created_at: datetime
    checkpoint_ns: str = ""
    visit_index: int = 0
    ordinal: int = 0
    status: str = "pending"
    deadline: datetime | None = None
    votes: list[dict[str, Any]] | None = None
    resume_value: Any = None
    resolution: dict[str, Any] | None = None
    resolved_by: dict[str, Any] | None = None
    resolved_at: datetime | None = None
    consumed_at: datetime | None = None
    profiles: list[str] | None = None
    """Interrupt profiles the node asked for (interrupt-profiles.md), e.g. auth-required."""

    @property
    def is_pending(self) -> bool:
        return self.status == "pending"


def insert_interrupt(conn: Connection, record: InterruptRecord) -> tuple[InterruptRecord, bool]:
    """Insert ``record`` unless an interrupt with its key (or its id) exists.

    Returns the stored record and whether it was new; a replayed execution gets the original
    row back unchanged.
    """
    # Any unique conflict, not only the key's: two copies of one interrupt (a call task's and
    # its caller's, written by concurrent transactions on PostgreSQL) share the interrupt id.
    params = {f"new_{name}": getattr(record, name) for name in _FIELDS}
    rows = driver_statement(_insert_statement(conn.dialect.name)).mappings(conn, params)
    if rows:
        return _record(rows[0]), True  # as stored (the database's own reading of the values)
    return conflicting(conn, record), False


def conflicting(conn: Connection, record: InterruptRecord) -> InterruptRecord:
    """The stored interrupt that kept ``record`` from being inserted (its key's, or its id's)."""
    stored = get_interrupt_by_key(conn, record.key) or get_interrupt(conn, record.interrupt_id)
    if stored is None:  # pragma: no cover - the insert or the conflict guarantees a row
        raise RuntimeError(f"interrupt {record.key!r} vanished during insert")
    return stored


@functools.cache
def _insert_statement(dialect_name: str) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING RETURNING *`` of one record (parameters
    ``new_<field>``): the stored row, or nothing when the interrupt existed."""
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    values = {name: bindparam(f"new_{name}", type_=_table.c[name].type) for name in _FIELDS}
    return dialect.insert(_table).values(values).on_conflict_do_nothing().returning(*_table.c)


def known_interrupts(conn: Connection, run_id: str) -> list[Any]:
    """What the recorder reads of a run's interrupts before recording one: each one's
    LangGraph id, key, node, task namespace, visit index and status (named tuples)."""
    return driver_statement(_known_statement()).named(conn, {"known_run": run_id})


def waiting_params(run_id: str, status: str, node_id: str, now: datetime) -> dict[str, Any]:
    """The parameters of a run's move to a waiting ``status`` at ``node_id`` (for
    :func:`mark_waiting` and :func:`inserting_gate`)."""
    return {"wait_run": run_id, "wait_status": status, "wait_node": node_id, "wait_now": now}


def mark_waiting(waiting: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A moving (``pending`` or ``running``) run now waits on the interrupt just recorded
    (``waiting`` from :func:`waiting_params`): the statement and parameters, to lead the
    append of the events that tell of the interrupt."""
    return _waiting_statement(), waiting


@functools.cache
def _known_statement() -> Any:
    """What the recorder reads of a run's interrupts (compiled once)."""
    return select(
        interrupts_table.c.lg_interrupt_id,
        interrupts_table.c.key,
        interrupts_table.c.node_id,
        interrupts_table.c.checkpoint_ns,
        interrupts_table.c.visit_index,
        interrupts_table.c.status,
    ).where(interrupts_table.c.run_id == bindparam("known_run"))


@functools.cache
def _waiting_statement() -> Any:
    """A moving run now waits on the interrupt just recorded (compiled once)."""
    moving = or_(runs_table.c.status == "pending", runs_table.c.status == "running")
    return (
        update(runs_table)
        .where(runs_table.c.run_id == bindparam("wait_run"), moving)
        .values(
            status=bindparam("wait_status"),
            current_node_id=bindparam("wait_node"),
            updated_at=bindparam("wait_now", type_=runs_table.c.updated_at.type),
        )
    )


def inserting_gate(record: InterruptRecord, waiting: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """PostgreSQL: the insert of ``record`` as :func:`insert_interrupt` makes it (nothing when
    the interrupt exists) and, only if it inserted, its run's move to the waiting status
    (``waiting``: ``wait_status``, ``wait_node``, ``wait_now``; a run that is ``pending`` or
    ``running``), as the gate of an ``append``: its row is the interrupt as stored."""
    params = {f"new_{name}": getattr(record, name) for name in _FIELDS}
    return _inserting_gate_statement(), params | dict(waiting)


def record_of(row: Any) -> InterruptRecord:
    """The :class:`InterruptRecord` of a row with the interrupt's columns (named; others ignored)."""
    return _record(row._asdict())


@functools.cache
def _inserting_gate_statement() -> Any:
    inserted = _insert_statement("postgresql").cte("new_interrupt")
    # :func:`mark_waiting`'s move, only if the interrupt was inserted. The run is found by its
    # bound id (its primary key: an index scan whatever PostgreSQL knows of the table), where a
    # join on the CTE's column was planned as a scan of every run.
    was_inserted = select(inserted.c.interrupt_id).where(inserted.c.run_id == runs_table.c.run_id).exists()
    return select(*inserted.c).add_cte(_waiting_statement().where(was_inserted).cte("waiting"))


def get_interrupt(conn: Connection, interrupt_id: str) -> InterruptRecord | None:
    """The interrupt with this tenant-bound id, if any."""
    return _one(conn, "interrupt_id", interrupt_id)


def get_interrupt_by_key(conn: Connection, key: str) -> InterruptRecord | None:
    """The interrupt with this OpenWOP key, if any."""
    return _one(conn, "key", key)


def interrupts_of_run(
    conn: Connection, run_id: str, *, node_id: str | None = None, statuses: Sequence[str] | None = None
) -> list[InterruptRecord]:
    """The run's interrupts (optionally of one node, in some statuses), oldest first."""
    chosen = None if statuses is None else tuple(statuses)
    params: dict[str, Any] = {"of_run": run_id, "of_node": node_id}
    if chosen is not None:
        params.update({f"of_status_{n}": status for n, status in enumerate(chosen)})
    statement = _of_run_statement(node_id is not None, None if chosen is None else len(chosen))
    return [_record(row) for row in statement.mappings(conn, params)]


@functools.lru_cache(maxsize=32)
def _of_run_statement(by_node: bool, statuses: int | None) -> DriverStatement:
    """The read of :func:`interrupts_of_run`, built and compiled once per shape (statuses as
    ``of_status_<n>`` parameters: a literal list would render per execution)."""
    query = select(_table).where(_table.c.run_id == bindparam("of_run"))
    if by_node:
        query = query.where(_table.c.node_id == bindparam("of_node"))
    if statuses is not None:
        chosen = [_table.c.status == bindparam(f"of_status_{n}") for n in range(statuses)]
        query = query.where(or_(*chosen) if chosen else false())
    return driver_statement(query.order_by(_table.c.created_at, _table.c.visit_index, _table.c.ordinal))


@dataclass(frozen=True, slots=True)
class PendingFilter:
    """Which of a tenant's pending interrupts to list (every given member must hold)."""

    workflow_id: str | None = None
    kind: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


def list_pending(
    conn: Connection,
    tenant: str,
    where: PendingFilter,
    *,
    after: tuple[datetime, str] | None,
    limit: int,
) -> list[tuple[InterruptRecord, str]]:
    """Up to ``limit`` pending interrupts of ``tenant``'s runs matching ``where``, each with its
    run's workflow id, oldest first (the longest waiting at the top of an inbox).

    The order is ``(created_at, interrupt_id)`` ascending, a total order: ``after`` (those of the
    last interrupt of the previous page) continues exactly where that page ended.
    """
    runs = runs_table.c
    query = (
        select(_table, runs.workflow_id.label("list_workflow_id"))
        .join(runs_table, runs.run_id == _table.c.run_id)
        .where(runs.tenant == tenant, _table.c.status == "pending")
    )
    if where.workflow_id is not None:
        query = query.where(runs.workflow_id == where.workflow_id)
    if where.kind is not None:
        query = query.where(_table.c.kind == where.kind)
    if where.created_after is not None:
        query = query.where(_table.c.created_at >= where.created_after)
    if where.created_before is not None:
        query = query.where(_table.c.created_at < where.created_before)
    if after is not None:
        created, interrupt_id = after
        query = query.where(
            or_(
                _table.c.created_at > created,
                and_(_table.c.created_at == created, _table.c.interrupt_id > interrupt_id),
            )
        )
    query = query.order_by(_table.c.created_at, _table.c.interrupt_id).limit(limit)
    return [(_record(row), row["list_workflow_id"]) for row in conn.execute(query).mappings()]


def interrupts_at_node(
    conn: Connection, run_id: str, node_id: str
) -> tuple[str | None, list[InterruptRecord]]:
    """The run's status and its interrupts at ``node_id`` (oldest first), held until the
    transaction ends: what a resolution decides on, read in the transaction that records it.

    One statement when the node has interrupts (they are joined to their run); a second reads
    the run's status when it has none. The status is ``None`` when there is no such run. On
    PostgreSQL the interrupt rows are locked (``FOR UPDATE``); a SQLite write transaction
    already holds the database (``BEGIN IMMEDIATE``).
    """
    postgres = conn.dialect.name == "postgresql"
    params = {"at_run": run_id, "at_node": node_id}
    rows = driver_statement(_at_node_statement(postgres)).mappings(conn, params)
    if rows:
        return str(rows[0]["run_status"]), [_record(row) for row in rows]
    found = driver_statement(_run_status_statement()).rows(conn, params)
    return (str(found[0][0]) if found else None), []


@functools.cache
def _at_node_statement(postgres: bool) -> Any:
    query = (
        select(_table, runs_table.c.status.label("run_status"))
        .join(runs_table, runs_table.c.run_id == _table.c.run_id)
        .where(_table.c.run_id == bindparam("at_run"), _table.c.node_id == bindparam("at_node"))
        .order_by(_table.c.created_at, _table.c.visit_index, _table.c.ordinal)
    )
    return query.with_for_update(of=_table) if postgres else query


@functools.cache
def _run_status_statement() -> Any:
    return select(runs_table.c.status).where(runs_table.c.run_id == bindparam("at_run"))


def lock_interrupt(conn: Connection, interrupt_id: str) -> InterruptRecord | None:
    """Read the interrupt and hold its row until the transaction ends (votes are read-modify-write).

    On SQLite the write transaction already holds the database lock (``BEGIN IMMEDIATE``).
    """
    query = select(_table).where(_table.c.interrupt_id == interrupt_id)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    row = conn.execute(query).mappings().first()
    return None if row is None else _record(row)


def set_votes(conn: Connection, interrupt_id: str, votes: list[dict[str, Any]]) -> bool:
    """Replace the recorded votes of a still-pending interrupt; False if it is no longer pending."""
    statement = (
        update(_table)
        .where(_table.c.interrupt_id == interrupt_id, _table.c.status == "pending")
        .values(votes=votes)
    )
    return conn.execute(statement).rowcount == 1


def claim(
    conn: Connection,
    interrupt_id: str,
    *,
    status: InterruptStatus,
    now: datetime,
    resume_value: Any = None,
    resolution: dict[str, Any] | None = None,
    resolved_by: dict[str, Any] | None = None,
    votes: list[dict[str, Any]] | None = None,
) -> bool:
    """Move a pending interrupt to ``status``; True for exactly one caller, False for the rest.

    ``votes``: the votes that decided it, recorded in the same statement.
    """
    statement, params = claim_write(
        interrupt_id,
        status=status,
        now=now,
        resume_value=resume_value,
        resolution=resolution,
        resolved_by=resolved_by,
        votes=votes,
    )
    return bool(driver_statement(statement).rows(conn, params))


def claim_write(
    interrupt_id: str,
    *,
    status: InterruptStatus,
    now: datetime,
    resume_value: Any = None,
    resolution: dict[str, Any] | None = None,
    resolved_by: dict[str, Any] | None = None,
    votes: list[dict[str, Any]] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """:func:`claim` as a statement and its parameters, to run with others: it returns the
    interrupt's id when it wins (the gate of an ``append``), no row when not."""
    if status == "pending":
        raise ValueError("a claim must move the interrupt to a final status")
    params = {
        "claim_id": interrupt_id,
        "claim_status": status,
        "claim_value": resume_value,
        "claim_resolution": resolution,
        "claim_by": resolved_by,
        "claim_at": now,
        "claim_votes": votes,
    }
    return _claim_statement(votes is not None), params


@functools.cache
def _claim_statement(with_votes: bool) -> Any:
    """The compare-and-set ``pending -> <status>`` of one interrupt, compiled once."""
    values = {
        "status": bindparam("claim_status"),
        "resume_value": bindparam("claim_value", type_=_table.c.resume_value.type),
        "resolution": bindparam("claim_resolution", type_=_table.c.resolution.type),
        "resolved_by": bindparam("claim_by", type_=_table.c.resolved_by.type),
        "resolved_at": bindparam("claim_at", type_=_table.c.resolved_at.type),
    }
    if with_votes:
        values["votes"] = bindparam("claim_votes", type_=_table.c.votes.type)
    return (
        update(_table)
        .where(_table.c.interrupt_id == bindparam("claim_id"), _table.c.status == "pending")
        .values(values)
        .returning(_table.c.interrupt_id)
    )


def mark_consumed(conn: Connection, interrupt_ids: Sequence[str], *, now: datetime) -> int:
    """Record that the graph resumed past these resolved interrupts; returns how many changed."""
    if not interrupt_ids:
        return 0
    if len(interrupt_ids) == 1:  # the usual case, compiled once
        params = {"consumed_id": interrupt_ids[0], "consumed_now": now}
        return driver_statement(_consume_one_statement()).rowcount(conn, params)
    statement = (
        update(_table)
        .where(_table.c.interrupt_id.in_(list(interrupt_ids)), _table.c.consumed_at.is_(None))
        .values(consumed_at=now)
    )
    return int(conn.execute(statement).rowcount)


def consume_one_write(interrupt_id: str, *, now: datetime) -> tuple[Any, dict[str, Any]]:
    """:func:`mark_consumed` of one interrupt as a statement and its parameters, to run with
    others (for example as the leading write of an append: see ``store.events.append``)."""
    return _consume_one_statement(), {"consumed_id": interrupt_id, "consumed_now": now}


@functools.cache
def _consume_one_statement() -> Any:
    return (
        update(_table)
        .where(_table.c.interrupt_id == bindparam("consumed_id"), _table.c.consumed_at.is_(None))
        .values(consumed_at=bindparam("consumed_now", type_=_table.c.consumed_at.type))
    )


def resolved_unconsumed(conn: Connection, run_id: str | None = None) -> list[InterruptRecord]:
    """Resolutions (and timeouts) that were claimed but never delivered to the graph."""
    query = select(_table).where(_table.c.status.in_(["resolved", "expired"]), _table.c.consumed_at.is_(None))
    if run_id is not None:
        query = query.where(_table.c.run_id == run_id)
    return [_record(row) for row in conn.execute(query.order_by(_table.c.resolved_at)).mappings()]


def open_work(conn: Connection, run_id: str) -> tuple[list[InterruptRecord], list[InterruptRecord]]:
    """The run's undelivered resolutions (as :func:`resolved_unconsumed`) and its pending
    interrupts (as :func:`interrupts_of_run` with ``statuses=["pending"]``), in one read."""
    statement, params = open_work_read(run_id)
    return open_work_of(statement.named(conn, params))


def open_work_read(run_id: str) -> tuple[DriverStatement, dict[str, Any]]:
    """The read of :func:`open_work`, to run with others (``named_together``)."""
    return driver_statement(_open_work_statement()), {"of_run": run_id}


def open_work_of(found: Sequence[Any]) -> tuple[list[InterruptRecord], list[InterruptRecord]]:
    """:func:`open_work` of the rows of :func:`open_work_read` (named rows)."""
    records = [_record(row._asdict()) for row in found]
    undelivered = sorted(
        (r for r in records if r.status != "pending"),
        key=lambda r: r.resolved_at.timestamp() if r.resolved_at else 0.0,
    )
    pending = sorted(
        (r for r in records if r.status == "pending"), key=lambda r: (r.created_at, r.visit_index, r.ordinal)
    )
    return undelivered, pending


@functools.cache
def _open_work_statement() -> Any:
    return select(_table).where(
        _table.c.run_id == bindparam("of_run"),
        or_(
            _table.c.status == "pending",
            # Not ``in_``: a literal list renders per execution, and this is compiled once.
            and_(
                or_(_table.c.status == "resolved", _table.c.status == "expired"),
                _table.c.consumed_at.is_(None),
            ),
        ),
    )


def expired_pending(
    conn: Connection, now: datetime, *, limit: int = 100, run_id: str | None = None
) -> list[InterruptRecord]:
    """Pending interrupts (of ``run_id``, if given) whose deadline has passed, oldest deadline first."""
    # (A snapshot of a waiting run asks this each time: the statement is built and compiled once.)
    params = {"expired_now": now} if run_id is None else {"expired_now": now, "expired_run": run_id}
    rows = driver_statement(_expired_statement(limit, run_id is not None)).mappings(conn, params)
    return [_record(row) for row in rows]


@functools.cache
def _expired_statement(limit: int, of_run: bool) -> Any:
    query = (
        select(_table)
        .where(
            _table.c.status == "pending",
            _table.c.deadline.is_not(None),
            _table.c.deadline <= bindparam("expired_now", type_=_table.c.deadline.type),
        )
        .order_by(_table.c.deadline)
        .limit(limit)
    )
    if of_run:
        query = query.where(_table.c.run_id == bindparam("expired_run", type_=_table.c.run_id.type))
    return query


def next_deadline(conn: Connection) -> datetime | None:
    """The earliest deadline of a pending interrupt, if any has one (an index-only read)."""
    query = select(func.min(_table.c.deadline)).where(
        _table.c.status == "pending", _table.c.deadline.is_not(None)
    )
    deadline: datetime | None = conn.execute(query).scalar()
    return None if deadline is None else as_utc(deadline)


def cancel_pending(conn: Connection, run_id: str, *, now: datetime) -> list[str]:
    """Cancel every pending interrupt of ``run_id``; returns the ids that were cancelled."""
    pending = [r.interrupt_id for r in interrupts_of_run(conn, run_id, statuses=["pending"])]
    return [i for i in pending if claim(conn, i, status="cancelled", now=now)]


def count_consumed(conn: Connection, run_id: str, node_id: str) -> int:
    """How many of the node's interrupts in this run had their resolution consumed."""
    query = select(func.count()).where(
        _table.c.run_id == run_id, _table.c.node_id == node_id, _table.c.consumed_at.is_not(None)
    )
    return int(conn.execute(query).scalar_one())


def _one(conn: Connection, column: str, value: str) -> InterruptRecord | None:
    rows = driver_statement(_one_statement(column)).mappings(conn, {"one_value": value})
    return _record(rows[0]) if rows else None


@functools.cache
def _one_statement(column: str) -> Any:
    """The interrupt whose unique ``column`` has a value (compiled once per column)."""
    return select(_table).where(_table.c[column] == bindparam("one_value"))


def _record(row: Any) -> InterruptRecord:
    return InterruptRecord(**{name: row[name] for name in _FIELDS})


_FIELDS = tuple(InterruptRecord.__dataclass_fields__)
