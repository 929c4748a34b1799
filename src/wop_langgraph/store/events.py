"""The OpenWOP event log: append events to a run with gap-free sequences, read them back in order.

Sequences come from a per-run counter row bumped with an atomic upsert in the caller's
transaction: concurrent appenders serialise on that row (PostgreSQL row lock, SQLite's single
writer), and a rolled-back transaction gives its numbers back, so a run's log is numbered
0, 1, 2, ... without gaps or duplicates. Every function takes an open ``Connection`` so an
append can share the transaction of whatever caused it.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Integer, bindparam, func, select
from sqlalchemy.dialects import postgresql, sqlite

from wop_langgraph._clock import iso_z
from wop_langgraph.store.appended import APPENDED_KEY, EVENTS_CHANNEL
from wop_langgraph.store.run_tables import event_counters_table, events_table

__all__ = [
    "NewEvent",
    "RunLogClosed",
    "StoredEvent",
    "append_event_once",
    "append_events",
    "last_sequence",
    "read_events",
]

_events = events_table
_counters = event_counters_table


class RunLogClosed(Exception):
    """The run's log already holds its terminal event: nothing more may be appended."""


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append; the log assigns its ``eventId``, ``sequence`` and ``timestamp``."""

    type: str
    payload: dict[str, Any]
    node_id: str | None = None
    causation_id: str | None = None
    schema_version: int = 1
    event_id: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as persisted in a run's log."""

    run_id: str
    sequence: int
    event_id: str
    type: str
    payload: dict[str, Any]
    timestamp: datetime
    node_id: str | None = None
    causation_id: str | None = None
    schema_version: int = 1

    def to_wire(self) -> dict[str, Any]:
        """The OpenWOP ``RunEventDoc`` of this event."""
        doc: dict[str, Any] = {
            "eventId": self.event_id,
            "runId": self.run_id,
            "type": self.type,
            "payload": self.payload,
            "timestamp": iso_z(self.timestamp),
            "sequence": self.sequence,
            "schemaVersion": self.schema_version,
        }
        if self.node_id is not None:
            doc["nodeId"] = self.node_id
        if self.causation_id is not None:
            doc["causationId"] = self.causation_id
        return doc


def append_events(
    conn: Connection, run_id: str, events: Sequence[NewEvent], *, now: datetime, close: bool = False
) -> list[StoredEvent]:
    """Append ``events`` to the log of ``run_id`` in order, inside the caller's transaction.

    Returns the stored events with their sequences. Nothing is visible to readers until the
    caller commits; if it rolls back, the sequences are reused by the next append.

    Args:
        close: the events end the run (its terminal event): later appends are refused.

    Raises:
        RunLogClosed: the log was closed by an earlier terminal event (for example a
            cancellation that committed while a worker was still driving the run).
    """
    if not events:
        return []
    # This transaction's commit wakes the run's readers (see :mod:`.appended`): marked once per
    # run; on PostgreSQL the counter's own statement sends the one NOTIFY (no extra round trip).
    announced: set[str] = conn.info.setdefault(APPENDED_KEY, set())
    notify = conn.dialect.name == "postgresql" and run_id not in announced
    first = _reserve_sequences(conn, run_id, len(events), close, notify=notify)
    announced.add(run_id)
    stored = [
        StoredEvent(
            run_id=run_id,
            sequence=first + offset,
            event_id=event.event_id,
            type=event.type,
            payload=event.payload,
            timestamp=now,
            node_id=event.node_id,
            causation_id=event.causation_id,
            schema_version=event.schema_version,
        )
        for offset, event in enumerate(events)
    ]
    conn.execute(
        _events.insert(),
        [
            {
                "run_id": e.run_id,
                "sequence": e.sequence,
                "event_id": e.event_id,
                "type": e.type,
                "node_id": e.node_id,
                "payload": e.payload,
                "timestamp": e.timestamp,
                "schema_version": e.schema_version,
                "causation_id": e.causation_id,
            }
            for e in stored
        ],
    )
    return stored


def append_event_once(conn: Connection, run_id: str, event: NewEvent, *, now: datetime) -> bool:
    """Append ``event`` unless the log already holds its ``event_id`` (a replayed execution).

    Returns whether it was appended. Raises :class:`RunLogClosed` like :func:`append_events`.
    """
    seen = conn.execute(select(_events.c.sequence).where(_events.c.event_id == event.event_id)).first()
    if seen is not None:
        return False
    append_events(conn, run_id, [event], now=now)
    return True


def read_events(
    conn: Connection,
    run_id: str,
    *,
    after: int = -1,
    limit: int | None = None,
    types: Iterable[str] | None = None,
) -> list[StoredEvent]:
    """The events of ``run_id`` with ``sequence > after``, in sequence order.

    Args:
        after: the last sequence the reader already has (``-1`` reads from the start).
        limit: at most this many events.
        types: only events of these types.
    """
    query = (
        select(_events)
        .where(_events.c.run_id == run_id, _events.c.sequence > after)
        .order_by(_events.c.sequence)
    )
    if types is not None:
        query = query.where(_events.c.type.in_(list(types)))
    if limit is not None:
        query = query.limit(limit)
    return [
        StoredEvent(
            run_id=row.run_id,
            sequence=row.sequence,
            event_id=row.event_id,
            type=row.type,
            payload=row.payload,
            timestamp=row.timestamp,
            node_id=row.node_id,
            causation_id=row.causation_id,
            schema_version=row.schema_version,
        )
        for row in conn.execute(query)
    ]


def last_sequence(conn: Connection, run_id: str) -> int:
    """The highest sequence in the log of ``run_id``, or ``-1`` when it is empty."""
    value = conn.execute(select(func.max(_events.c.sequence)).where(_events.c.run_id == run_id)).scalar()
    return -1 if value is None else int(value)


def _reserve_sequences(conn: Connection, run_id: str, count: int, close: bool, *, notify: bool) -> int:
    """Bump the run's counter by ``count`` and return the first reserved sequence.

    The bump only applies to an open log, so a terminal event and any append racing it are
    ordered by the counter row's lock: whichever comes second sees the log closed. With
    ``notify`` (PostgreSQL) the same statement sends the log's ``NOTIFY``, if it bumped.
    """
    statement = _reserve_statement(conn.dialect.name, close, notify)
    params = {"run_id": run_id, "count": count, "channel": EVENTS_CHANNEL}
    next_free = conn.execute(statement, params).scalar()
    if next_free is None:
        raise RunLogClosed(f"run {run_id!r} has ended; its event log is closed")
    return int(next_free) - count


@functools.cache
def _reserve_statement(dialect_name: str, close: bool, notify: bool) -> Any:
    """The counter upsert of :func:`_reserve_sequences`, built once per shape."""
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    count = bindparam("count", type_=Integer)
    statement = dialect.insert(_counters).values(
        run_id=bindparam("run_id"), next_sequence=count, closed=close
    )
    set_: dict[str, Any] = {"next_sequence": _counters.c.next_sequence + count}
    if close:
        set_["closed"] = True
    returning: list[Any] = [_counters.c.next_sequence]
    if notify:
        returning.append(func.pg_notify(bindparam("channel"), bindparam("run_id")))
    return statement.on_conflict_do_update(
        index_elements=[_counters.c.run_id], set_=set_, where=_counters.c.closed.is_(False)
    ).returning(*returning)
