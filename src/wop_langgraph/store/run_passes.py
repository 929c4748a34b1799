"""The run ledger's writes around one pass of a worker: start, rest on an interrupt, end.

A worker holding a run's lease starts a pass (:func:`start_pass`), and leaves the run either
waiting on an interrupt (:func:`rest_run`, :func:`rest_at_oldest_interrupt`), ended
(:func:`end_run`, or :func:`end_gate` folded into the terminal event's append) or simply out
of the queue (:func:`dequeue`). Every write names the lease it holds, so a pass that lost the
run (cancelled, reclaimed) changes nothing. Each statement is compiled once (parameters, not
values, vary per run) and run by :mod:`.statements`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, Exists, bindparam, case, func, or_, select, update

from wop_langgraph.protocol.payloads import INTERRUPT_KINDS
from wop_langgraph.protocol.snapshot import waiting_status_for
from wop_langgraph.store.engine import one_statement
from wop_langgraph.store.run_tables import event_counters_table, events_table, interrupts_table, runs_table
from wop_langgraph.store.runs import unfinished
from wop_langgraph.store.statements import Reads, driver_statement

__all__ = [
    "dequeue",
    "end_gate",
    "end_params",
    "end_run",
    "lock_run_log",
    "logged_any",
    "rest_at_oldest_interrupt",
    "rest_params",
    "rest_run",
    "rested_row",
    "resting_at_oldest_interrupt",
    "start_pass",
]


def start_pass(engine: Engine, run_id: str, owner: str) -> tuple[int, str] | None:
    """Mark the run ``running`` if it was ``pending``; the queue version this pass answers
    and the run's status (``None`` when ``owner`` no longer holds the lease)."""
    with one_statement(engine) as conn, conn.begin():
        row = conn.execute(
            update(runs_table)
            .where(runs_table.c.run_id == run_id, runs_table.c.lease_owner == owner)
            .values(status=case((runs_table.c.status == "pending", "running"), else_=runs_table.c.status))
            .returning(runs_table.c.queue_version, runs_table.c.status)
        ).first()
    if row is None:
        return None
    return int(row.queue_version), str(row.status)


def lock_run_log(conn: Connection, run_id: str) -> None:
    """Lock the run's event log for ``conn``'s transaction (its counter row), in the order
    the recorder takes it."""
    conn.execute(
        select(event_counters_table.c.run_id).where(event_counters_table.c.run_id == run_id).with_for_update()
    )


def logged_any(conn: Connection, event_ids: Sequence[str]) -> bool:
    """Whether any of the events ``event_ids`` is in the log."""
    finished = select(events_table.c.sequence).where(events_table.c.event_id.in_(event_ids))
    return conn.execute(finished).first() is not None


def dequeue(conn: Connection, run_id: str, owner: str) -> None:
    """Take the run out of the queue, if ``owner`` holds its lease."""
    params = {"deq_run_id": run_id, "deq_owner": owner}
    driver_statement(_dequeue_statement()).rowcount(conn, params)


def rest_params(run_id: str, owner: str, version: int, now: datetime) -> dict[str, Any]:
    """The parameters the rest statements share: the run, the lease and queue version the
    pass holds, the time."""
    return {"rest_run_id": run_id, "rest_owner": owner, "rest_version": version, "rest_now": now}


def rest_run(conn: Connection, params: dict[str, Any], *, status: str, node: str) -> Any:
    """The run waits (``status``) at ``node``, out of the queue, unless work arrived since the
    claim (``params`` from :func:`rest_params`); the run's row, or ``None`` if nothing changed."""
    params = params | {"rest_status": status, "rest_node": node}
    return _first(driver_statement(_rest_statement()).named(conn, params))


def rest_at_oldest_interrupt(
    conn: Connection, params: dict[str, Any], custom_statuses: tuple[tuple[str, str], ...] = ()
) -> Any:
    """:func:`rest_run` at the run's oldest pending interrupt, in one statement that reads
    nothing before it; ``None`` (nothing written) when a resolution awaits delivery, nothing is
    pending, or the lease moved.

    The status is the interrupt kind's (:func:`waiting_status_for`), except for a ``custom``
    interrupt whose ``customKind`` is in ``custom_statuses`` (``(customKind, status)`` pairs:
    the waiting statuses of the kinds a host added, ``wop_langgraph.kinds``).
    """
    return _first(driver_statement(_rest_unless_work_statement(custom_statuses)).named(conn, params))


def resting_at_oldest_interrupt(
    params: dict[str, Any], custom_statuses: tuple[tuple[str, str], ...] = ()
) -> Reads:
    """:func:`rest_at_oldest_interrupt`, to send in another statement's round trip (an
    append's ``then``): its run's row is then :func:`rested_row` of what this returns."""
    return Reads([(driver_statement(_rest_unless_work_statement(custom_statuses)), params)])


def rested_row(resting: Reads | None) -> Any:
    """The run's row as :func:`resting_at_oldest_interrupt`'s statement put it to rest; ``None``
    when that statement wrote nothing, or has not run."""
    if resting is None or resting.rows is None:
        return None
    return _first(resting.rows[0])


def end_params(
    run_id: str,
    owner: str,
    status: str,
    *,
    now: datetime,
    outputs: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
    node: str | None = None,
) -> dict[str, Any]:
    """The parameters of :func:`end_run` (and of :func:`end_gate`)."""
    return {
        "end_run_id": run_id,
        "end_owner": owner,
        "end_status": status,
        "end_outputs": outputs,
        "end_error": error,
        "end_node": node,
        "end_now": now,
    }


def end_run(conn: Connection, params: dict[str, Any]) -> Any:
    """End the run (unless it ended already) and, if the pass holds its lease, take it out of
    the queue; the run's row, or ``None`` when it had ended (a cancellation came first)."""
    return _first(driver_statement(_end_statement()).named(conn, params))


def end_gate(params: dict[str, Any], *, consuming: bool) -> tuple[Any, dict[str, Any]]:
    """:func:`end_run` as the gate of the terminal event's append (statement, parameters):
    it changes nothing while a resolution awaits delivery (other than ``end_consumed_id``,
    consumed beside it when ``consuming``) or once the run's log is closed."""
    return _end_unless_work_statement(consuming), params


def _first(rows: list[Any]) -> Any:
    return rows[0] if rows else None


# The statements of a pass's end, compiled once (parameters, not values, vary per run).


@functools.cache
def _dequeue_statement() -> Any:
    return (
        update(runs_table)
        .where(
            runs_table.c.run_id == bindparam("deq_run_id"),
            runs_table.c.lease_owner == bindparam("deq_owner"),
        )
        .values(queued_at=None, lease_owner=None, lease_until=None)
    )


@functools.cache
def _rest_statement() -> Any:
    """The run waits on an interrupt: out of the queue, unless work arrived since the claim."""
    now = bindparam("rest_now", type_=runs_table.c.updated_at.type)
    return (
        update(runs_table)
        .where(
            runs_table.c.run_id == bindparam("rest_run_id"),
            runs_table.c.lease_owner == bindparam("rest_owner"),
            runs_table.c.queue_version == bindparam("rest_version"),
            unfinished(),
        )
        .values(
            status=bindparam("rest_status"),
            current_node_id=bindparam("rest_node"),
            updated_at=now,
            queued_at=None,
            lease_owner=None,
            lease_until=None,
        )
        .returning(*runs_table.c)
    )


@functools.cache
def _rest_unless_work_statement(custom_statuses: tuple[tuple[str, str], ...]) -> Any:
    """:func:`_rest_statement` at the run's oldest pending interrupt (its waiting status, its
    node), read in the statement, which changes nothing while a resolution of the run awaits
    delivery or when none is pending: what the driver's settling would read first,
    folded into the write. A resolution committing meanwhile bumps the queue version, so the
    row no longer matches, as with a read and a write."""
    interrupts = interrupts_table
    oldest = (
        select(
            interrupts.c.run_id,
            interrupts.c.kind,
            interrupts.c.node_id,
            *([interrupts.c.payload] if custom_statuses else []),
        )
        .where(interrupts.c.run_id == bindparam("rest_run_id"), interrupts.c.status == "pending")
        .order_by(interrupts.c.created_at, interrupts.c.visit_index, interrupts.c.ordinal)
        .limit(1)
        .subquery("oldest")
    )
    status = case({kind: waiting_status_for(kind) for kind in INTERRUPT_KINDS}, value=oldest.c.kind)
    if custom_statuses:  # read the customKind only when an added kind has a status of its own
        added = case(dict(custom_statuses), value=oldest.c.payload[("data", "customKind")].as_string())
        status = case((oldest.c.kind == "custom", func.coalesce(added, status)), else_=status)
    return (
        _rest_statement()
        .where(
            runs_table.c.run_id == oldest.c.run_id, status.is_not(None), ~_awaiting_delivery("rest_run_id")
        )
        .values(status=status, current_node_id=oldest.c.node_id)
    )


@functools.cache
def _end_unless_work_statement(consuming: bool) -> Any:
    """:func:`_end_statement`, which changes nothing while a resolution of the run awaits
    delivery (other than ``end_consumed_id``, consumed beside it when ``consuming``) or once
    its log is closed: what the driver's settling would read first, folded into the
    write, so that the run ends only with its terminal event appended in the same statement."""
    # Consumed in the same statement, the delivered resolution still looks unconsumed here.
    besides = [interrupts_table.c.interrupt_id != bindparam("end_consumed_id")] if consuming else []
    closed = select(event_counters_table.c.run_id).where(
        event_counters_table.c.run_id == bindparam("end_run_id"), event_counters_table.c.closed.is_(True)
    )
    return _end_statement().where(~_awaiting_delivery("end_run_id", *besides), ~closed.exists())


def _awaiting_delivery(run_param: str, *also: ColumnElement[bool]) -> Exists:
    """Whether the run (parameter ``run_param``) has a resolution (or a timeout) not yet
    delivered to its graph, among the interrupts that match ``also``."""
    interrupts = interrupts_table
    return (
        select(interrupts.c.interrupt_id)
        .where(
            interrupts.c.run_id == bindparam(run_param),
            # Not ``in_``: a literal list renders per execution, and this is compiled once.
            or_(interrupts.c.status == "resolved", interrupts.c.status == "expired"),
            interrupts.c.consumed_at.is_(None),
            *also,
        )
        .exists()
    )


@functools.cache
def _end_statement() -> Any:
    """The run ends (unless it ended already: a cancellation that came first) and, if this
    drive holds its lease, leaves the queue (as :func:`_dequeue`) in the same statement."""
    now = bindparam("end_now", type_=runs_table.c.updated_at.type)
    held = runs_table.c.lease_owner == bindparam("end_owner")
    return (
        update(runs_table)
        .where(runs_table.c.run_id == bindparam("end_run_id"), unfinished())
        .values(
            status=bindparam("end_status"),
            outputs=bindparam("end_outputs", type_=runs_table.c.outputs.type),
            error=bindparam("end_error", type_=runs_table.c.error.type),
            current_node_id=bindparam("end_node"),
            updated_at=now,
            completed_at=now,
            queued_at=case((held, None), else_=runs_table.c.queued_at),
            lease_owner=case((held, None), else_=runs_table.c.lease_owner),
            lease_until=case((held, None), else_=runs_table.c.lease_until),
        )
        .returning(*runs_table.c)
    )
