"""LangGraph Server API threads: a thread is a sequence of OpenWOP runs over one growing state.

LangGraph's server keeps one thread across many runs; an OpenWOP run ends for good. So a
LangGraph thread is a row here that names its *current* OpenWOP run, and every new input on the
thread starts a new OpenWOP run whose LangGraph thread begins with a copy of the previous run's
latest checkpoint (:func:`seed_checkpoint`, marked with :data:`SEED_MARK` so the driver applies
the new run's input on top of it instead of continuing the copied step). A resume
(``command.resume``) is not a new run: it resolves the current run's pending interrupt.

Every statement on these tables lives here; schema migration 7 creates them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import (
    JSON,
    Column,
    Connection,
    DateTime,
    Index,
    String,
    Table,
    and_,
    bindparam,
    exists,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import SQLModel

from wop_langgraph.store.checkpoint_tables import checkpoints_table
from wop_langgraph.store.interrupts import InterruptRecord
from wop_langgraph.store.run_tables import ID_LENGTH, interrupts_table, runs_table
from wop_langgraph.store.statements import (
    DriverStatement,
    driver_connection,
    driver_statement,
    named_together,
)

__all__ = [
    "SEED_MARK",
    "ThreadRow",
    "ThreadRunRow",
    "ThreadRunStart",
    "delete_thread",
    "get_thread",
    "hide_thread_run",
    "insert_thread",
    "queued_runs_table",
    "run_rest",
    "run_with_checkpoint",
    "runs_of_thread",
    "seed_checkpoint",
    "start_thread_run",
    "tenant_threads",
    "thread_run",
    "touch_thread",
]

#: Checkpoint metadata key of a copied checkpoint that starts a thread's next run (its value is
#: the run it was copied from); the driver gives the run its input on top of it.
SEED_MARK: Final = "wop_thread_seed"
_THREAD_ID_LENGTH = 128
#: A statement with its parameters.
_Write = tuple[DriverStatement, dict[str, Any]]


def _json() -> Any:
    return JSON().with_variant(JSONB(), "postgresql")


threads_table = Table(
    "wop_lg_threads",
    SQLModel.metadata,
    Column("thread_id", String(_THREAD_ID_LENGTH), primary_key=True),
    Column("tenant", String(ID_LENGTH), nullable=False),
    Column("metadata", _json(), nullable=False),
    Column("run_id", String(ID_LENGTH), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Index("ix_wop_lg_threads_tenant_updated", "tenant", "updated_at"),
)

thread_runs_table = Table(
    "wop_lg_thread_runs",
    SQLModel.metadata,
    Column("run_id", String(ID_LENGTH), primary_key=True),
    Column("thread_id", String(_THREAD_ID_LENGTH), nullable=False),
    Column("assistant_id", String(ID_LENGTH), nullable=False),
    Column("metadata", _json(), nullable=False),
    Column("multitask_strategy", String(16), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_wop_lg_thread_runs_thread", "thread_id", "created_at"),
)

#: Runs created with ``multitask_strategy: "enqueue"`` that wait their turn on a busy thread:
#: each becomes the OpenWOP run ``run_id`` (minted at the request, so the client has its id)
#: when the thread's current run has ended (:mod:`wop_langgraph.store.lg_queue`). ``owner`` is
#: the requester's OpenWOP Subject; ``status`` is ``queued`` or ``cancelled`` (cancelled before
#: it started: it never will).
queued_runs_table = Table(
    "wop_lg_queued_runs",
    SQLModel.metadata,
    Column("run_id", String(ID_LENGTH), primary_key=True),
    Column("thread_id", String(_THREAD_ID_LENGTH), nullable=False),
    Column("tenant", String(ID_LENGTH), nullable=False),
    Column("owner", _json(), nullable=False),
    Column("graph_id", String(ID_LENGTH), nullable=False),
    Column("assistant_id", String(ID_LENGTH), nullable=False),
    Column("input", _json(), nullable=True),
    Column("metadata", _json(), nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Index("ix_wop_lg_queued_runs_thread", "thread_id", "created_at"),
    Index("ix_wop_lg_queued_runs_status", "status"),
)

#: Runs deleted through ``DELETE /threads/{id}/runs/{run}``: hidden from the LangGraph API's run
#: routes, while the OpenWOP run, its event log and the thread's checkpoints stay (the audit
#: trail is never deleted). Who deleted it and when is kept here.
deleted_runs_table = Table(
    "wop_lg_deleted_runs",
    SQLModel.metadata,
    Column("run_id", String(ID_LENGTH), primary_key=True),
    Column("deleted_by", String(ID_LENGTH), nullable=False),
    Column("deleted_at", DateTime(timezone=True), nullable=False),
)


@dataclass(frozen=True)
class ThreadRow:
    """A thread, with the status and timestamps of its current OpenWOP run (if any)."""

    thread_id: str
    tenant: str
    metadata: dict[str, Any]
    run_id: str | None
    created_at: datetime
    updated_at: datetime
    run_status: str | None
    run_updated_at: datetime | None
    workflow_id: str | None
    run_queued: bool = False
    """Whether the current run has work queued or being driven (a waiting run whose step is
    still recording its other interrupts is not at rest yet)."""
    runs_behind: bool = False
    """Whether enqueued runs wait for the current run to end (``multitask_strategy: enqueue``)."""


@dataclass(frozen=True)
class ThreadRunRow:
    """One OpenWOP run of a thread, with its OpenWOP status."""

    run_id: str
    thread_id: str
    assistant_id: str
    metadata: dict[str, Any]
    multitask_strategy: str
    created_at: datetime
    status: str
    updated_at: datetime
    workflow_id: str


def run_rest(conn: Connection, run_id: str) -> tuple[str, bool] | None:
    """The run's status and whether it is queued (has work queued or being driven); ``None``: no run."""
    row = conn.execute(
        select(runs_table.c.status, runs_table.c.queued_at).where(runs_table.c.run_id == run_id)
    ).first()
    return None if row is None else (str(row.status), row.queued_at is not None)


def _thread_query() -> Any:
    t, r, q = threads_table, runs_table, queued_runs_table
    behind = exists().where(and_(q.c.thread_id == t.c.thread_id, q.c.status == "queued"))
    return select(
        t.c.thread_id,
        t.c.tenant,
        t.c.metadata,
        t.c.run_id,
        t.c.created_at,
        t.c.updated_at,
        r.c.status.label("run_status"),
        r.c.updated_at.label("run_updated_at"),
        r.c.workflow_id,
        r.c.queued_at,
        behind.label("runs_behind"),
    ).select_from(t.outerjoin(r, r.c.run_id == t.c.run_id))


def _thread(row: Any) -> ThreadRow:
    return ThreadRow(
        row.thread_id,
        row.tenant,
        dict(row.metadata or {}),
        row.run_id,
        row.created_at,
        row.updated_at,
        row.run_status,
        row.run_updated_at,
        row.workflow_id,
        row.queued_at is not None,
        bool(row.runs_behind),
    )


def insert_thread(
    conn: Connection, thread_id: str, tenant: str, metadata: Mapping[str, Any], *, now: datetime
) -> None:
    """Insert a new thread (the caller checked that the id is free)."""
    _insert_thread_statement().rowcount(
        conn,
        {"new_thread": thread_id, "new_tenant": tenant, "new_metadata": dict(metadata), "new_now": now},
    )


@functools.cache
def _insert_thread_statement() -> DriverStatement:
    """The insert of :func:`insert_thread`, built and compiled once (one per ``threads.create``)."""
    t = threads_table.c
    return driver_statement(
        threads_table.insert().values(
            thread_id=bindparam("new_thread"),
            tenant=bindparam("new_tenant"),
            metadata=bindparam("new_metadata", type_=t.metadata.type),
            run_id=None,
            created_at=bindparam("new_now", type_=t.created_at.type),
            updated_at=bindparam("new_now", type_=t.updated_at.type),
        )
    )


def get_thread(conn: Connection, thread_id: str) -> ThreadRow | None:
    """The thread ``thread_id`` of any tenant (the caller compares the tenant), or ``None``."""
    rows = _get_thread_statement().named(conn, {"of_thread": thread_id})
    return _thread(rows[0]) if rows else None


@functools.cache
def _get_thread_statement() -> DriverStatement:
    """The read of :func:`get_thread`, built and compiled once (it runs on every thread request)."""
    return driver_statement(_thread_query().where(threads_table.c.thread_id == bindparam("of_thread")))


def thread_with_pending(conn: Connection, thread_id: str) -> tuple[ThreadRow | None, list[InterruptRecord]]:
    """:func:`get_thread`, and the pending interrupts of the thread's current run oldest first
    (what a resume answers), read together: on PostgreSQL one round trip (in a begun
    transaction of ``conn``, autocommit or not).

    The second statement finds the current run afresh: a caller whose thread row names another
    run (a new input started one between the two) must not take these for its run's.
    """
    found, pending = named_together(
        conn,
        [
            (_get_thread_statement(), {"of_thread": thread_id}),
            (_pending_of_thread_statement(), {"pending_thread": thread_id, "pending_status": "pending"}),
        ],
    )
    records = [InterruptRecord(**{name: getattr(r, name) for name in _RECORD_FIELDS}) for r in pending]
    return (_thread(found[0]) if found else None), records


_RECORD_FIELDS = tuple(InterruptRecord.__dataclass_fields__)


@functools.cache
def _pending_of_thread_statement() -> DriverStatement:
    """The second read of :func:`thread_with_pending` (as ``WopHost.pending_interrupts``
    orders them), built and compiled once."""
    i = interrupts_table.c
    current = (
        select(threads_table.c.run_id)
        .where(threads_table.c.thread_id == bindparam("pending_thread"))
        .scalar_subquery()
    )
    return driver_statement(
        select(interrupts_table)
        .where(i.run_id == current, i.status == bindparam("pending_status"))
        .order_by(i.created_at, i.visit_index, i.ordinal)
    )


def tenant_threads(conn: Connection, tenant: str) -> list[ThreadRow]:
    """Every thread of ``tenant``, most recently updated first."""
    rows = conn.execute(
        _thread_query()
        .where(threads_table.c.tenant == tenant)
        .order_by(threads_table.c.updated_at.desc(), threads_table.c.thread_id)
    ).all()
    return [_thread(row) for row in rows]


def start_thread_run(
    conn: Connection,
    thread_id: str,
    *,
    expected_run_id: str | None,
    run_id: str,
    metadata: Mapping[str, Any],
    assistant_id: str,
    run_metadata: Mapping[str, Any],
    multitask_strategy: str,
    now: datetime,
    listed_at: datetime | None = None,
) -> bool:
    """Make ``run_id`` the thread's current run if its current run is still ``expected_run_id``
    (the compare-and-set that lets exactly one of two concurrent inputs start the thread's next
    run) and, if that won, list the run under the thread (at ``listed_at``, default ``now``);
    returns whether the move won.

    On PostgreSQL both go out in one round trip, so the run is listed even when the move lost:
    on ``False`` the caller must roll the transaction back (as it does to refuse the input).
    """
    moved, listed = _start_runs(
        thread_id,
        expected_run_id=expected_run_id,
        run_id=run_id,
        metadata=metadata,
        assistant_id=assistant_id,
        run_metadata=run_metadata,
        multitask_strategy=multitask_strategy,
        now=now,
        listed_at=listed_at,
    )
    if conn.dialect.name == "postgresql":
        won, _ = named_together(conn, [moved, listed])
        return bool(won)
    return _start_in_order(conn, moved, listed)


def _start_in_order(conn: Connection, moved: _Write, listed: _Write) -> bool:
    """The move, then (if it won) the listing, each a statement of its own; whether it won."""
    if not moved[0].named(conn, moved[1]):
        return False
    listed[0].named(conn, listed[1])
    return True


class ThreadRunStart:
    """:func:`start_thread_run` as a write sent ahead of the statement that creates the run
    (``WopHost.create_run(ahead=...)``): on PostgreSQL in that statement's round trip, one
    round trip fewer per new run; whether the move won is read once that
    statement has run (:meth:`won`). As there, the run is listed even when the move lost (the
    caller rolls the transaction back)."""

    def __init__(self, thread_id: str, **start: Any) -> None:
        self._runs = _start_runs(thread_id, **start)
        self._answer: Callable[[], bool] | None = None

    def __call__(self, conn: Connection) -> None:
        driver = driver_connection(conn)
        if driver is None or conn.dialect.name != "postgresql":
            won = _start_in_order(conn, *self._runs)
            self._answer = lambda: won
            return
        # Sent, not read: in the pipeline of the statement that follows, whose end brings
        # the results in.
        sent: list[tuple[Any, Any]] = []
        for statement, params in self._runs:
            compiled = statement.compiled(conn.dialect)
            sent.append((compiled, compiled.execute(driver, compiled.bound(params, conn), conn)))

        def answer() -> bool:
            found = [compiled.fetch(cursor, conn)[0] for compiled, cursor in sent]  # (both closed)
            return bool(found[0])

        self._answer = answer

    def won(self) -> bool:
        """Whether the thread moved to the run (``False``: roll the transaction back); call it
        once, after the statement the start went ahead of."""
        if self._answer is None:
            raise RuntimeError("the thread's move was not sent")
        return self._answer()


def _start_runs(
    thread_id: str,
    *,
    expected_run_id: str | None,
    run_id: str,
    metadata: Mapping[str, Any],
    assistant_id: str,
    run_metadata: Mapping[str, Any],
    multitask_strategy: str,
    now: datetime,
    listed_at: datetime | None = None,
) -> tuple[_Write, _Write]:
    """The move of the thread to its new run and the run's listing, with their parameters."""
    moved = (
        _move_statement(expected_run_id is not None),
        {
            "move_thread": thread_id,
            "move_expected": expected_run_id,
            "move_run": run_id,
            "move_metadata": dict(metadata),
            "move_now": now,
        },
    )
    listed = (
        _list_run_statement(),
        {
            "list_run": run_id,
            "list_thread": thread_id,
            "list_assistant": assistant_id,
            "list_metadata": dict(run_metadata),
            "list_strategy": multitask_strategy,
            "list_at": listed_at or now,
        },
    )
    return moved, listed


@functools.lru_cache(maxsize=2)
def _move_statement(expecting: bool) -> DriverStatement:
    t = threads_table.c
    matches = t.run_id == bindparam("move_expected") if expecting else t.run_id.is_(None)
    return driver_statement(
        update(threads_table)
        .where(t.thread_id == bindparam("move_thread"), matches)
        .values(
            run_id=bindparam("move_run"),
            metadata=bindparam("move_metadata", type_=t.metadata.type),
            updated_at=bindparam("move_now", type_=t.updated_at.type),
        )
        .returning(t.thread_id)
    )


@functools.cache
def _list_run_statement() -> DriverStatement:
    c = thread_runs_table.c
    return driver_statement(
        thread_runs_table.insert()
        .values(
            run_id=bindparam("list_run"),
            thread_id=bindparam("list_thread"),
            assistant_id=bindparam("list_assistant"),
            metadata=bindparam("list_metadata", type_=c.metadata.type),
            multitask_strategy=bindparam("list_strategy"),
            created_at=bindparam("list_at", type_=c.created_at.type),
        )
        .returning(c.run_id)  # (a statement of ``named_together`` returns rows)
    )


def touch_thread(
    conn: Connection, thread_id: str, *, now: datetime, metadata: Mapping[str, Any] | None = None
) -> None:
    """Mark the thread updated (a resume, a cancel), optionally replacing its metadata."""
    params: dict[str, Any] = {"touch_thread": thread_id, "touch_now": now}
    if metadata is not None:
        params["touch_metadata"] = dict(metadata)
    _touch_statement(metadata is not None).rowcount(conn, params)


@functools.lru_cache(maxsize=2)
def _touch_statement(with_metadata: bool) -> DriverStatement:
    """The update of :func:`touch_thread`, built and compiled once (one per resume)."""
    t = threads_table.c
    values: dict[str, Any] = {"updated_at": bindparam("touch_now", type_=t.updated_at.type)}
    if with_metadata:
        values["metadata"] = bindparam("touch_metadata", type_=t.metadata.type)
    return driver_statement(
        update(threads_table).where(t.thread_id == bindparam("touch_thread")).values(**values)
    )


def delete_thread(conn: Connection, thread_id: str) -> None:
    """Forget the thread and its list of runs (the OpenWOP runs and their logs stay)."""
    listed = select(thread_runs_table.c.run_id).where(thread_runs_table.c.thread_id == thread_id)
    conn.execute(deleted_runs_table.delete().where(deleted_runs_table.c.run_id.in_(listed)))
    conn.execute(queued_runs_table.delete().where(queued_runs_table.c.thread_id == thread_id))
    conn.execute(thread_runs_table.delete().where(thread_runs_table.c.thread_id == thread_id))
    conn.execute(threads_table.delete().where(threads_table.c.thread_id == thread_id))


def _run_query() -> Any:
    tr, r = thread_runs_table, runs_table
    return select(
        tr.c.run_id,
        tr.c.thread_id,
        tr.c.assistant_id,
        tr.c.metadata,
        tr.c.multitask_strategy,
        tr.c.created_at,
        r.c.status,
        r.c.updated_at,
        r.c.workflow_id,
    ).select_from(tr.join(r, r.c.run_id == tr.c.run_id))


def _listed() -> Any:
    """Runs not deleted through the LangGraph API."""
    return thread_runs_table.c.run_id.not_in(select(deleted_runs_table.c.run_id))


def hide_thread_run(conn: Connection, run_id: str, *, deleted_by: str, now: datetime) -> bool:
    """Hide a run from the LangGraph API's run routes (its OpenWOP record stays); whether it was listed."""
    if conn.execute(select(deleted_runs_table.c.run_id).where(deleted_runs_table.c.run_id == run_id)).first():
        return False
    conn.execute(deleted_runs_table.insert().values(run_id=run_id, deleted_by=deleted_by, deleted_at=now))
    return True


def _thread_run(row: Any) -> ThreadRunRow:
    return ThreadRunRow(
        row.run_id,
        row.thread_id,
        row.assistant_id,
        dict(row.metadata or {}),
        row.multitask_strategy,
        row.created_at,
        row.status,
        row.updated_at,
        row.workflow_id,
    )


def runs_of_thread(conn: Connection, thread_id: str, *, listed_only: bool = False) -> list[ThreadRunRow]:
    """The thread's OpenWOP runs, newest first; ``listed_only``: without the deleted ones (the
    thread's history still reads every run's checkpoints)."""
    query = _run_query().where(thread_runs_table.c.thread_id == thread_id)
    if listed_only:
        query = query.where(_listed())
    rows = conn.execute(
        query.order_by(thread_runs_table.c.created_at.desc(), thread_runs_table.c.run_id.desc())
    ).all()
    return [_thread_run(row) for row in rows]


def thread_run(conn: Connection, thread_id: str, run_id: str) -> ThreadRunRow | None:
    """Run ``run_id`` of ``thread_id`` (not deleted through the LangGraph API), or ``None``."""
    row = conn.execute(
        _run_query().where(
            thread_runs_table.c.thread_id == thread_id, thread_runs_table.c.run_id == run_id, _listed()
        )
    ).first()
    return None if row is None else _thread_run(row)


def run_with_checkpoint(conn: Connection, thread_id: str, checkpoint_id: str) -> str | None:
    """The newest run of ``thread_id`` whose LangGraph thread holds the root checkpoint
    ``checkpoint_id`` (a run's first checkpoint is a copy of its predecessor's, under the same
    id: either copy serves), or ``None``."""
    cp, tr = checkpoints_table, thread_runs_table
    return conn.execute(
        select(cp.c.thread_id)
        .select_from(cp.join(tr, tr.c.run_id == cp.c.thread_id))
        .where(tr.c.thread_id == thread_id, cp.c.checkpoint_ns == "", cp.c.checkpoint_id == checkpoint_id)
        .order_by(tr.c.created_at.desc(), tr.c.run_id.desc())
        .limit(1)
    ).scalar()


def seed_checkpoint(
    conn: Connection, source_run_id: str, run_id: str, *, checkpoint_id: str | None = None
) -> str | None:
    """Copy the latest root checkpoint of ``source_run_id``'s LangGraph thread (or its root
    checkpoint ``checkpoint_id``: a branch) to ``run_id``'s.

    The copy keeps its checkpoint id (so LangGraph's next ids sort after it) and is marked with
    :data:`SEED_MARK`; its pending writes are not copied: the new run starts from the state the
    previous one left (or had at ``checkpoint_id``), with its own input. Returns the copied
    checkpoint id (``None``: the source has no such checkpoint, and nothing is copied).
    """
    cp = checkpoints_table
    query = select(cp).where(cp.c.thread_id == source_run_id, cp.c.checkpoint_ns == "")
    if checkpoint_id is not None:
        query = query.where(cp.c.checkpoint_id == checkpoint_id)
    row = conn.execute(query.order_by(cp.c.checkpoint_id.desc()).limit(1)).first()
    if row is None:
        return None
    values = dict(row._mapping)
    values.update(
        thread_id=run_id,
        parent_checkpoint_id=None,
        run_id=None,
        metadata={**dict(row.metadata or {}), SEED_MARK: source_run_id},
    )
    conn.execute(cp.insert().values(**values))
    return str(row.checkpoint_id)
