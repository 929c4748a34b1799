"""Short transactions on the driver connection: the saver's lean path to the database.

:func:`transaction` borrows a connection from the engine's pool (pre-ping and all) and runs
the compiled statements of :mod:`wop_langgraph.store._saver_sql` on the DBAPI cursor,
skipping SQLAlchemy's per-statement work, which costs more than the statements themselves on
a fast database. When a caller needs a SQLAlchemy ``Connection`` in the same transaction (the
write recorder), the transaction is opened through SQLAlchemy instead and the statements run
on that connection's driver connection, so both share one transaction.

Per backend:

* Operations of one statement (``put``, ``put_writes`` without a recorder, ``get_tuple``)
  run in autocommit: the statement is atomic by itself, and on PostgreSQL that makes the
  operation one round trip instead of three. Others run in ``BEGIN`` ... ``COMMIT``.
* SQLite: writes hold the process-wide write lock of the file
  (:func:`~wop_langgraph.store.engine.write_lock`) and begin ``BEGIN IMMEDIATE``; reads begin
  ``BEGIN`` (a WAL snapshot, never blocked by the writer).

Driver and pool errors become :class:`~wop_langgraph.protocol.errors.StoreError`, chained
from the original; a connection the driver reports as broken is dropped from the pool.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from wop_langgraph.protocol.errors import StoreError
from wop_langgraph.store._saver_sql import Sql
from wop_langgraph.store.engine import is_memory_sqlite, write_lock

__all__ = ["Tx", "driver_error", "store_error", "transaction"]

_NO_PARAMS: Mapping[str, Any] = {}


class Tx:
    """One open transaction: runs compiled statements on the driver connection."""

    __slots__ = ("_connection", "_dbapi")

    def __init__(self, dbapi: Any, connection: Connection | None) -> None:
        self._dbapi = dbapi
        self._connection = connection

    def execute(self, sql: Sql, params: Mapping[str, Any] = _NO_PARAMS) -> Any:
        """Run ``sql`` and return its cursor (fetch from it for rows)."""
        cursor = self._dbapi.cursor()
        cursor.execute(sql.text, sql.bind(params))
        return cursor

    def rows(self, sql: Sql, params: Mapping[str, Any] = _NO_PARAMS) -> list[tuple[Any, ...]]:
        """Run ``sql`` and return all its rows."""
        return [tuple(row) for row in self.execute(sql, params).fetchall()]

    def execute_many(self, sql: Sql, params: Sequence[Mapping[str, Any]]) -> None:
        """Run ``sql`` once per parameter set, in one driver call."""
        if len(params) == 1:
            self.execute(sql, params[0])
            return
        cursor = self._dbapi.cursor()
        cursor.executemany(sql.text, [sql.bind(p) for p in params])

    @property
    def connection(self) -> Connection:
        """The SQLAlchemy connection of this transaction (only when opened with one)."""
        if self._connection is None:
            raise RuntimeError("this transaction was opened without a SQLAlchemy connection")
        return self._connection


def driver_error(exc: BaseException) -> BaseException:
    """The driver's own exception behind ``exc`` (SQLAlchemy wraps them), else ``exc``."""
    orig = exc.orig if isinstance(exc, DBAPIError) else None
    return orig if isinstance(orig, BaseException) else exc


def store_error(what: str, exc: BaseException) -> StoreError:
    """A :class:`StoreError` for ``exc`` raised by the database during ``what``.

    Raise it ``from driver_error(exc)`` so the driver's exception is the cause.
    """
    cause = driver_error(exc)
    detail = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return StoreError(f"{what} failed in the database: {type(cause).__name__}: {detail}")


@contextmanager
def transaction(
    engine: Engine, what: str, *, write: bool, atomic: bool = True, with_connection: bool = False
) -> Iterator[Tx]:
    """A transaction on ``engine`` that commits when the block ends and rolls back on error.

    Args:
        engine: the store's engine.
        what: the operation, named in error messages.
        write: whether the block writes (on SQLite it then holds the file's write lock).
        atomic: whether the block's statements must commit together. A block that runs one
            statement passes ``False`` and runs in autocommit: the statement is atomic by
            itself, and there is no ``BEGIN``/``COMMIT`` to send (two round trips fewer on
            PostgreSQL).
        with_connection: open the transaction through SQLAlchemy so ``tx.connection`` works.

    Raises:
        StoreError: the database or the pool failed (chained from the driver error).
    """
    sqlite = engine.dialect.name == "sqlite"
    lock = write_lock(engine) if write or is_memory_sqlite(engine) else nullcontext()
    dbapi_error: type[BaseException] = engine.dialect.loaded_dbapi.Error
    with lock:
        if with_connection:
            try:
                with engine.begin() as conn:
                    yield Tx(conn.connection.driver_connection, conn)
            except (SQLAlchemyError, dbapi_error) as exc:
                raise store_error(what, exc) from driver_error(exc)
            return
        try:
            fairy = engine.raw_connection()
        except (SQLAlchemyError, dbapi_error) as exc:
            raise store_error(what, exc) from driver_error(exc)
        dbapi: Any = fairy.driver_connection
        try:
            if sqlite:
                # The engine's connections have sqlite3's own transaction handling switched
                # off: without BEGIN every statement commits by itself.
                if atomic:
                    dbapi.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield Tx(dbapi, None)
                if atomic:
                    dbapi.commit()
            elif atomic:
                yield Tx(dbapi, None)  # psycopg begins the transaction with the first statement
                dbapi.commit()
            else:
                dbapi.autocommit = True
                try:
                    yield Tx(dbapi, None)
                finally:
                    dbapi.autocommit = False
        except BaseException as exc:
            _abandon(engine, fairy, dbapi, exc)
            if isinstance(exc, dbapi_error):
                raise store_error(what, exc) from driver_error(exc)
            raise
        finally:
            fairy.close()


def _abandon(engine: Engine, fairy: Any, dbapi: Any, exc: BaseException) -> None:
    # Roll back what the block did; a connection the driver calls broken leaves the pool.
    if isinstance(exc, engine.dialect.loaded_dbapi.Error) and engine.dialect.is_disconnect(exc, dbapi, None):
        fairy.invalidate(exc)
        return
    try:
        dbapi.rollback()
    except engine.dialect.loaded_dbapi.Error as rollback_exc:
        fairy.invalidate(rollback_exc)
