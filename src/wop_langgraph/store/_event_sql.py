"""SQL of the event log's append (see :mod:`.events`): the counter upsert that reserves a run's
sequences and chains its events, and the inserts, compiled once per shape.

PostgreSQL runs an append as one statement (``WITH`` the upsert, the insert reading it, the
writes that go with it); SQLite, which has no data-modifying ``WITH``, runs the upsert, then
the insert.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    Integer,
    LargeBinary,
    String,
    and_,
    bindparam,
    cast,
    column,
    false,
    func,
    literal_column,
    null,
    or_,
    select,
    text,
    true,
    type_coerce,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from wop_langgraph.proof.chain import GENESIS
from wop_langgraph.store.run_tables import event_counters_table, events_table

_events = events_table
_counters = event_counters_table

#: The per-event columns an append binds (``<column>_<offset>`` on PostgreSQL).
ROW_COLUMNS = ("event_id", "type", "node_id", "payload", "timestamp", "schema_version", "causation_id")


@functools.cache
def reserve_statement(
    dialect_name: str,
    close: bool,
    notify: bool,
    once: int,
    count: int,
    gate: Any = None,
    guessed: bool = False,
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
    events table would see the statement's older snapshot. On SQLite the caller chains the
    digests in Python onto the head it expects the row to hold (``chain_guess``: see
    :func:`sqlite_chain_condition`), and the statement sets the new head (``chain_head``) only
    where the row holds that guess: the upsert where the guess is the genesis (a new run, or
    one not chained yet), else (``guessed``) an ``UPDATE`` of the row, which must exist.
    """
    if guessed:
        return _sqlite_guessed_reserve(close, once)
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
    else:
        new_head, as_guessed = sqlite_chain_condition(guessed=False)
        columns += list(new_head.values())
        names += list(new_head)
    source = select(*columns)
    if gate is not None:
        source = source.select_from(gate)
    # (SQLite parses ``INSERT ... SELECT ... ON CONFLICT`` only with a WHERE in the SELECT)
    source = source.where(_none_logged(once) if once else true())
    statement = dialect.insert(_counters).from_select(names, source)
    set_: dict[str, Any] = {"next_sequence": _counters.c.next_sequence + counted}
    if close:
        set_["closed"] = True
    returning: list[Any] = [_counters.c.next_sequence]
    open_log: Any = _counters.c.closed.is_(False)
    if postgres:
        set_["chain_prev"] = _counters.c.chain_head
        set_["chain_head"] = _pg_chain(_counters.c.chain_head, count)[-1]
        chained = type_coerce(_pg_chained(_counters.c.chain_prev, count), postgresql.ARRAY(String))
        returning.append(chained.label("chained"))
    else:
        set_ |= new_head
        open_log = and_(open_log, as_guessed)
    if notify:
        returning.append(func.pg_notify(bindparam("channel"), bindparam("run_id")))
    return statement.on_conflict_do_update(
        index_elements=[_counters.c.run_id], set_=set_, where=open_log
    ).returning(*returning)


def _none_logged(once: int) -> Any:
    """None of the events ``once_id_0`` ... ``once_id_<once-1>`` is logged yet.

    One equality a lookup, not ``IN (...)``: PostgreSQL plans a lookup of one value of a
    unique index as an index scan even on a table it has no statistics of yet, where for a
    list it chose a sequential scan while the table was small, and kept that plan (a
    prepared statement's generic plan) as the table grew: a scan of every event per resolve
    until the table was first analysed.
    """
    logged = [
        select(_events.c.sequence)
        .where(_events.c.event_id == bindparam(f"once_id_{offset}", type_=_events.c.event_id.type))
        .exists()
        for offset in range(once)
    ]
    return ~or_(*logged)


def _sqlite_guessed_reserve(close: bool, once: int) -> Any:
    """SQLite: the counter bump of a run whose head the caller guessed (``chain_guess``): an
    ``UPDATE`` of its open row holding that head, returning the bumped counter."""
    head, as_guessed = sqlite_chain_condition(guessed=True)
    values: dict[str, Any] = {"next_sequence": _counters.c.next_sequence + bindparam("count", type_=Integer)}
    if close:
        values["closed"] = True
    where = [
        _counters.c.run_id == bindparam("run_id", type_=_counters.c.run_id.type),
        _counters.c.closed.is_(False),
        as_guessed,
    ]
    if once:
        where.append(_none_logged(once))
    return update(_counters).where(*where).values(values | head).returning(_counters.c.next_sequence)


def sqlite_chain_condition(*, guessed: bool) -> tuple[dict[str, Any], Any]:
    """SQLite: the counter row's new chain head (``chain_head``, bound), and the condition that
    the row holds the head the caller chained from: its guess (``chain_guess``), or none yet
    (the genesis: a new run, or one whose events predate the chain)."""
    head = _counters.c.chain_head
    condition = head == bindparam("chain_guess", type_=String) if guessed else head.is_(None)
    return {"chain_head": bindparam("chain_head", type_=String)}, condition


@functools.cache
def sqlite_head_statement() -> Any:
    """SQLite: a run's counter row as the chain sees it: its head, and whether it is closed."""
    return select(_counters.c.chain_head, _counters.c.closed).where(
        _counters.c.run_id == bindparam("run_id", type_=_counters.c.run_id.type)
    )


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
    """PostgreSQL: the array of the chain values (hex) of ``count`` events after ``previous``,
    returned by the counter upsert: its last value is the row's new ``chain_head``, returned
    as it is rather than hashed again."""
    if count > _NESTED_CHAIN:
        return _pg_recursive(previous, count, last_only=False)
    return postgresql.array([*_pg_chain(previous, count - 1), _counters.c.chain_head])


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
def gated_append_statement(
    count: int, close: bool, notify: bool, gate: Any, leading: Any, once: int = 0
) -> Any:
    """PostgreSQL: a gated append (``append(..., gate=)``) in one statement.

    ``WITH leading AS (...), gate AS (... RETURNING ...), reserved AS (<upsert> FROM gate),
    logged AS (INSERT INTO wop_events ... FROM reserved RETURNING sequence) SELECT gate.*,
    (SELECT count(*) FROM logged) AS wop_logged, <the reserved counter> AS wop_next,
    <the events' chain values> AS wop_chained FROM gate``.
    """
    gated = gate.cte("gate")
    reserved = reserve_statement("postgresql", close, notify, once, count, gated).cte("reserved")
    logged = _events_from(reserved, count).returning(_events.c.sequence).cte("logged")
    tally = select(func.count()).select_from(logged).scalar_subquery().label("wop_logged")
    counter = select(reserved.c.next_sequence).scalar_subquery().label("wop_next")
    chained = select(reserved.c.chained).scalar_subquery().label("wop_chained")
    statement = select(*gated.c, tally, counter, chained).select_from(gated)
    if leading is not None:
        statement = statement.add_cte(leading.cte("leading"))
    return statement.add_cte(gated, reserved, logged)


def _pg_param(name: str, offset: int) -> Any:
    """PostgreSQL: the parameter of one event's column. The payload is bound as the JSON text
    the append wrote for its digest, cast by the server: not serialised a second time."""
    if name == "payload":
        return cast(bindparam(f"payload_{offset}", type_=String), postgresql.JSONB)
    return bindparam(f"{name}_{offset}", type_=_events.c[name].type)


def _events_from(reserved: Any, count: int) -> Any:
    """The insert of ``count`` events numbered from what ``reserved`` (a CTE) returned."""
    first = reserved.c.next_sequence - bindparam("count", type_=Integer)
    rows = [
        select(
            bindparam("run_id", type_=_events.c.run_id.type),
            first + offset,
            *(_pg_param(name, offset) for name in ROW_COLUMNS),
            reserved.c.chained[offset + 1],
        ).select_from(reserved)
        for offset in range(count)
    ]
    source = rows[0] if count == 1 else union_all(*rows)
    return postgresql.insert(_events).from_select(["run_id", "sequence", *ROW_COLUMNS, "chain_hash"], source)


@functools.cache
def append_statement(
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
    ``synchronous_commit`` off for its transaction (see ``append``).
    """
    reserved = reserve_statement("postgresql", close, notify, once, count).cte("reserved")
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
def sqlite_insert_statement() -> Any:
    """SQLite: the insert of one event, its payload and timestamp bound as the text to store
    (SQLAlchemy's JSON and DateTime write text there; the append writes the same)."""
    texts = ("payload", "timestamp")
    names = ("run_id", "sequence", *ROW_COLUMNS, "chain_hash")
    return _events.insert().values(
        {name: bindparam(name, type_=String if name in texts else _events.c[name].type) for name in names}
    )


@functools.cache
def seen_statement() -> Any:
    return select(_events.c.sequence).where(_events.c.event_id == bindparam("event_id"))
