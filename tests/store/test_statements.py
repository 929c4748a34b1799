"""Statements run on the driver connection store, fail and take part in transactions as through SQLAlchemy.

The event log's appends run on the driver (see ``store/statements.py``); SQLAlchemy runs them
itself when a statement listener is installed. Each test writes the same thing both ways and
compares, or checks the driver path against what SQLAlchemy promises its callers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, Integer, String, bindparam, cast, event, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, StatementError
from tests.round_trips import parsed_queries, statements

from wop_langgraph._clock import as_utc
from wop_langgraph.store.engine import reading
from wop_langgraph.store.events import NewEvent, append, read_events
from wop_langgraph.store.interrupts import (
    InterruptRecord,
    insert_interrupt,
    open_work,
    open_work_of,
    open_work_read,
)
from wop_langgraph.store.run_tables import events_table, interrupts_table
from wop_langgraph.store.statements import driver_connection, driver_statement, named_together

RUN = "acme/run-driver"
TWIN = "acme/run-sqlalchemy"

PAYLOADS: list[dict[str, Any]] = [
    {"text": "héllo wörld ☃ 𝄞 日本語", "quote": 'a "b" \\ c', "newline": "x\ny\tz"},
    {"nested": {"list": [1, 2.5, -3, None, True, False, "s", {"deep": [[], {}]}]}, "empty": {}},
    {"big": 2**62, "small": -(2**62), "float": 1.25, "tiny": 5e-324, "zero": 0.0},
    {"null": None, "emoji keys 🔑": {"é": "ü"}},
]
MOMENTS = [
    datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC),
    datetime(2026, 3, 4, 5, 6, 7, 1, tzinfo=UTC),
    datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    # Not UTC: whatever SQLAlchemy stores for it, the driver path must store the same.
    datetime(2026, 7, 1, 0, 30, 0, 500000, tzinfo=timezone(timedelta(hours=5, minutes=30))),
]


def _noop(*_: object) -> None:
    pass


@contextmanager
def through_sqlalchemy(conn: Connection) -> Iterator[None]:
    """Make ``conn`` run every statement through SQLAlchemy: a cursor listener is watching."""
    event.listen(conn, "before_cursor_execute", _noop)
    try:
        assert driver_connection(conn) is None
        yield
    finally:
        event.remove(conn, "before_cursor_execute", _noop)


def _events(tag: str) -> list[NewEvent]:
    return [
        NewEvent(
            type="node.completed",
            payload=payload,
            node_id="review" if i % 2 else None,
            causation_id=f"{tag}-cause-{i}" if i % 2 == 0 else None,
            schema_version=1 + i,
        )
        for i, payload in enumerate(PAYLOADS)
    ]


def _write(conn: Connection, run_id: str, tag: str) -> None:
    for moment in MOMENTS:
        append(conn, run_id, _events(tag)[:1], now=moment)  # one event: a single execute
        assert append(conn, run_id, [_events(tag)[0]], now=moment, once=True)
    append(conn, run_id, _events(tag), now=MOMENTS[0])  # a batch: executemany on SQLite


def _stored(conn: Connection, run_id: str) -> list[tuple[Any, ...]]:
    """The rows as the database holds them, rendered as text by the database itself."""
    e = events_table.c
    query = (
        select(e.sequence, e.type, e.node_id, cast(e.payload, String), cast(e.timestamp, String))
        .where(e.run_id == run_id)
        .order_by(e.sequence)
    )
    return [tuple(row) for row in conn.execute(query)]


def test_rows_written_on_the_driver_read_back_as_rows_written_through_sqlalchemy(engine: Engine) -> None:
    with engine.begin() as conn:
        assert driver_connection(conn) is not None
        _write(conn, RUN, "driver")
    with engine.begin() as conn, through_sqlalchemy(conn):
        _write(conn, TWIN, "sqlalchemy")

    with engine.connect() as conn:
        assert _stored(conn, RUN) == _stored(conn, TWIN)
        driver, twin = read_events(conn, RUN), read_events(conn, TWIN)
    assert len(driver) == len(twin) == 2 * len(MOMENTS) + len(PAYLOADS)
    for mine, theirs in zip(driver, twin, strict=True):
        assert (mine.sequence, mine.type, mine.payload, mine.timestamp) == (
            theirs.sequence,
            theirs.type,
            theirs.payload,
            theirs.timestamp,
        )
        assert (mine.node_id, mine.schema_version) == (theirs.node_id, theirs.schema_version)
        assert (mine.causation_id is None) == (theirs.causation_id is None)
    # And what was written is what is read: payloads exactly, UTC moments to the microsecond.
    assert [e.payload for e in driver[: 2 * len(MOMENTS) : 2]] == [PAYLOADS[0]] * len(MOMENTS)
    assert [e.payload for e in driver[-len(PAYLOADS) :]] == PAYLOADS
    for stored, moment in zip(driver[: 2 * len(MOMENTS) : 2], MOMENTS[:3], strict=False):
        assert as_utc(stored.timestamp) == moment


def test_a_duplicate_event_id_is_sqlalchemys_integrity_error(engine: Engine) -> None:
    logged = NewEvent(type="log.appended", payload={"i": 0})
    with engine.begin() as conn:
        append(conn, RUN, [logged], now=MOMENTS[0])
    again = NewEvent(type="log.appended", payload={"i": 1}, event_id=logged.event_id)
    fresh = NewEvent(type="log.appended", payload={"i": 2})
    for batch in ([again], [fresh, again]):
        errors = []
        for path in ("driver", "sqlalchemy"):
            with pytest.raises(IntegrityError) as raised, engine.begin() as conn:
                if path == "sqlalchemy":
                    event.listen(conn, "before_cursor_execute", _noop)
                else:
                    assert driver_connection(conn) is not None
                append(conn, RUN, batch, now=MOMENTS[0])
            errors.append(type(raised.value.orig))
        assert errors[0] is errors[1], errors
    with engine.connect() as conn:
        assert [e.payload for e in read_events(conn, RUN)] == [{"i": 0}]
    with engine.begin() as conn:  # the failed transactions left nothing behind: 1 is next
        assert [e.sequence for e in append(conn, RUN, [fresh], now=MOMENTS[0]).events] == [1]


def test_a_payload_that_is_not_json_fails_as_through_sqlalchemy(engine: Engine) -> None:
    # The event's chain digest canonicalises the payload before any statement runs: the same
    # TypeError on both paths and both databases, and nothing appended.
    bad = NewEvent(type="log.appended", payload={"x": object()})
    failures = []
    for path in ("driver", "sqlalchemy"):
        with pytest.raises(Exception) as raised, engine.begin() as conn:
            if path == "sqlalchemy":
                event.listen(conn, "before_cursor_execute", _noop)
            append(conn, RUN, [bad], now=MOMENTS[0])
        cause = raised.value.orig if isinstance(raised.value, StatementError) else None
        failures.append((type(raised.value), type(cause)))
    assert failures[0] == failures[1], failures
    assert failures[0][0] is TypeError, failures
    with engine.connect() as conn:
        assert read_events(conn, RUN) == []


def test_an_append_that_begins_the_transaction_leaves_beginning_to_sqlalchemy(engine: Engine) -> None:
    begun: list[bool] = []
    event.listen(engine, "begin", lambda conn: begun.append(True))
    with engine.connect() as conn:
        assert driver_connection(conn) is None  # nothing begun: SQLAlchemy autobegins
        append(conn, RUN, [NewEvent(type="log.appended", payload={"i": 0})], now=MOMENTS[0])
        assert begun == [True] and conn.in_transaction()
        assert driver_connection(conn) is not None  # in the transaction now: the driver path
        append(conn, RUN, [NewEvent(type="log.appended", payload={"i": 1})], now=MOMENTS[0])
        conn.rollback()
        append(conn, RUN, [NewEvent(type="log.appended", payload={"i": 2})], now=MOMENTS[0])
        conn.commit()
    assert begun == [True, True]
    with engine.connect() as conn:
        assert [(e.sequence, e.payload) for e in read_events(conn, RUN)] == [(0, {"i": 2})]


def test_a_read_on_a_connection_not_yet_in_a_transaction_begins_one_and_runs_on_the_driver(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (A snapshot reads through such a connection: through SQLAlchemy its result set-up cost
    # more than the read.) The engine's begin hooks still run, as with SQLAlchemy's autobegin.
    with engine.begin() as conn:
        append(conn, RUN, _events("read"), now=MOMENTS[0])
    begun: list[bool] = []
    event.listen(engine, "begin", lambda conn: begun.append(True))
    through: list[str] = []
    run_sql = Connection.exec_driver_sql

    def counted(self: Connection, statement: str, *args: Any, **kwargs: Any) -> Any:
        through.append(statement)
        return run_sql(self, statement, *args, **kwargs)

    monkeypatch.setattr(Connection, "exec_driver_sql", counted)
    query = (
        select(events_table.c.sequence, events_table.c.type)
        .where(events_table.c.run_id == bindparam("read_run", type_=String))
        .order_by(events_table.c.sequence)
    )
    with reading(engine) as conn:
        assert not conn.in_transaction()
        read = driver_statement(query).named(conn, {"read_run": RUN})
        assert begun == [True] and conn.in_transaction() and through == []
    with engine.connect() as conn:
        expected = conn.execute(query, {"read_run": RUN}).all()
    assert [tuple(row) for row in read] == [tuple(row) for row in expected]
    assert len(read) == len(_events("read"))


def test_sqlalchemy_runs_the_statement_whenever_the_driver_path_would_skip_something(engine: Engine) -> None:
    with engine.begin() as conn:
        assert driver_connection(conn) is not None
        conn.execution_options(schema_translate_map={None: None})
        assert driver_connection(conn) is None
    for name in ("before_execute", "after_execute", "before_cursor_execute", "after_cursor_execute"):
        event.listen(engine, name, _noop)
        try:
            with engine.begin() as conn:
                assert driver_connection(conn) is None, name
        finally:
            event.remove(engine, name, _noop)
    engine.echo = True
    try:
        with engine.begin() as conn:
            assert driver_connection(conn) is None
    finally:
        engine.echo = False
    with engine.begin() as conn, conn.begin_nested() as savepoint:
        assert driver_connection(conn) is not None
        savepoint.rollback()
        assert driver_connection(conn) is not None  # the outer transaction goes on
    with engine.begin() as conn:
        assert driver_connection(conn) is not None


def test_a_lost_connection_is_invalidated_as_through_sqlalchemy(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL: a server can end a session")
    with engine.connect() as conn:
        conn.begin()
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
        assert driver_connection(conn) is not None
        with engine.connect() as killer:
            killer.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            killer.commit()
        with pytest.raises(OperationalError) as raised:
            append(conn, RUN, [NewEvent(type="log.appended", payload={})], now=MOMENTS[0])
        assert raised.value.connection_invalidated
        assert conn.invalidated
        conn.rollback()
    with engine.begin() as conn:  # the pool hands out a working connection again
        (appended,) = append(conn, RUN, [NewEvent("log.appended", {})], now=MOMENTS[0]).events
    assert appended.sequence == 0


def _interrupt(tag: str, moment: datetime, payload: dict[str, Any]) -> InterruptRecord:
    return InterruptRecord(
        interrupt_id=f"acme/int-{tag}",
        run_id=RUN,
        node_id="review",
        key=f"key-{tag}",
        lg_interrupt_id=f"lg-{tag}",
        task_id=f"task-{tag}",
        kind="approval",
        payload=payload,
        created_at=moment,
        deadline=moment + timedelta(minutes=5),
        profiles=["auth-required"],
    )


def test_rows_read_on_the_driver_are_the_rows_sqlalchemy_returns(engine: Engine) -> None:
    # JSON documents and moments come back converted by the columns' own types, as SQLAlchemy
    # converts them: insert_interrupt answers the stored row, open_work reads rows back.
    stored = []
    with engine.begin() as conn:
        assert driver_connection(conn) is not None
        for i, (payload, moment) in enumerate(zip(PAYLOADS, MOMENTS, strict=True)):
            record, inserted = insert_interrupt(conn, _interrupt(str(i), moment, payload))
            assert inserted
            stored.append(record)
        driver_read = open_work(conn, RUN)[1]
    with engine.begin() as conn, through_sqlalchemy(conn):
        sqlalchemy_read = open_work(conn, RUN)[1]
        again, inserted = insert_interrupt(conn, _interrupt("0", MOMENTS[0], {"other": True}))
    assert not inserted and again == stored[0]  # the row as stored, not the one offered
    assert driver_read == sqlalchemy_read == sorted(stored, key=lambda r: r.created_at)
    assert [r.payload for r in stored] == PAYLOADS
    assert [as_utc(r.created_at) for r in stored[:3]] == MOMENTS[:3]
    assert stored[0].profiles == ["auth-required"] and stored[0].deadline is not None


def test_named_rows_and_rowcounts_match_sqlalchemys(engine: Engine) -> None:
    with engine.begin() as conn:
        insert_interrupt(conn, _interrupt("a", MOMENTS[0], PAYLOADS[0]))
    query = driver_statement(
        select(interrupts_table.c.key, interrupts_table.c.payload, interrupts_table.c.created_at).where(
            interrupts_table.c.run_id == bindparam("of_run")
        )
    )
    consume = driver_statement(
        update(interrupts_table)
        .where(interrupts_table.c.run_id == bindparam("of_run"), interrupts_table.c.consumed_at.is_(None))
        .values(consumed_at=bindparam("at", type_=interrupts_table.c.consumed_at.type))
    )
    answers = []
    for path in ("driver", "sqlalchemy"):
        with engine.begin() as conn:
            if path == "sqlalchemy":
                event.listen(conn, "before_cursor_execute", _noop)
            else:
                assert driver_connection(conn) is not None
            (row,) = query.named(conn, {"of_run": RUN})
            counts = [consume.rowcount(conn, {"of_run": RUN, "at": MOMENTS[1]}) for _ in range(2)]
            answers.append(((row.key, row.payload, as_utc(row.created_at)), counts))
            conn.rollback()
    assert answers[0] == answers[1] == ((("key-a", PAYLOADS[0], MOMENTS[0])), [1, 0])


def test_a_parameter_named_like_a_column_of_the_written_table_sets_nothing_else_when_watched(
    engine: Engine,
) -> None:
    # Given parameters named like its table's columns (an append's ``run_id``), a write
    # compiled by ``Connection.execute`` would set those columns too (nested in a ``WITH``, to
    # an anonymous parameter with no value): watched, the write must be the driver path's.
    i = interrupts_table.c
    consume = (
        update(interrupts_table)
        .where(i.run_id == bindparam("of_run"), i.consumed_at.is_(None))
        .values(consumed_at=bindparam("at", type_=i.consumed_at.type), deadline=None)
    )
    writes = [driver_statement(consume.returning(i.key))]
    if engine.dialect.name == "postgresql":  # (SQLite has no write in a WITH)
        leading = consume.returning(i.key).cte("leading")
        writes.append(driver_statement(select(leading.c.key).add_cte(leading)))
    params = {"of_run": RUN, "at": MOMENTS[1], "run_id": TWIN, "key": "key-b", "task_id": "task-b"}
    with engine.begin() as conn:
        insert_interrupt(conn, _interrupt("a", MOMENTS[0], PAYLOADS[0]))
    for write in writes:
        answers = []
        for path in ("driver", "sqlalchemy"):
            with engine.begin() as conn:
                if path == "sqlalchemy":
                    event.listen(conn, "before_cursor_execute", _noop)
                else:
                    assert driver_connection(conn) is not None
                found = [tuple(row) for row in write.rows(conn, params)]
                (row,) = conn.execute(select(i.run_id, i.key, i.task_id, i.deadline, i.consumed_at)).all()
                answers.append((found, tuple(row[:4]), as_utc(row[4])))
                conn.rollback()
        assert answers[0] == answers[1] == ([("key-a",)], (RUN, "key-a", "task-a", None), MOMENTS[1])


def test_a_sqlite_transaction_begins_on_the_driver_unless_a_listener_watches(engine: Engine) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("the SQLite begin hook")
    seen: list[str] = []

    def watch(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    with engine.begin() as conn:
        assert conn.connection.driver_connection.in_transaction  # type: ignore[union-attr]
    event.listen(engine, "before_cursor_execute", watch)
    try:
        with engine.begin() as conn:
            assert conn.connection.driver_connection.in_transaction  # type: ignore[union-attr]
    finally:
        event.remove(engine, "before_cursor_execute", watch)
    assert seen == ["BEGIN IMMEDIATE"]  # a watcher sees every statement, BEGIN too


def test_a_long_statement_with_many_parameters_runs_as_through_sqlalchemy_and_psycopg_never_parses_it(
    engine: Engine,
) -> None:
    # psycopg re-parses ``%(name)s`` placeholders on every execution of a statement over 4 kB or
    # 50 parameters; the driver path sends PostgreSQL's own ``$n`` on a raw cursor instead.
    # A repeated parameter and a literal ``%`` (not a placeholder) must come through as well.
    with engine.begin() as conn:
        for i in range(3):
            insert_interrupt(conn, _interrupt(str(i), MOMENTS[0], PAYLOADS[0]))
    keys = [bindparam(f"wanted_{i}") for i in range(60)]
    statement = driver_statement(
        select(interrupts_table.c.key, cast(bindparam("of_run"), String).label("again"))
        .where(
            interrupts_table.c.run_id == bindparam("of_run"),
            interrupts_table.c.key.in_(keys),  # each its own parameter: 60 of them
            interrupts_table.c.key.like("key-%"),
        )
        .order_by(interrupts_table.c.key)
    )
    params = {"of_run": RUN} | {f"wanted_{i}": f"key-{i}" for i in range(60)}
    answers = []
    with parsed_queries(engine) as parsed:
        for path in ("driver", "sqlalchemy"):
            with engine.begin() as conn:
                if path == "sqlalchemy":
                    event.listen(conn, "before_cursor_execute", _noop)
                answers.append([tuple(row) for row in statement.rows(conn, params)])
                if path == "driver" and engine.dialect.name == "postgresql":
                    assert parsed == []  # the driver path sent its SQL as it is
    assert answers[0] == answers[1] == [(f"key-{i}", RUN) for i in range(3)]


def test_statements_run_together_answer_as_each_alone_in_one_round_trip(engine: Engine) -> None:
    with engine.begin() as conn:
        insert_interrupt(conn, _interrupt("t", MOMENTS[0], PAYLOADS[1]))
    keys = driver_statement(
        select(interrupts_table.c.key, interrupts_table.c.payload).where(
            interrupts_table.c.run_id == bindparam("of_run")
        )
    )
    consume = driver_statement(
        update(interrupts_table)
        .where(interrupts_table.c.run_id == bindparam("of_run"), interrupts_table.c.consumed_at.is_(None))
        .values(consumed_at=bindparam("at", type_=interrupts_table.c.consumed_at.type))
        .returning(interrupts_table.c.key)
    )
    runs = [(keys, {"of_run": RUN}), (consume, {"of_run": RUN, "at": MOMENTS[1]}), open_work_read(RUN)]
    postgres = engine.dialect.name == "postgresql"
    answers = []
    for path in ("alone", "together", "sqlalchemy"):
        with engine.begin() as conn, statements() as seen:
            if path == "sqlalchemy":
                event.listen(conn, "before_cursor_execute", _noop)
            if path == "alone":
                found = [statement.named(conn, params) for statement, params in runs]
            else:
                found = named_together(conn, runs)
            answers.append(
                (
                    [(row.key, row.payload) for row in found[0]],
                    [row.key for row in found[1]],
                    open_work_of(found[2]),
                )
            )
            conn.rollback()
        if path == "together" and postgres:
            assert [piped for *_, piped in seen] == [True, True, True], seen  # one round trip
    assert answers[0] == answers[1] == answers[2]
    assert answers[0][:2] == ([("key-t", PAYLOADS[1])], ["key-t"])


def test_an_error_in_statements_run_together_fails_as_it_fails_alone(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite casts any text to a number")
    number = driver_statement(select(cast(bindparam("text", type_=String), Integer).label("n")))
    for runs in ([(number, {"text": "1"}), (number, {"text": "x"})], [(number, {"text": "x"})] * 2):
        with engine.connect() as conn, conn.begin(), pytest.raises(DBAPIError) as failed:
            named_together(conn, runs)
        assert "invalid input syntax" in str(failed.value.orig)
    with engine.begin() as conn:  # the connection went back to the pool usable
        assert named_together(conn, [(number, {"text": "7"}), (number, {"text": "8"})]) == [[(7,)], [(8,)]]
