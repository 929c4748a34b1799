"""The OpenWOP event log: append events to a run with gap-free sequences, read them back in order.

Sequences come from a per-run counter row bumped with an atomic upsert in the caller's
transaction: concurrent appenders serialise on that row (PostgreSQL row lock, SQLite's single
writer), and a rolled-back transaction gives its numbers back, so a run's log is numbered
0, 1, 2, ... without gaps or duplicates. Every function takes an open ``Connection`` so an
append can share the transaction of whatever caused it. Appends run their statements straight
on that connection's driver connection (see :mod:`.statements`): an append is a handful of
fast statements, and SQLAlchemy's per-statement work cost more than they did.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Integer,
    LargeBinary,
    String,
    bindparam,
    column,
    false,
    func,
    literal_column,
    null,
    select,
    text,
    true,
    type_coerce,
    union_all,
)
from sqlalchemy.dialects import postgresql, sqlite

from wop_langgraph._clock import iso_z
from wop_langgraph.proof.chain import (
    GENESIS,
    canonical,
    canonical_text,
    chain_raw,
    event_digest_raw,
    wire_time,
)
from wop_langgraph.store.appended import APPENDED_KEY, EVENTS_CHANNEL
from wop_langgraph.store.run_tables import event_counters_table, events_table
from wop_langgraph.store.statements import Reads, driver_connection
from wop_langgraph.store.statements import driver_statement as _driver

__all__ = [
    "Leading",
    "NewEvent",
    "RideNotTaken",
    "RidingWrite",
    "RunLogClosed",
    "StoredEvent",
    "append_event_once",
    "append_events",
    "append_events_if",
    "appended_first",
    "last_sequence",
    "read_events",
    "riding_next_append",
]

_events = events_table
_counters = event_counters_table
#: ``Connection.info`` key: events to append first, by run (see :func:`appended_first`).
_STAGED_KEY = "wop_staged_events"
#: ``Connection.info`` key: a write to carry in the next append's statement, by run (see
#: :func:`riding_next_append`).
_RIDING_KEY = "wop_riding_writes"


#: A write that goes with an append, in its statement where the database allows: a data-modifying
#: statement compiled once (built with ``bindparam`` names no append uses) and its parameters.
Leading = tuple[Any, Mapping[str, Any]]


#: PostgreSQL: a write that rides in the statement of an append and runs only if the append logs
#: its events: ``build(reserved, arg)`` gives the data-modifying statement reading the append's
#: ``reserved`` CTE (one row when the append logs, none when not; compiled once per ``arg``),
#: and the parameters (named so that no append's parameter has their names).
RidingWrite = tuple[Callable[[Any, Any], Any], Hashable, Mapping[str, Any]]


class RunLogClosed(Exception):
    """The run's log already holds its terminal event: nothing more may be appended."""


class RideNotTaken(Exception):
    """The append that carried a riding write logged nothing (its log is closed, or an event it
    was to log once is logged already): neither the events nor the write were stored."""


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
    #: The event's value in its run's hash chain (see :mod:`wop_langgraph.proof.chain`);
    #: ``None`` for an event logged before the chain existed.
    chain_hash: str | None = None

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
    conn: Connection,
    run_id: str,
    events: Sequence[NewEvent],
    *,
    now: datetime,
    close: bool = False,
    leading: Leading | None = None,
    asynchronously: bool = False,
) -> list[StoredEvent]:
    """Append ``events`` to the log of ``run_id`` in order, inside the caller's transaction.

    Returns the stored events with their sequences. Nothing is visible to readers until the
    caller commits; if it rolls back, the sequences are reused by the next append. Events
    staged by :func:`appended_first` go first, in the same statement.

    Args:
        close: the events end the run (its terminal event): later appends are refused.
        leading: a write that goes first (the fact the events tell of). On PostgreSQL it runs
            in the append's statement, as a data-modifying ``WITH``: one statement where two
            were, which a caller may then run in autocommit (see ``one_statement``);
            elsewhere it is executed just before, in the same transaction. It runs even when
            the append raises :class:`RunLogClosed` (the caller's transaction rolls back).
        asynchronously: PostgreSQL, for a statement in autocommit: its commit returns without
            waiting for the WAL flush (``synchronous_commit`` off for it alone). The next
            synchronous commit on the server makes it durable with its own: for a caller that
            tells no one of what it wrote before such a commit.

    Raises:
        RunLogClosed: the log was closed by an earlier terminal event (for example a
            cancellation that committed while a worker was still driving the run).
    """
    if not events:
        _run_leading(conn, leading)
        return []
    timed = [(event, now) for event in events]
    return _append_after_staged(
        conn, run_id, timed, close=close, once=0, leading=leading, asynchronously=asynchronously
    )


def append_events_if(
    conn: Connection,
    run_id: str,
    events: Sequence[NewEvent],
    *,
    now: datetime,
    gate: Leading,
    close: bool = False,
    leading: Leading | None = None,
    staged_first: bool = False,
    then: Reads | None = None,
) -> Any:
    """Run ``leading``, then ``gate`` (a write returning at most one row, named columns), and
    append ``events`` only if ``gate`` returned its row; returns that row, or ``None``.
    ``then``: reads run right after, whatever the gate found (on PostgreSQL in the same round
    trip), their rows left in ``then.rows``.

    On PostgreSQL all of it is one statement (``WITH``s of the writes, the counter bump
    reading ``gate``'s row): one round trip, which a caller may run in autocommit. The gate
    must also fail where the log is closed (a run that ended), so that a row it returns always
    has its events appended; where it does not, :class:`RunLogClosed` is raised all the same.
    Events staged by :func:`appended_first` are appended first (each unless logged already),
    in a statement of their own; with ``staged_first`` in the same statement instead, all of
    them only if none is logged yet: if one is (a replay), :class:`RunLogClosed` is raised too
    (roll back, or append the usual way: the staged are staged again whenever the statement
    appended nothing).
    """
    staged = conn.info.get(_STAGED_KEY)
    timed = (staged.pop(run_id, None) if staged else None) or []
    if timed and not (staged_first and conn.dialect.name == "postgresql"):
        with suppress(RunLogClosed):  # then the gate finds the log closed too
            _append_timed(conn, run_id, timed, close=False, once=len(timed))
        timed = []
    if conn.dialect.name != "postgresql":
        _run_leading(conn, leading)
        row = next(iter(_driver(gate[0]).named(conn, gate[1])), None)
        if row is not None:
            append_events(conn, run_id, events, now=now, close=close)
        if then is not None:
            then.run(conn)
        return row
    once = len(timed)
    timed += [(event, now) for event in events]
    announced: set[str] = conn.info.setdefault(APPENDED_KEY, set())
    params: dict[str, Any] = {"run_id": run_id, "count": len(timed), "channel": EVENTS_CHANNEL, **gate[1]}
    params |= _row_params(_rows(run_id, timed, True)[0], leading)
    for offset, (event, _) in enumerate(timed[:once]):
        params[f"once_id_{offset}"] = event.event_id
    statement = _gated_append_statement(
        len(timed), close, run_id not in announced, gate[0], None if leading is None else leading[0], once
    )
    if then is None:
        found = _driver(statement).named(conn, params)
    else:
        found = then.run(conn, (_driver(statement), params))
    if not found or found[0].wop_logged != len(timed):
        if once:  # appended none of them: the staged wait for the transaction's next append
            conn.info.setdefault(_STAGED_KEY, {}).setdefault(run_id, [])[:0] = timed[:once]
        if not found:
            return None
        raise RunLogClosed(f"run {run_id!r} has ended, or a staged event is logged already")
    announced.add(run_id)
    return found[0]


def append_event_once(conn: Connection, run_id: str, event: NewEvent, *, now: datetime) -> bool:
    """Append ``event`` unless the log already holds its ``event_id`` (a replayed execution).

    Returns whether it was appended. Raises :class:`RunLogClosed` like :func:`append_events`.
    """
    return bool(_append_after_staged(conn, run_id, [(event, now)], close=False, once=1))


@contextmanager
def appended_first(
    conn: Connection, run_id: str, timed: Sequence[tuple[NewEvent, datetime]]
) -> Iterator[None]:
    """Within the block, the next append to ``run_id``'s log in ``conn``'s transaction appends
    ``timed`` (each with its own timestamp, each unless its id is logged already) before its
    own events, in the same statement; if the block appends none, they are appended on their
    own as it ends. If the log is closed they are dropped. If the block raises, nothing of
    them is appended (the caller rolls the transaction back).
    """
    if not timed:  # the usual write transaction: no start held
        yield
        return
    staged: dict[str, list[tuple[NewEvent, datetime]]] = conn.info.setdefault(_STAGED_KEY, {})
    staged.setdefault(run_id, []).extend(timed)
    try:
        yield
        left = staged.pop(run_id, None)
        if left:
            with suppress(RunLogClosed):
                _append_timed(conn, run_id, left, close=False, once=len(left))
    finally:
        staged.pop(run_id, None)


@contextmanager
def riding_next_append(conn: Connection, run_id: str, write: RidingWrite) -> Iterator[Callable[[], bool]]:
    """PostgreSQL: within the block, the next append to ``run_id``'s log in ``conn`` carries
    ``write`` in its statement, where it runs only if the append logs its events; an append
    that would log nothing raises :class:`RideNotTaken` instead, with nothing stored.

    This makes a fact and the events that tell of it one statement, which the caller may run
    in autocommit, where the usual way (the fact, then the append, in one transaction) costs
    a ``BEGIN`` and a ``COMMIT`` more. Yields a function telling whether an append took the
    write: if none did, the caller stores it some other way.
    """
    riding: dict[str, RidingWrite] = conn.info.setdefault(_RIDING_KEY, {})
    riding[run_id] = write
    ended: list[bool] = []  # whether an append took it, as the block ended

    def taken() -> bool:
        return ended[0] if ended else riding.get(run_id) is not write

    try:
        yield taken
    finally:
        ended.append(taken())
        if not ended[0]:
            del riding[run_id]


def _append_after_staged(
    conn: Connection,
    run_id: str,
    timed: list[tuple[NewEvent, datetime]],
    *,
    close: bool,
    once: int,
    leading: Leading | None = None,
    asynchronously: bool = False,
) -> list[StoredEvent]:
    """Append the run's staged events (see :func:`appended_first`), then ``timed`` (all of them
    only if not logged yet: ``once`` is 0 or ``len(timed)``), in one statement; returns those
    of ``timed`` appended."""
    staged = conn.info.get(_STAGED_KEY)
    first = staged.pop(run_id, None) if staged else None
    if not first:
        return _append_timed(
            conn, run_id, timed, close=close, once=once, leading=leading, asynchronously=asynchronously
        )
    # The staged are once-only, so the once-only events still lead the batch.
    stored = _append_timed(
        conn,
        run_id,
        first + timed,
        close=close,
        once=len(first) + once,
        leading=leading,
        asynchronously=asynchronously,
    )
    ids = {event.event_id for event, _ in timed}
    return [event for event in stored if event.event_id in ids]


def _append_timed(
    conn: Connection,
    run_id: str,
    timed: list[tuple[NewEvent, datetime]],
    *,
    close: bool,
    once: int,
    leading: Leading | None = None,
    asynchronously: bool = False,
) -> list[StoredEvent]:
    """Append ``timed``, of which the first ``once`` only if their ids are not logged yet,
    after ``leading`` (which runs once, whatever the append finds).

    The common case (none logged) is one statement on PostgreSQL. Raises
    :class:`RunLogClosed` if the log is closed and there was something to append.
    """
    stored = _append(
        conn, run_id, timed, close=close, once=once, leading=leading, asynchronously=asynchronously
    )
    if stored is not None:
        return stored
    # Nothing reserved: some once-only event is logged already (a replay), or the log is closed.
    seen = _driver(_seen_statement())
    unseen = [(event, at) for event, at in timed[:once] if not seen.rows(conn, {"event_id": event.event_id})]
    if len(unseen) == once:
        raise RunLogClosed(f"run {run_id!r} has ended; its event log is closed")
    rest = unseen + timed[once:]
    return _append_timed(conn, run_id, rest, close=close, once=len(unseen)) if rest else []


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
            chain_hash=row.chain_hash,
        )
        for row in conn.execute(query)
    ]


def last_sequence(conn: Connection, run_id: str) -> int:
    """The highest sequence in the log of ``run_id``, or ``-1`` when it is empty."""
    value = conn.execute(select(func.max(_events.c.sequence)).where(_events.c.run_id == run_id)).scalar()
    return -1 if value is None else int(value)


def _append(
    conn: Connection,
    run_id: str,
    timed: Sequence[tuple[NewEvent, datetime]],
    *,
    close: bool,
    once: int,
    leading: Leading | None = None,
    asynchronously: bool = False,
) -> list[StoredEvent] | None:
    """Run ``leading``, reserve sequences for the events and insert them; ``None`` when nothing
    was reserved (``asynchronously``: see :func:`append_events`).

    The counter bump only applies to an open log, so a terminal event and any append racing it
    are ordered by the counter row's lock: whichever comes second sees the log closed. With
    ``once``, it also applies only while none of the first ``once`` events' ids is logged. On
    PostgreSQL the bump, the insert and the log's one ``NOTIFY`` per run and transaction are a
    single statement; SQLite (no data-modifying CTEs) runs the bump, then the insert.
    """
    # This transaction's commit wakes the run's readers (see :mod:`.appended`): marked once per run.
    announced: set[str] = conn.info.setdefault(APPENDED_KEY, set())
    postgres = conn.dialect.name == "postgresql"
    rows, digests = _rows(run_id, timed, postgres)
    params: dict[str, Any] = {"run_id": run_id, "count": len(rows), "channel": EVENTS_CHANNEL}
    for offset, (event, _) in enumerate(timed[:once]):
        params[f"once_id_{offset}"] = event.event_id
    if postgres:
        riding = conn.info.get(_RIDING_KEY)
        ride = riding.pop(run_id, None) if riding else None
        params |= _row_params(rows, leading)
        if ride is not None:
            params |= ride[2]
        statement = _append_statement(
            len(rows),
            close,
            run_id not in announced,
            once,
            None if leading is None else leading[0],
            None if ride is None else ride[:2],
            asynchronously,
        )
        inserted = _driver(statement).rows(conn, params)
        if not inserted:
            if ride is not None:
                raise RideNotTaken(f"run {run_id!r}: the append logged nothing; its riding write did not run")
            return None
        ordered = sorted(inserted, key=lambda row: int(row[0]))
        first = int(ordered[0][0])
        chained = [row[1] for row in ordered]
    else:
        _run_leading(conn, leading)
        reserve = _driver(_reserve_statement("sqlite", close, False, once, len(rows)))
        # (both statements run on the driver connection, if one, looked up once)
        driver = driver_connection(conn)
        reserved = reserve.rows(conn, params) if driver is None else reserve.rows_on(conn, driver, params)
        if not reserved:
            return None
        first = int(reserved[0][0]) - len(rows)
        # SQLite has one writer: the run's last event, read in the bump's statement, is the
        # chain's head until this transaction ends.
        chained = chain_raw(reserved[0][1], digests)
        for offset, row in enumerate(rows):
            row["sequence"] = first + offset
            row["chain_hash"] = chained[offset]
        _driver(_sqlite_insert_statement()).execute_many(conn, rows, driver)
    announced.add(run_id)
    return [
        StoredEvent(
            run_id=run_id,
            sequence=first + offset,
            event_id=event.event_id,
            type=event.type,
            payload=event.payload,
            timestamp=at,
            node_id=event.node_id,
            causation_id=event.causation_id,
            schema_version=event.schema_version,
            chain_hash=chained[offset],
        )
        for offset, (event, at) in enumerate(timed)
    ]


def _run_leading(conn: Connection, leading: Leading | None) -> None:
    """Run ``leading`` on its own, in ``conn``'s transaction (where it cannot join a statement)."""
    if leading is not None:
        _driver(leading[0]).rowcount(conn, leading[1])


def _row_params(rows: Sequence[dict[str, Any]], leading: Leading | None) -> dict[str, Any]:
    """PostgreSQL: the parameters of one statement inserting ``rows`` (``<column>_<offset>``),
    and those of the ``leading`` write it carries."""
    params = {f"{name}_{offset}": value for offset, row in enumerate(rows) for name, value in row.items()}
    return params if leading is None else params | dict(leading[1])


def _rows(
    run_id: str, timed: Sequence[tuple[NewEvent, datetime]], postgres: bool
) -> tuple[list[dict[str, Any]], list[bytes]]:
    """The per-event columns of an insert, and the events' digests that their chain hashes chain.

    PostgreSQL: the columns of :data:`_ROW_COLUMNS` and the hex ``digest`` (``run_id``,
    ``sequence`` and the chain are the batch's statement's). SQLite: with ``run_id`` too, and
    the payload and timestamp as the text stored (see :func:`_sqlite_insert_statement`): the
    payload's canonical text, which the digest has just written, where it is plain JSON (else
    ``json.dumps``, as the JSON type writes), the timestamp formatted once for the digest and
    the column (for each distinct moment of the batch).
    """
    rows: list[dict[str, Any]] = []
    digests: list[bytes] = []
    times: dict[datetime, tuple[str, str]] = {}
    for event, at in timed:
        if (formatted := times.get(at)) is None:
            formatted = times[at] = _formatted(at)
        text = canonical_text(event.payload)
        digest = event_digest_raw(
            run_id=run_id,
            event_id=event.event_id,
            type=event.type,
            payload=canonical(event.payload) if text is None else text,
            wire_time=formatted[0],
            node_id=event.node_id,
            causation_id=event.causation_id,
            schema_version=event.schema_version,
        )
        digests.append(digest)
        row: dict[str, Any] = {
            "event_id": event.event_id,
            "type": event.type,
            "node_id": event.node_id,
            "schema_version": event.schema_version,
            "causation_id": event.causation_id,
        }
        if postgres:
            row |= {"payload": event.payload, "timestamp": at, "digest": digest.hex()}
        else:
            payload = json.dumps(event.payload) if text is None else text
            row |= {"run_id": run_id, "payload": payload, "timestamp": formatted[1]}
        rows.append(row)
    return rows, digests


def _formatted(moment: datetime) -> tuple[str, str]:
    """``moment``'s wire time, and its text in a SQLite column (SQLAlchemy's ``DateTime``
    there: the wall time as given, with microseconds), from one ``isoformat``."""
    stamp = moment.isoformat(" ", "microseconds")
    wire = f"{stamp[:10]}T{stamp[11:23]}Z" if moment.tzinfo is UTC else wire_time(moment)
    return wire, stamp[:26]


_ROW_COLUMNS = ("event_id", "type", "node_id", "payload", "timestamp", "schema_version", "causation_id")


@functools.cache
def _reserve_statement(
    dialect_name: str, close: bool, notify: bool, once: int, count: int, gate: Any = None
) -> Any:
    """The counter upsert: bump ``next_sequence`` by ``count`` on an open log, return it, and
    where the run's hash chain stood before the append.

    With ``once``, the row to upsert is only produced while no event has one of the ids
    ``once_id_0`` ... ``once_id_<once-1>``; with ``gate`` (a CTE), only if it has a row; with
    ``notify`` (PostgreSQL) the statement also sends the log's ``NOTIFY``, if it bumped.

    The chain: on PostgreSQL the counter row holds the head (``chain_head``, and the head
    before this append in ``chain_prev``) and the upsert chains the events' digests
    (``digest_0`` ...) onto it under the row's lock, returning their chain values as
    ``chained``; a waiter re-reads the row once the lock is released, where a read of the
    events table would see the statement's older snapshot. On SQLite (one writer) it returns
    the chain hash of the run's last event.
    """
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    postgres = dialect_name == "postgresql"
    counted = bindparam("count", type_=Integer)
    columns: list[Any] = [
        bindparam("run_id", type_=_counters.c.run_id.type),
        counted,
        true() if close else false(),
    ]
    names = ["run_id", "next_sequence", "closed"]
    if postgres:
        columns += [null(), _pg_chain(None, count)[-1]]
        names += ["chain_prev", "chain_head"]
    source = select(*columns)
    if gate is not None:
        source = source.select_from(gate)
    if once:
        ids = [bindparam(f"once_id_{offset}", type_=_events.c.event_id.type) for offset in range(once)]
        logged = select(_events.c.sequence).where(_events.c.event_id.in_(ids))
        source = source.where(~logged.exists())
    else:
        # SQLite parses ``INSERT ... SELECT ... ON CONFLICT`` only with a WHERE in the SELECT.
        source = source.where(true())
    statement = dialect.insert(_counters).from_select(names, source)
    set_: dict[str, Any] = {"next_sequence": _counters.c.next_sequence + counted}
    if close:
        set_["closed"] = True
    returning: list[Any] = [_counters.c.next_sequence]
    if postgres:
        set_["chain_prev"] = _counters.c.chain_head
        set_["chain_head"] = _pg_chain(_counters.c.chain_head, count)[-1]
        chained = type_coerce(_pg_chained(_counters.c.chain_prev, count), postgresql.ARRAY(String))
        returning.append(chained.label("chained"))
    else:
        head = text(
            f"SELECT chain_hash FROM {_events.name} WHERE run_id = :run_id "
            f"AND sequence = {_counters.name}.next_sequence - :count - 1"
        ).bindparams(bindparam("run_id", type_=_events.c.run_id.type), bindparam("count", type_=Integer))
        returning.append(head.columns(column("chain_hash", String)).scalar_subquery())
    if notify:
        returning.append(func.pg_notify(bindparam("channel"), bindparam("run_id")))
    return statement.on_conflict_do_update(
        index_elements=[_counters.c.run_id], set_=set_, where=_counters.c.closed.is_(False)
    ).returning(*returning)


#: Up to this many events, PostgreSQL chains an append's digests in nested expressions (each
#: event's repeats the earlier ones: quadratic, but cheaper for the usual one to three events
#: than the recursive query that chains longer batches in linear time).
_NESTED_CHAIN = 4


def _hex(value: Any) -> Any:
    return func.decode(value, literal_column("'hex'"), type_=LargeBinary)


def _pg_chain(previous: Any | None, count: int) -> list[Any]:
    """PostgreSQL: the chain values (hex) of ``count`` events after ``previous`` (``NULL``: the
    genesis), as expressions; the last one only, when ``count`` is beyond :data:`_NESTED_CHAIN`."""
    if count > _NESTED_CHAIN:
        return [_pg_recursive(previous, count, last_only=True)]
    start = _hex(func.coalesce(null() if previous is None else previous, literal_column(f"'{GENESIS}'")))
    values: list[Any] = []
    head = start
    for offset in range(count):
        head = func.sha256(
            head.op("||")(_hex(bindparam(f"digest_{offset}", type_=String))), type_=LargeBinary
        )
        values.append(func.encode(head, literal_column("'hex'"), type_=String))
    return values


def _pg_chained(previous: Any, count: int) -> Any:
    """PostgreSQL: the array of the chain values (hex) of ``count`` events after ``previous``."""
    if count > _NESTED_CHAIN:
        return _pg_recursive(previous, count, last_only=False)
    return postgresql.array(_pg_chain(previous, count))


def _pg_recursive(previous: Any | None, count: int, *, last_only: bool) -> Any:
    """PostgreSQL: the chain of ``count`` digests after ``previous`` (a column of the counter
    row) by a recursive query: its last value, or all of them as an array."""
    digests = ", ".join(f":digest_{offset}" for offset in range(count))
    start = "NULL" if previous is None else f"{previous.table.name}.{previous.name}"
    query = (
        f"WITH RECURSIVE wop_chain(i, h) AS ("
        f"SELECT 1, sha256(decode(coalesce({start}, '{GENESIS}'), 'hex') "
        f"|| decode((ARRAY[{digests}])[1], 'hex')) "
        f"UNION ALL SELECT i + 1, sha256(h || decode((ARRAY[{digests}])[i + 1], 'hex')) "
        f"FROM wop_chain WHERE i < {count}) "
    )
    query += (
        f"SELECT encode(h, 'hex') FROM wop_chain WHERE i = {count}"
        if last_only
        else "SELECT array_agg(encode(h, 'hex') ORDER BY i) FROM wop_chain"
    )
    params = [bindparam(f"digest_{offset}", type_=String) for offset in range(count)]
    return text(query).bindparams(*params).columns(column("h", String)).scalar_subquery()


@functools.cache
def _gated_append_statement(
    count: int, close: bool, notify: bool, gate: Any, leading: Any, once: int = 0
) -> Any:
    """PostgreSQL: :func:`append_events_if` in one statement.

    ``WITH leading AS (...), gate AS (... RETURNING ...), reserved AS (<upsert> FROM gate),
    logged AS (INSERT INTO wop_events ... FROM reserved RETURNING sequence) SELECT gate.*,
    (SELECT count(*) FROM logged) AS wop_logged FROM gate``.
    """
    gated = gate.cte("gate")
    reserved = _reserve_statement("postgresql", close, notify, once, count, gated).cte("reserved")
    logged = _events_from(reserved, count).returning(_events.c.sequence).cte("logged")
    tally = select(func.count()).select_from(logged).scalar_subquery().label("wop_logged")
    statement = select(*gated.c, tally).select_from(gated)
    if leading is not None:
        statement = statement.add_cte(leading.cte("leading"))
    return statement.add_cte(gated, reserved, logged)


def _events_from(reserved: Any, count: int) -> Any:
    """The insert of ``count`` events numbered from what ``reserved`` (a CTE) returned."""
    first = reserved.c.next_sequence - bindparam("count", type_=Integer)
    rows = [
        select(
            bindparam("run_id", type_=_events.c.run_id.type),
            first + offset,
            *(bindparam(f"{name}_{offset}", type_=_events.c[name].type) for name in _ROW_COLUMNS),
            reserved.c.chained[offset + 1],
        ).select_from(reserved)
        for offset in range(count)
    ]
    source = rows[0] if count == 1 else union_all(*rows)
    return postgresql.insert(_events).from_select(["run_id", "sequence", *_ROW_COLUMNS, "chain_hash"], source)


@functools.cache
def _append_statement(
    count: int,
    close: bool,
    notify: bool,
    once: int,
    leading: Any = None,
    ride: Any = None,
    asynchronously: bool = False,
) -> Any:
    """PostgreSQL: the counter upsert and the insert of ``count`` events in one statement.

    ``WITH reserved AS (<upsert> RETURNING next_sequence) INSERT INTO wop_events SELECT ...
    FROM reserved``: no row reserved (closed log, or an already logged ``once`` event), no
    event inserted; the statement returns the inserted sequences. A ``leading`` write joins
    as a ``WITH`` of its own, which PostgreSQL runs to completion though nothing reads it
    (compiled once per leading statement: those are compiled once themselves). A ``ride``
    (``(build, arg)`` of a :data:`RidingWrite`) joins as a ``WITH`` reading ``reserved``, so it
    writes only if the events are logged. ``asynchronously``: the statement turns
    ``synchronous_commit`` off for its transaction (see :func:`append_events`).
    """
    reserved = _reserve_statement("postgresql", close, notify, once, count).cte("reserved")
    returned: list[Any] = [_events.c.sequence, _events.c.chain_hash]
    if asynchronously:
        returned.append(func.set_config("synchronous_commit", "off", true()))
    statement = _events_from(reserved, count).returning(*returned)
    if leading is not None:
        statement = statement.add_cte(leading.cte("leading"))
    statement = statement.add_cte(reserved)
    if ride is not None:
        build, arg = ride
        statement = statement.add_cte(build(reserved, arg).cte("riding"))
    return statement


@functools.cache
def _sqlite_insert_statement() -> Any:
    """SQLite: the insert of one event, its payload and timestamp bound as the text to store
    (SQLAlchemy's JSON and DateTime write text there; :func:`_rows` writes the same)."""
    texts = ("payload", "timestamp")
    names = ("run_id", "sequence", *_ROW_COLUMNS, "chain_hash")
    return _events.insert().values(
        {name: bindparam(name, type_=String if name in texts else _events.c[name].type) for name in names}
    )


@functools.cache
def _seen_statement() -> Any:
    return select(_events.c.sequence).where(_events.c.event_id == bindparam("event_id"))
