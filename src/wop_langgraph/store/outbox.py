"""Outbox rows: plan once, claim what is due, record the outcome (SQL only; no sending here).

Planning inserts with ``ON CONFLICT DO NOTHING`` on (interrupt key, recipient, purpose), so a
replayed execution, a recovery or a second recorder never plans a notification twice. A claim
moves a due row to ``sending`` under a lease in one conditional ``UPDATE``: of several workers,
one wins; a worker that dies leaves a lease that runs out, and the row is claimed again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from wop_langgraph.store.outbox_table import notifications_table

__all__ = [
    "Notification",
    "Planned",
    "claim_due",
    "dead_letters",
    "insert_planned",
    "notifications_of_run",
    "settle",
]

_t = notifications_table


@dataclass(frozen=True, slots=True)
class Planned:
    """A notification to write in the interrupt's transaction."""

    run_id: str
    interrupt_id: str
    interrupt_key: str
    recipient: str
    purpose: str
    addresses: Sequence[str]
    due_at: datetime


@dataclass(frozen=True, slots=True)
class Notification:
    """One outbox row."""

    notification_id: str
    run_id: str
    interrupt_id: str
    interrupt_key: str
    recipient: str
    purpose: str
    state: str
    addresses: list[str]
    delivered: list[str] | None
    attempts: int
    last_error: str | None
    due_at: datetime
    lease_until: datetime | None
    created_at: datetime
    updated_at: datetime
    sent_at: datetime | None


def insert_planned(conn: Connection, planned: Sequence[Planned], *, now: datetime) -> None:
    """Insert the planned rows that are not in the outbox yet (one statement, many parameter sets)."""
    if not planned:
        return
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(_t).on_conflict_do_nothing(
        index_elements=["interrupt_key", "recipient", "purpose"]
    )
    rows = [
        {
            "notification_id": uuid.uuid4().hex,
            "run_id": item.run_id,
            "interrupt_id": item.interrupt_id,
            "interrupt_key": item.interrupt_key,
            "recipient": item.recipient,
            "purpose": item.purpose,
            "state": "pending",
            "addresses": list(item.addresses),
            "delivered": None,
            "attempts": 0,
            "last_error": None,
            "due_at": item.due_at,
            "lease_until": None,
            "created_at": now,
            "updated_at": now,
            "sent_at": None,
        }
        for item in planned
    ]
    conn.execute(statement, rows)


def _due(now: datetime) -> Any:
    return or_(
        and_(_t.c.state == "pending", _t.c.due_at <= now),
        and_(_t.c.state == "sending", _t.c.lease_until < now),
    )


def claim_due(conn: Connection, *, now: datetime, lease: timedelta, limit: int = 20) -> list[Notification]:
    """Lease up to ``limit`` due notifications (oldest due first) for sending; bumps ``attempts``."""
    ids = [
        str(r.notification_id)
        for r in conn.execute(
            select(_t.c.notification_id)
            .where(_due(now))
            .order_by(_t.c.due_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
    ]
    claimed: list[Notification] = []
    for notification_id in ids:
        row = (
            conn.execute(
                update(_t)
                .where(_t.c.notification_id == notification_id, _due(now))
                .values(state="sending", lease_until=now + lease, attempts=_t.c.attempts + 1, updated_at=now)
                .returning(*_t.c)
            )
            .mappings()
            .first()
        )
        if row is not None:
            claimed.append(_notification(row))
    return claimed


def settle(
    conn: Connection,
    notification_id: str,
    *,
    state: str,
    now: datetime,
    error: str | None = None,
    delivered: Sequence[str] | None = None,
    due_at: datetime | None = None,
) -> None:
    """Record the outcome of a send: ``sent``, ``dead``, ``dropped``, or ``pending`` again (retry)."""
    values: dict[str, Any] = {"state": state, "lease_until": None, "updated_at": now, "last_error": error}
    if delivered is not None:
        values["delivered"] = list(delivered)
    if due_at is not None:
        values["due_at"] = due_at
    if state == "sent":
        values["sent_at"] = now
    conn.execute(
        update(_t).where(_t.c.notification_id == notification_id, _t.c.state == "sending").values(**values)
    )


def dead_letters(conn: Connection, *, run_id: str | None = None, limit: int = 1000) -> list[Notification]:
    """Notifications that exhausted their attempts or were refused, newest first."""
    query = select(_t).where(_t.c.state == "dead")
    if run_id is not None:
        query = query.where(_t.c.run_id == run_id)
    rows = conn.execute(query.order_by(_t.c.updated_at.desc()).limit(limit)).mappings()
    return [_notification(r) for r in rows]


def notifications_of_run(conn: Connection, run_id: str) -> list[Notification]:
    """Every notification planned for ``run_id``, in due order."""
    rows = conn.execute(
        select(_t).where(_t.c.run_id == run_id).order_by(_t.c.due_at, _t.c.recipient)
    ).mappings()
    return [_notification(r) for r in rows]


def _notification(row: Any) -> Notification:
    return Notification(**{name: row[name] for name in Notification.__dataclass_fields__})
