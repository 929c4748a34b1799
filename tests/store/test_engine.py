"""The store's connections: reads through ``reading`` and what a pooled connection keeps after one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Column, Engine, Integer, MetaData, Table, func, insert, select

from wop_langgraph.store.engine import make_engine, reading

_rows = Table("rows", MetaData(), Column("n", Integer, nullable=False))


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """One pooled connection, so every checkout gets the connection the last one returned."""
    eng = make_engine(db_url, pool_size=1, max_overflow=0)
    _rows.metadata.create_all(eng)
    try:
        yield eng
    finally:
        eng.dispose()


def _count(conn: object) -> int:
    return int(conn.execute(select(func.count()).select_from(_rows)).scalar_one())  # type: ignore[attr-defined]


def test_a_read_on_postgresql_opens_no_transaction(engine: Engine) -> None:
    # In a transaction the driver would send BEGIN before the SELECT and ROLLBACK at the end:
    # three round trips for one read. In autocommit the SELECT is the only one.
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite reads begin DEFERRED (a WAL snapshot, no round trip)")
    from psycopg.pq import TransactionStatus

    with reading(engine) as conn:
        assert _count(conn) == 0
        assert conn.connection.driver_connection.info.transaction_status == TransactionStatus.IDLE


def test_reads_on_postgresql_keep_the_connections_prepared_statements(engine: Engine) -> None:
    # psycopg prepares a statement run 5 times on a connection (one round trip saved on each
    # later run), and forgets them all at a ROLLBACK (DEALLOCATE ALL): reads that ended in one
    # never kept a statement prepared.
    if engine.dialect.name != "postgresql":
        pytest.skip("psycopg's prepared statements")
    for _ in range(6):
        with reading(engine) as conn:
            _count(conn)
    with reading(engine) as conn:
        prepared = conn.exec_driver_sql("SELECT count(*) FROM pg_prepared_statements").scalar_one()
    assert prepared >= 1


def test_statements_of_a_read_see_one_snapshot_on_sqlite_and_the_latest_commit_on_postgresql(
    engine: Engine,
) -> None:
    writer = make_engine(engine.url)
    try:
        with reading(engine) as conn:
            assert _count(conn) == 0
            with writer.begin() as other:
                other.execute(insert(_rows), [{"n": 1}])
            seen = _count(conn)
    finally:
        writer.dispose()
    # PostgreSQL at READ COMMITTED gives every statement its own snapshot, in a transaction or not.
    assert seen == (0 if engine.dialect.name == "sqlite" else 1)


def test_a_connection_that_read_comes_back_from_the_pool_transactional(engine: Engine) -> None:
    with reading(engine) as conn:
        _count(conn)
    # The pool's one connection again: a failed write transaction must leave nothing behind.
    with pytest.raises(RuntimeError), engine.begin() as conn:
        conn.execute(insert(_rows), [{"n": 1}])
        raise RuntimeError("abort")
    with engine.connect() as conn:
        assert _count(conn) == 0
    # The saver runs its multi-statement transactions straight on the driver connection.
    raw = engine.raw_connection()
    try:
        assert raw.driver_connection is not None
        assert getattr(raw.driver_connection, "autocommit", False) is False
    finally:
        raw.close()
