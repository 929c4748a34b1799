"""On the store's PostgreSQL connections a transaction's BEGIN goes with its first statement.

What psycopg sends is read from libpq's own trace of the connection: a round trip is a
``Sync`` (a pipeline's end, or an extended-protocol statement's) or a simple ``Query`` (a
``COMMIT`` outside a pipeline); the server answers nothing before one.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, Integer, bindparam, cast, select, text
from sqlalchemy.exc import DBAPIError

from wop_langgraph.store.events import NewEvent, append, read_events
from wop_langgraph.store.pg_connection import connection_class
from wop_langgraph.store.statements import driver_statement

pytestmark = [pytest.mark.postgres, pytest.mark.parametrize("db_url", ["postgres"], indirect=True)]
psycopg = pytest.importorskip("psycopg")

RUN = "acme/run-begins"
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
SELECT_X = driver_statement(select(bindparam("x", type_=Integer).label("x")))


@contextmanager
def traced(driver: Any) -> Iterator[list[str]]:
    """libpq's trace of what ``driver`` sends and receives in the block (``F`` / ``B`` and the
    message, one a line), filled in as the block ends."""
    lines: list[str] = []
    with tempfile.TemporaryFile("w+") as trace:
        driver.pgconn.trace(trace.fileno())
        driver.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
        try:
            yield lines
        finally:
            driver.pgconn.untrace()
            trace.seek(0)
            for line in trace:  # (direction, length, message: the length left out)
                fields = line.rstrip("\n").split("\t", 2)
                if len(fields) < 3:  # a statement's text goes on: part of the line before
                    lines[-1] += " " + line.strip()
                else:
                    lines.append(f"{fields[0]}\t{fields[2]}")


def round_trips(lines: list[str]) -> int:
    return sum(1 for line in lines if line == "F\tSync" or line.startswith("F\tQuery"))


def sent_before_the_first_answer(lines: list[str]) -> list[str]:
    first = next(i for i, line in enumerate(lines) if line.startswith("B"))
    return [line for line in lines[:first] if line.startswith("F\tParse")]


def test_the_engines_connections_are_the_class_that_begins_with_the_statement(engine: Engine) -> None:
    # psycopg still has what the class overrides (an upgrade that drops it fails here, not in
    # a benchmark's round trips).
    cls = connection_class()
    assert cls is not None
    with engine.connect() as conn:
        assert isinstance(conn.connection.driver_connection, cls)


def test_a_transactions_first_statement_goes_out_with_its_begin(engine: Engine) -> None:
    with engine.connect() as conn:
        driver = conn.connection.driver_connection
        with traced(driver) as lines, conn.begin():
            assert SELECT_X.rows(conn, {"x": 7}) == [(7,)]
            assert SELECT_X.rows(conn, {"x": 8}) == [(8,)]  # (in the transaction: alone)
    parsed = sent_before_the_first_answer(lines)
    assert [p.split('"')[3] for p in parsed] == ["BEGIN", "SELECT $1::INTEGER AS x"], lines
    # BEGIN with the first statement, the second statement, COMMIT: psycopg's own class takes 4.
    assert round_trips(lines) == 3, lines


def test_an_append_that_begins_its_transaction_takes_one_round_trip_with_its_begin(engine: Engine) -> None:
    with engine.connect() as conn, traced(conn.connection.driver_connection) as lines, conn.begin():
        append(conn, RUN, [NewEvent(type="log.appended", payload={"i": 0})], now=NOW)
    assert round_trips(lines) == 2, lines  # the BEGIN and the append; the COMMIT
    with engine.connect() as conn:
        assert [e.payload for e in read_events(conn, RUN)] == [{"i": 0}]


def test_a_first_statement_that_fails_rolls_back_and_leaves_the_connection_usable(engine: Engine) -> None:
    quotient = bindparam("one", type_=Integer) / bindparam("zero", type_=Integer)
    dividing = driver_statement(select(cast(quotient, Integer).label("q")))
    with engine.connect() as conn:
        with pytest.raises(DBAPIError) as raised, conn.begin():
            dividing.rows(conn, {"one": 1, "zero": 0})
        assert isinstance(raised.value.orig, psycopg.errors.DivisionByZero)
        assert not conn.in_transaction()
        with conn.begin():  # the same connection, a new transaction
            append(conn, RUN, [NewEvent(type="log.appended", payload={"i": 1})], now=NOW)
            assert SELECT_X.rows(conn, {"x": 3}) == [(3,)]
    with engine.connect() as conn:
        assert [e.payload for e in read_events(conn, RUN)] == [{"i": 1}]


def test_a_result_read_inside_the_pipeline_before_its_sync_stays_in_the_transaction(engine: Engine) -> None:
    # psycopg syncs after its BEGIN so that a result read before the pipeline's sync does not
    # leave the connection looking idle (PR #401). Without that sync a second BEGIN may follow:
    # PostgreSQL warns and the statements stay in one transaction, which rolls back whole.
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE wop_begins (x integer)"))
    raw = engine.raw_connection()
    try:
        driver = raw.driver_connection
        cursor = driver.cursor()
        with driver.pipeline():
            cursor.execute("INSERT INTO wop_begins VALUES (1) RETURNING x")
            assert cursor.fetchall() == [(1,)]  # read before the pipeline's sync
            cursor.execute("INSERT INTO wop_begins VALUES (2)")
        assert driver.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        driver.rollback()
        cursor.execute("SELECT count(*) FROM wop_begins")
        assert cursor.fetchall() == [(0,)]
        driver.rollback()
    finally:
        raw.close()
