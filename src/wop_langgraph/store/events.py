"""The OpenWOP event log: append events to a run with gap-free sequences, read them back in order.

Sequences come from a per-run counter row bumped with an atomic upsert in the caller's
transaction: concurrent appenders serialise on that row (PostgreSQL row lock, SQLite's single
writer), and a rolled-back transaction gives its numbers back, so a run's log is numbered
0, 1, 2, ... without gaps or duplicates. :func:`append` takes an open ``Connection`` so an
append can share the transaction of whatever caused it; what else goes with it (a write
first, a gate deciding whether it logs, events held for the run, a write riding in its
statement) is said by its arguments.

What makes the hot path fast stays inside: on PostgreSQL an append is one statement (the
counter bump, the inserts, the writes that go with it, the ``NOTIFY``) in one round trip, run
straight on the driver connection (see :mod:`.statements`; SQLAlchemy's per-statement work cost
more than the statement); SQLite, with one writer, runs the bump, then the insert.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, func, select

from wop_langgraph._clock import iso_z
from wop_langgraph.proof.chain import appended_digest, chain_raw, json_string, wire_time
from wop_langgraph.store._event_sql import (
    append_statement,
    gated_append_statement,
    reserve_statement,
    seen_statement,
    sqlite_head_statement,
    sqlite_insert_statement,
)
from wop_langgraph.store.appended import APPENDED_KEY, EVENTS_CHANNEL
from wop_langgraph.store.run_tables import events_table
from wop_langgraph.store.statements import Reads, driver_connection
from wop_langgraph.store.statements import driver_statement as _driver

__all__ = [
    "Appended",
    "NewEvent",
    "NextAppend",
    "RideNotTaken",
    "RidingWrite",
    "RunLogClosed",
    "StoredEvent",
    "Write",
    "append",
    "last_sequence",
    "read_events",
]

_events = events_table

#: A write that goes with an append (``leading``, ``gate``): a data-modifying statement compiled
#: once (built with ``bindparam`` names no append uses) and its parameters.
Write = tuple[Any, Mapping[str, Any]]


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
    #: The event's digest (hex), which its chain value chains: set by the append that logged
    #: it (a read gives ``None``: the chain value is what the log keeps).
    digest: str | None = None

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


@dataclass(frozen=True, slots=True)
class Appended:
    """What one :func:`append` did: the caller's events it logged, in order, each with its
    sequence, chain value and digest (empty when it logged none: a gate that found nothing,
    or events logged once already), and the ``gate``'s row (``None`` without a gate, or when
    it returned none)."""

    events: list[StoredEvent]
    row: Any = None

    def __bool__(self) -> bool:
        """Whether the append logged any of the caller's events."""
        return bool(self.events)


@dataclass(slots=True)
class NextAppend:
    """What goes with the next append to one run's log in one transaction: events to log
    before its own (``first``: each with its time, each unless logged already), and on
    PostgreSQL a write to ride in its statement (``ride``, run only if the append logs).

    The caller that makes it holds it and hands it to the transaction's appends
    (``append(..., ahead=)``); the first append to ``run_id`` takes what it carries.
    Explicit state, because what is carried is known to one layer and the append that takes
    it is made by another: a drive's held node starts (known to the drive) go first in the
    append of whatever its transaction records (a node's end, an interrupt, the run's end);
    the saver's task writes ride in the one append its recorder makes. At the end of the
    caller's work, :meth:`append_left` logs what no append took.
    """

    run_id: str
    first: list[tuple[NewEvent, datetime]] = field(default_factory=list)
    ride: RidingWrite | None = None
    #: Whether an append took ``ride`` into its statement.
    rode: bool = False

    def append_left(self, conn: Connection) -> None:
        """Append what is still to go first, on its own, in ``conn``'s transaction (dropped if
        the log is closed)."""
        left, self.first = self.first, []
        if left:
            with suppress(RunLogClosed):
                _append_timed(conn, self.run_id, left, close=False, once=len(left))


def append(
    conn: Connection,
    run_id: str,
    events: Sequence[NewEvent],
    *,
    now: datetime,
    close: bool = False,
    once: bool = False,
    gate: Write | None = None,
    leading: Write | None = None,
    ahead: NextAppend | None = None,
    then: Reads | None = None,
    asynchronously: bool = False,
) -> Appended:
    """Append ``events`` to the log of ``run_id`` in order, timestamped ``now``, inside the
    caller's transaction.

    Nothing is visible to readers until the caller commits; if it rolls back, the sequences
    are reused by the next append.

    Args:
        close: the events end the run (its terminal event): later appends are refused.
        once: each event only if the log does not hold its ``event_id`` yet (a replayed
            execution logs nothing twice): those it holds are not in the result.
        gate: a write returning at most one row (named columns): the events are appended only
            if it returns its row, which the result carries. On PostgreSQL the writes and the
            append are one statement (one round trip, which a caller may run in autocommit).
            The gate must also fail where the log is closed (a run that ended), so that a row
            it returns always has its events appended; where it does not,
            :class:`RunLogClosed` is raised all the same.
        leading: a write that goes first (the fact the events tell of). On PostgreSQL it runs
            in the append's statement, as a data-modifying ``WITH``: one statement where two
            were, which a caller may then run in autocommit (see ``one_statement``);
            elsewhere it is executed just before, in the same transaction. It runs even when
            the append raises :class:`RunLogClosed` (the caller's transaction rolls back).
        ahead: what goes with the transaction's next append to the run (see
            :class:`NextAppend`), if this is it: its ``first`` events are logged ahead of
            ``events``, in the same statement, and (PostgreSQL, without a gate) its ``ride``
            joins the statement: if the append then logs nothing, :class:`RideNotTaken` is
            raised, nothing stored. With a gate, the ``first`` go in its statement on
            PostgreSQL, all of them only if none is logged yet: if one is (a replay),
            :class:`RunLogClosed` is raised and they stay in ``ahead`` (roll back, or append
            the usual way); elsewhere they are appended before the gate runs.
        then: reads run right after, whatever the append did (on PostgreSQL with a gate, in
            the same round trip), their rows left in ``then.rows``.
        asynchronously: PostgreSQL, for a statement in autocommit: its commit returns without
            waiting for the WAL flush (``synchronous_commit`` off for it alone). The next
            synchronous commit on the server makes it durable with its own: for a caller that
            tells no one of what it wrote before such a commit.

    Raises:
        RunLogClosed: the log was closed by an earlier terminal event (for example a
            cancellation that committed while a worker was still driving the run).
    """
    if ahead is not None and ahead.run_id != run_id:
        ahead = None  # another run's log: what goes first waits for an append to its own
    if gate is not None:
        if once:
            raise ValueError("a gated append logs its events with its gate's row: not once")
        return _append_gated(conn, run_id, events, now, gate, close, leading, ahead, then)
    if not events:
        _run_leading(conn, leading)
        if then is not None:
            then.run(conn)
        return Appended([])
    timed = [(event, now) for event in events]
    first: list[tuple[NewEvent, datetime]] = []
    ride = None
    if ahead is not None:
        first, ahead.first = ahead.first, []
        if ahead.ride is not None and conn.dialect.name == "postgresql":
            ride, ahead.ride, ahead.rode = ahead.ride, None, True
    # What goes first is once-only, and leads the batch, as the once-only must.
    stored = _append_timed(
        conn,
        run_id,
        first + timed,
        close=close,
        once=len(first) + (len(timed) if once else 0),
        leading=leading,
        ride=ride,
        asynchronously=asynchronously,
    )
    if first:  # the caller's events only
        ids = {event.event_id for event, _ in timed}
        stored = [event for event in stored if event.event_id in ids]
    if then is not None:
        then.run(conn)
    return Appended(stored)


def _append_gated(
    conn: Connection,
    run_id: str,
    events: Sequence[NewEvent],
    now: datetime,
    gate: Write,
    close: bool,
    leading: Write | None,
    ahead: NextAppend | None,
    then: Reads | None,
) -> Appended:
    """:func:`append` with a ``gate``."""
    postgres = conn.dialect.name == "postgresql"
    first: list[tuple[NewEvent, datetime]] = []
    if ahead is not None and ahead.first:
        first, ahead.first = ahead.first, []
        if not postgres:
            with suppress(RunLogClosed):  # then the gate finds the log closed too
                _append_timed(conn, run_id, first, close=False, once=len(first))
            first = []
    if not postgres:
        _run_leading(conn, leading)
        row = next(iter(_driver(gate[0]).named(conn, gate[1])), None)
        stored = _append_timed(conn, run_id, [(e, now) for e in events], close=close, once=0) if row else []
        if then is not None:
            then.run(conn)
        return Appended(stored, row)
    once = len(first)
    timed = first + [(event, now) for event in events]
    announced: set[str] = conn.info.setdefault(APPENDED_KEY, set())
    rows, _, hexes = _rows(run_id, timed, True)
    params: dict[str, Any] = {"run_id": run_id, "count": len(timed), "channel": EVENTS_CHANNEL, **gate[1]}
    params |= _row_params(rows, leading)
    for offset, (event, _) in enumerate(first):
        params[f"once_id_{offset}"] = event.event_id
    statement = gated_append_statement(
        len(timed), close, run_id not in announced, gate[0], None if leading is None else leading[0], once
    )
    if then is None:
        found = _driver(statement).named(conn, params)
    else:
        found = then.run(conn, (_driver(statement), params))
    if not found or found[0].wop_logged != len(timed):
        if once and ahead is not None:  # appended none of them: they wait for the next append
            ahead.first[:0] = first
        if not found:
            return Appended([], None)
        raise RunLogClosed(f"run {run_id!r} has ended, or an event to log first is logged already")
    announced.add(run_id)
    row = found[0]
    stored = _stored(run_id, timed, int(row.wop_next) - len(timed), row.wop_chained, hexes)
    return Appended(stored[once:], row)


def _append_timed(
    conn: Connection,
    run_id: str,
    timed: list[tuple[NewEvent, datetime]],
    *,
    close: bool,
    once: int,
    leading: Write | None = None,
    ride: RidingWrite | None = None,
    asynchronously: bool = False,
) -> list[StoredEvent]:
    """Append ``timed``, of which the first ``once`` only if their ids are not logged yet,
    after ``leading`` (which runs once, whatever the append finds), with ``ride``.

    The common case (none logged) is one statement on PostgreSQL. Raises
    :class:`RunLogClosed` if the log is closed and there was something to append.
    """
    stored = _append(
        conn, run_id, timed, close=close, once=once, leading=leading, ride=ride, asynchronously=asynchronously
    )
    if stored is not None:
        return stored
    # Nothing reserved: some once-only event is logged already (a replay), or the log is closed.
    seen = _driver(seen_statement())
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
    leading: Write | None = None,
    ride: RidingWrite | None = None,
    asynchronously: bool = False,
) -> list[StoredEvent] | None:
    """Run ``leading``, reserve sequences for the events and insert them (with ``ride``, on
    PostgreSQL); ``None`` when nothing was reserved.

    The counter bump only applies to an open log, so a terminal event and any append racing it
    are ordered by the counter row's lock: whichever comes second sees the log closed. With
    ``once``, it also applies only while none of the first ``once`` events' ids is logged. On
    PostgreSQL the bump, the insert and the log's one ``NOTIFY`` per run and transaction are a
    single statement; SQLite (no data-modifying CTEs) runs the bump, then the insert.
    """
    # This transaction's commit wakes the run's readers (see :mod:`.appended`): marked once per
    # run. (The commit hook sees only the connection: the mark lives in its ``info``.)
    announced: set[str] = conn.info.setdefault(APPENDED_KEY, set())
    postgres = conn.dialect.name == "postgresql"
    rows, digests, hexes = _rows(run_id, timed, postgres)
    params: dict[str, Any] = {"run_id": run_id, "count": len(rows), "channel": EVENTS_CHANNEL}
    for offset, (event, _) in enumerate(timed[:once]):
        params[f"once_id_{offset}"] = event.event_id
    if postgres:
        params |= _row_params(rows, leading)
        if ride is not None:
            params |= ride[2]
        statement = append_statement(
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
        # (both statements run on the driver connection, if one, looked up once)
        driver = driver_connection(conn)
        reserved = _reserve_sqlite(conn, driver, run_id, digests, params, close, once)
        if reserved is None:
            return None
        first, chained = reserved
        for offset, row in enumerate(rows):
            row["sequence"] = first + offset
            row["chain_hash"] = chained[offset]
        _driver(sqlite_insert_statement()).execute_many(conn, rows, driver)
    announced.add(run_id)
    return _stored(run_id, timed, first, chained, hexes)


#: SQLite: the chain head each run's latest append in this process left (hex), by engine (its
#: ``id``) and run id: the next append's guess at its row's head, which the database checks (see
#: :func:`_reserve_sqlite`). A stale guess (a rollback, another process, a deleted run, an
#: engine's ``id`` taken again) costs a read, never a wrong chain.
_heads: dict[int, dict[str, str]] = {}
#: Beyond this many runs (or engines) the guesses start again from none.
_HEADS_KEPT = 4096


def _reserve_sqlite(
    conn: Connection,
    driver: Any,
    run_id: str,
    digests: list[bytes],
    params: dict[str, Any],
    close: bool,
    once: int,
) -> tuple[int, list[str]] | None:
    """SQLite: reserve the sequences of ``digests``' events and chain them, in one statement;
    the first sequence and the chain values, or ``None`` when nothing was reserved (the log is
    closed, or a once-only event is logged).

    The digests are chained onto the head the run's counter row is guessed to hold (the last
    one chained here, else none: a new run), and the row takes the bump and the new head only
    if it holds that guess: the statement touches that row only, where it also read the run's
    last event for the head before schema version 9. A wrong guess costs a read of the row and
    a second statement (SQLite has one writer, which this transaction is from its first bump
    on: what the read finds holds until it ends).
    """
    heads = _heads.get(id(conn.engine))
    if heads is None:
        if len(_heads) >= _HEADS_KEPT:
            _heads.clear()
        heads = _heads[id(conn.engine)] = {}
    guess = heads.get(run_id)
    for _ in range(2):
        chained = chain_raw(guess, digests)
        params["chain_guess"] = guess
        params["chain_head"] = chained[-1]
        statement = reserve_statement("sqlite", close, False, once, len(digests), guessed=guess is not None)
        reserve = _driver(statement)
        reserved = reserve.rows(conn, params) if driver is None else reserve.rows_on(conn, driver, params)
        if reserved:
            if len(heads) >= _HEADS_KEPT:
                heads.clear()
            heads[run_id] = chained[-1]
            return int(reserved[0][0]) - len(digests), chained
        found = _driver(sqlite_head_statement()).rows(conn, {"run_id": run_id})
        head = found[0][0] if found else None
        if (found and (found[0][1] or head == guess)) or (not found and guess is None):
            return None  # the guess was right: the log is closed, or a once-only event logged
        guess = head
    raise AssertionError(f"run {run_id!r}: the counter row changed in a SQLite write transaction")


def _stored(
    run_id: str,
    timed: Sequence[tuple[NewEvent, datetime]],
    first: int,
    chained: Sequence[str],
    digests: Sequence[str],
) -> list[StoredEvent]:
    """The events of ``timed`` as logged from sequence ``first``, with their chain values and
    digests (hex)."""
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
            digest=digests[offset],
        )
        for offset, (event, at) in enumerate(timed)
    ]


def _run_leading(conn: Connection, leading: Write | None) -> None:
    """Run ``leading`` on its own, in ``conn``'s transaction (where it cannot join a statement)."""
    if leading is not None:
        _driver(leading[0]).rowcount(conn, leading[1])


def _row_params(rows: Sequence[dict[str, Any]], leading: Write | None) -> dict[str, Any]:
    """PostgreSQL: the parameters of one statement inserting ``rows`` (``<column>_<offset>``),
    and those of the ``leading`` write it carries."""
    params = {f"{name}_{offset}": value for offset, row in enumerate(rows) for name, value in row.items()}
    return params if leading is None else params | dict(leading[1])


def _rows(
    run_id: str, timed: Sequence[tuple[NewEvent, datetime]], postgres: bool
) -> tuple[list[dict[str, Any]], list[bytes], list[str]]:
    """The per-event columns of an insert, and the events' digests (raw, which the chain
    chains, and hex).

    The payload is bound as JSON text written once: its canonical text, which the digest has
    just hashed, where it is plain JSON (else ``json.dumps``'s, as the JSON type writes: see
    :func:`~wop_langgraph.proof.chain.appended_digest`).
    PostgreSQL: the columns of :data:`._event_sql.ROW_COLUMNS` and the hex ``digest``
    (``run_id``, ``sequence`` and the chain are the batch's statement's). SQLite: with
    ``run_id`` too, and the timestamp as the text stored (see
    :func:`._event_sql.sqlite_insert_statement`), formatted once for the digest and the column
    (for each distinct moment of the batch).
    """
    rows: list[dict[str, Any]] = []
    digests: list[bytes] = []
    hexes: list[str] = []
    times: dict[datetime, tuple[str, str]] = {}
    run_json = json_string(run_id)
    for event, at in timed:
        if (formatted := times.get(at)) is None:
            formatted = times[at] = _formatted(at)
        text, digest = appended_digest(
            run_json,
            event.event_id,
            event.type,
            event.payload,
            formatted[0],
            event.node_id,
            event.causation_id,
            event.schema_version,
        )
        digests.append(digest)
        hexes.append(hexed := digest.hex())
        row: dict[str, Any] = {
            "event_id": event.event_id,
            "type": event.type,
            "node_id": event.node_id,
            "schema_version": event.schema_version,
            "causation_id": event.causation_id,
            "payload": text,
        }
        if postgres:
            row["timestamp"] = at
            row["digest"] = hexed
        else:
            row["run_id"] = run_id
            row["timestamp"] = formatted[1]
        rows.append(row)
    return rows, digests, hexes


def _formatted(moment: datetime) -> tuple[str, str]:
    """``moment``'s wire time, and its text in a SQLite column (SQLAlchemy's ``DateTime``
    there: the wall time as given, with microseconds), from one ``isoformat``."""
    stamp = moment.isoformat(" ", "microseconds")
    wire = f"{stamp[:10]}T{stamp[11:23]}Z" if moment.tzinfo is UTC else wire_time(moment)
    return wire, stamp[:26]
