"""The durable run queue: which runs have work for a worker, and which worker holds each one.

The queue lives on the run row. A run is *queued* while ``queued_at`` is set: from the
transaction that created it, or that committed a resolution (or a timeout, or a recovery) for
it, until a worker has driven it to rest. Every enqueue bumps ``queue_version``; the worker
that drove the run dequeues it only if the version is still the one it claimed, so work that
arrives while a run is being driven (a second gate resolved mid-step) is never dropped.

A worker holds a *lease* (``lease_owner`` until ``lease_until``) on the run it drives and
renews it while it works. A worker that dies stops renewing; once the lease has run out any
other worker claims the run and continues it from its last checkpoint. Claims skip rows other
claimers hold (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite serialises writers anyway),
and on PostgreSQL every enqueue sends a ``NOTIFY`` on :data:`QUEUE_CHANNEL` at commit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Connection,
    and_,
    bindparam,
    case,
    func,
    or_,
    select,
    text,
    update,
)

from wop_langgraph.store.events import NewEvent
from wop_langgraph.store.held import HeldWrite
from wop_langgraph.store.interrupts import InterruptRecord, open_work_of, open_work_read
from wop_langgraph.store.run_tables import runs_table
from wop_langgraph.store.runs import unfinished
from wop_langgraph.store.statements import Reads, driver_statement

__all__ = [
    "CANCEL_CHANNEL",
    "QUEUE_CHANNEL",
    "Claim",
    "ClaimedRun",
    "any_claimable",
    "cancelled_leases",
    "claim_next",
    "claim_reads",
    "claim_run",
    "claimed_from",
    "created_queued",
    "enqueue",
    "finish",
    "free_leases",
    "lease_owners",
    "notify",
    "queued",
    "release",
    "renew",
    "unqueued_stragglers",
]

#: PostgreSQL notification channels: a run was queued; a leased run was cancelled.
QUEUE_CHANNEL = "wop_queue"
CANCEL_CHANNEL = "wop_cancel"

_runs = runs_table
#: Earlier than any ``queued_at``: "queued" is spelled as a range on it, not ``IS NOT NULL``,
#: because SQLite's planner uses ``ix_wop_runs_queued`` for a range but answers an unordered
#: ``IS NOT NULL`` with a scan of every run (10,000 suspended runs: 8 ms per idle poll).
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def queued() -> ColumnElement[bool]:
    """The condition "the run is queued", in the form both databases answer from the index."""
    return _runs.c.queued_at > _EPOCH


@dataclass(frozen=True, slots=True)
class Claim:
    """A lease on one run: who holds it and which enqueue it answers."""

    run_id: str
    owner: str
    version: int


@dataclass(frozen=True, slots=True)
class ClaimedRun:
    """A claim, and what driving the run needs from its row (read by the claiming statement).

    ``status`` is the run's after the claim: a ``pending`` run is ``running`` from its claim
    on. ``fresh``: the run was created with this claim, so it has no interrupt yet (its first
    pass reads none), and, where ``saved`` says so, no checkpoint. ``work``: the run's open
    work (as :func:`~wop_langgraph.store.interrupts.open_work` returns it), read in the
    transaction that took the claim, for the first pass not to read it again; ``saved``
    likewise.
    """

    claim: Claim
    workflow_id: str
    status: str
    inputs: Any
    configurable: Any
    fresh: bool = False
    work: tuple[list[InterruptRecord], list[InterruptRecord]] | None = None
    #: ``(checkpoint,)``: the run's latest checkpoint (a ``CheckpointTuple``, ``None`` if it
    #: has none), read in the transaction that took the claim, or known (a run created with
    #: the claim and no checkpoint); ``None``: not read.
    saved: tuple[Any] | None = None
    #: A run created with this claim and not stored yet: the write of its row, its
    #: ``run.started`` and that event's time, which the drive holds and stores first with its
    #: first transaction (see ``WopHost.create_run``).
    created: tuple[HeldWrite, NewEvent, datetime] | None = None


def lease_owners(conn: Connection, prefix: str) -> list[str]:
    """The owners (starting with ``prefix``) of leases on queued runs, each once."""
    return [
        str(o)
        for (o,) in conn.execute(
            select(_runs.c.lease_owner).where(queued(), _runs.c.lease_owner.like(prefix + "%")).distinct()
        )
    ]


def free_leases(conn: Connection, owners: Collection[str]) -> list[str]:
    """Drop every lease held by one of ``owners`` (the runs stay queued); the runs freed."""
    return [
        str(run_id)
        for (run_id,) in conn.execute(
            update(_runs)
            .where(_runs.c.lease_owner.in_(list(owners)))
            .values(lease_owner=None, lease_until=None)
            .returning(_runs.c.run_id)
        )
    ]


def notify(conn: Connection, channel: str, payload: str) -> None:
    """Send a PostgreSQL notification at commit (nothing on SQLite: its workers poll)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_notify(:c, :p)"), {"c": channel, "p": payload})


def enqueue(conn: Connection, run_id: str, *, now: datetime, running: bool = False) -> None:
    """Queue ``run_id`` for a worker, in the caller's transaction (with its ``NOTIFY`` on
    PostgreSQL, in the same statement).

    Args:
        running: also set the run's status to ``running`` (a resolution that decided its
            gate: from now on the graph is moving again).
    """
    statement, params = enqueue_write(conn, run_id, now=now, running=running)
    driver_statement(statement).rows(conn, params)


def enqueue_write(
    conn: Connection, run_id: str, *, now: datetime, running: bool = False, notify: bool = True
) -> tuple[Any, dict[str, Any]]:
    """:func:`enqueue` as a statement and its parameters, to run with others (for example as
    the leading write of the append that tells of it: see ``store.events.append``).

    ``notify=False``: no ``NOTIFY`` (PostgreSQL), for a run whose lease the same transaction
    takes: a worker it woke would find the run leased (pollers still see a lease that lapses).
    """
    postgres = conn.dialect.name == "postgresql"
    params = {"enq_run_id": run_id, "enq_now": now, "enq_channel": QUEUE_CHANNEL}
    return _enqueue_statement(running, postgres and notify), params


@functools.cache
def _enqueue_statement(running: bool, notify: bool) -> Any:
    """The enqueue of one unfinished run; with ``notify``, it also sends the queue's NOTIFY."""
    now = bindparam("enq_now", type_=_runs.c.queued_at.type)
    values: dict[str, object] = {
        "queued_at": func.coalesce(_runs.c.queued_at, now),
        "queue_version": _runs.c.queue_version + 1,
        "updated_at": now,
    }
    if running:
        values["status"] = "running"
        values["current_node_id"] = None
    statement = update(_runs).where(_runs.c.run_id == bindparam("enq_run_id"), unfinished()).values(**values)
    if notify:
        return statement.returning(func.pg_notify(bindparam("enq_channel"), _runs.c.run_id))
    return statement


def created_queued(
    now: datetime, *, lease: Claim | None = None, lease_until: datetime | None = None
) -> dict[str, object]:
    """The queue columns of a run inserted already queued (what :func:`enqueue` would set).

    Saves a new run the second statement. Unleased, the caller sends :func:`notify` on
    :data:`QUEUE_CHANNEL` in the same transaction. With ``lease`` (its owner, at version 1)
    until ``lease_until``, the run is inserted claimed, for a caller that drives it at once:
    no claim statement follows, and no other worker takes it while the lease is renewed.
    """
    columns: dict[str, object] = {"queued_at": now, "queue_version": 1}
    if lease is not None:
        if lease.version != 1 or lease_until is None:
            raise ValueError("a run is inserted leased at queue version 1, with the lease's end")
        columns |= {"lease_owner": lease.owner, "lease_until": lease_until}
    return columns


def _claimable(now: datetime | BindParameter[datetime]) -> ColumnElement[bool]:
    return and_(
        queued(),
        or_(_runs.c.lease_until.is_(None), _runs.c.lease_until < now),
    )


@functools.cache
def _take_statement(workflows: int) -> Any:
    """Take the lease of one claimable run (by id, of one of ``workflows`` workflows,
    ``take_wf_<i>``) and read its row.

    Compiled once per number of workflows (an ``IN`` list would render per execution); a
    ``pending`` run becomes ``running`` in the same statement.
    """
    return (
        update(_runs)
        .where(
            _runs.c.run_id == bindparam("take_run_id"),
            or_(*(_runs.c.workflow_id == bindparam(f"take_wf_{i}") for i in range(workflows))),
            _claimable(bindparam("take_now", type_=_runs.c.lease_until.type)),
        )
        .values(
            lease_owner=bindparam("take_owner"),
            lease_until=bindparam("take_until", type_=_runs.c.lease_until.type),
            status=case((_runs.c.status == "pending", "running"), else_=_runs.c.status),
        )
        .returning(
            _runs.c.queue_version,
            _runs.c.status,
            _runs.c.workflow_id,
            _runs.c.inputs,
            _runs.c.configurable,
        )
    )


def claim_run(
    conn: Connection,
    run_id: str,
    *,
    owner: str,
    workflow_ids: Collection[str],
    now: datetime,
    lease: timedelta,
) -> ClaimedRun | None:
    """Lease ``run_id`` if it is queued, nobody holds it and its workflow is one of
    ``workflow_ids``; ``None`` otherwise."""
    if not workflow_ids:
        return None
    rows = driver_statement(_take_statement(len(workflow_ids))).named(
        conn, _take_params(run_id, owner, workflow_ids, now, lease)
    )
    return _claimed(run_id, owner, rows)


def claim_reads(
    run_id: str,
    *,
    owner: str,
    workflow_ids: Collection[str],
    now: datetime,
    lease: timedelta,
    also: Sequence[Callable[[Connection], None]] = (),
) -> Reads | None:
    """:func:`claim_run` with the read of the run's open work (and ``also``), as reads to run
    in one round trip, on their own (``named_together``) or after the statement that queues
    the run; :func:`claimed_from` then tells what they took. ``None``: nothing to claim."""
    if not workflow_ids:
        return None
    take = driver_statement(_take_statement(len(workflow_ids)))
    # (the work is read whether or not the claim succeeds: a row or two, no lock)
    return Reads(
        [(take, _take_params(run_id, owner, workflow_ids, now, lease)), open_work_read(run_id)], also
    )


def claimed_from(run_id: str, owner: str, reads: Reads) -> ClaimedRun | None:
    """The claim that :func:`claim_reads`' ``reads`` took (they ran), with the run's open work."""
    assert reads.rows is not None, "the claim's reads have not run"
    rows, found = reads.rows[:2]
    return _claimed(run_id, owner, rows, work=open_work_of(found)) if rows else None


def _take_params(
    run_id: str, owner: str, workflow_ids: Collection[str], now: datetime, lease: timedelta
) -> dict[str, Any]:
    params = {"take_run_id": run_id, "take_now": now, "take_owner": owner, "take_until": now + lease}
    params.update({f"take_wf_{i}": workflow_id for i, workflow_id in enumerate(workflow_ids)})
    return params


def _claimed(run_id: str, owner: str, rows: list[Any], **more: Any) -> ClaimedRun | None:
    """The claim the take statement's ``rows`` tell of (``more``: further fields), if any."""
    if not rows:
        return None
    row = rows[0]
    return ClaimedRun(
        Claim(run_id, owner, int(row.queue_version)),
        workflow_id=str(row.workflow_id),
        status=str(row.status),
        inputs=row.inputs,
        configurable=row.configurable,
        **more,
    )


def claim_next(
    conn: Connection,
    *,
    owner: str,
    workflow_ids: Collection[str],
    now: datetime,
    lease: timedelta,
) -> ClaimedRun | None:
    """Lease the longest-queued claimable run of one of ``workflow_ids``; ``None`` if none."""
    if not workflow_ids:
        return None
    candidate = conn.execute(
        select(_runs.c.run_id)
        .where(_claimable(now), _runs.c.workflow_id.in_(list(workflow_ids)))
        .order_by(_runs.c.queued_at)
        .limit(1)
        .with_for_update(skip_locked=True)
    ).first()
    if candidate is None:
        return None
    return claim_run(
        conn, str(candidate.run_id), owner=owner, workflow_ids=workflow_ids, now=now, lease=lease
    )


def any_claimable(conn: Connection, *, workflow_ids: Collection[str], now: datetime) -> bool:
    """Whether a claim could succeed now: a cheap read that idle workers poll with (no lock)."""
    if not workflow_ids:
        return False
    found = conn.execute(
        select(_runs.c.run_id).where(_claimable(now), _runs.c.workflow_id.in_(list(workflow_ids))).limit(1)
    ).first()
    return found is not None


def renew(conn: Connection, owner: str, run_ids: Collection[str], *, until: datetime) -> int:
    """Extend ``owner``'s leases on ``run_ids`` to ``until``; returns how many.

    The caller names the runs it drives, so the statement is a primary-key lookup rather than
    a scan of every run for the owner.
    """
    if not run_ids:
        return 0
    return int(
        conn.execute(
            update(_runs)
            .where(_runs.c.run_id.in_(list(run_ids)), _runs.c.lease_owner == owner)
            .values(lease_until=until)
        ).rowcount
    )


def cancelled_leases(conn: Connection, owner: str, run_ids: Collection[str]) -> list[str]:
    """Those of ``run_ids`` leased by ``owner`` that were cancelled meanwhile (here or elsewhere)."""
    if not run_ids:
        return []
    rows = conn.execute(
        select(_runs.c.run_id).where(
            _runs.c.run_id.in_(list(run_ids)), _runs.c.lease_owner == owner, _runs.c.status == "cancelled"
        )
    )
    return [str(r.run_id) for r in rows]


def finish(conn: Connection, claim: Claim) -> bool:
    """Dequeue the run and drop the lease, unless more work was queued since the claim.

    Returns ``True`` when the run left the queue; ``False`` when it was enqueued again while it
    was driven (the lease is kept: the caller drives it once more).
    """
    done = conn.execute(
        update(_runs)
        .where(
            _runs.c.run_id == claim.run_id,
            _runs.c.lease_owner == claim.owner,
            _runs.c.queue_version == claim.version,
        )
        .values(queued_at=None, lease_owner=None, lease_until=None)
    ).rowcount
    return bool(done)


def release(conn: Connection, claim: Claim, *, dequeue: bool = False) -> bool:
    """Drop the lease (the run stays queued unless ``dequeue``): another worker may take it.

    Returns whether the lease was dropped.
    """
    values: dict[str, object] = {"lease_owner": None, "lease_until": None}
    if dequeue:
        values["queued_at"] = None
    statement = (
        update(_runs)
        .where(_runs.c.run_id == claim.run_id, _runs.c.lease_owner == claim.owner)
        .values(**values)
    )
    return bool(conn.execute(statement).rowcount)


def unqueued_stragglers(conn: Connection, *, limit: int = 1000) -> list[str]:
    """Unfinished runs that are not queued and not waiting: what a crash of an older version left."""
    rows = conn.execute(
        select(_runs.c.run_id)
        .where(_runs.c.queued_at.is_(None), _runs.c.status.in_(["pending", "running"]))
        .limit(limit)
    )
    return [str(r.run_id) for r in rows]
