"""Short transactions on the driver connection: the saver's lean path to the database.

A :class:`Database` opens the transactions in which the statements of
:mod:`wop_langgraph.store._saver_sql` (compiled in the driver's form) run straight on DBAPI
cursors, through the store's statement engine (:mod:`wop_langgraph.store.statements`),
skipping SQLAlchemy's per-statement work, which costs more than the statements themselves on a
fast database. When a caller needs a SQLAlchemy ``Connection`` in the same transaction (the
write recorder), the transaction is opened through SQLAlchemy instead and the statements run
on that connection's driver connection, so both share one transaction (and a driver error
there is raised as that connection raises it).

* Operations of one statement (``put``, ``put_writes`` without a recorder, ``get_tuple``)
  run in autocommit: the statement is atomic by itself, and on PostgreSQL that makes the
  operation one round trip instead of three. Others run in ``BEGIN`` ... ``COMMIT``.
* SQLite: writes hold the process-wide write lock of the file
  (:func:`~wop_langgraph.store.engine.write_lock`), taken only once the connection is checked
  out (the order every transaction begun through the engine follows: a thread never waits for
  the pool while it holds the lock), and begin ``BEGIN IMMEDIATE``; reads begin
  ``BEGIN`` (a WAL snapshot, never blocked by the writer). Connections to a SQLite file are
  kept by the saver once opened (a local file has no idle timeout to outlive, and the
  engine pool's checkout costs as much as the statement); PostgreSQL connections come from
  the engine's pool every time, with its pings and invalidation.

Driver and pool errors become :class:`~wop_langgraph.protocol.errors.StoreError`, chained
from the driver's exception; a broken connection is dropped and reported as
:class:`ConnectionLost`, which an idempotent operation may retry.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from wop_langgraph.protocol.errors import StoreError
from wop_langgraph.store.engine import is_memory_sqlite, one_statement, write_lock
from wop_langgraph.store.statements import Compiled

__all__ = ["ConnectionLost", "Database", "Tx", "driver_error", "store_error"]


class ConnectionLost(StoreError):
    """The connection broke during the operation (server restart, idle reaping, network).

    The broken connection is gone; the operation may be retried on a fresh one.
    """


_NO_PARAMS: Mapping[str, Any] = {}


class Tx:
    """One open transaction of the saver: its DBAPI connection, and the SQLAlchemy
    ``Connection`` around it when it was opened with one. Statements run through the engine
    (:class:`~wop_langgraph.store.statements.Compiled`)."""

    __slots__ = ("_connection", "_dbapi")

    def __init__(self, dbapi: Any, connection: Connection | None = None) -> None:
        self._dbapi = dbapi
        self._connection = connection

    @classmethod
    def of(cls, conn: Connection) -> Tx:
        """The transaction open on ``conn`` (statements run on its driver connection)."""
        return cls(conn.connection.driver_connection, conn)

    def execute(self, sql: Compiled, params: Mapping[str, Any] = _NO_PARAMS) -> Any:
        """Run ``sql`` and return its cursor (see :meth:`Compiled.fetch` for its rows)."""
        conn = self._connection
        return sql.execute(self._dbapi, sql.bind(params) if conn is None else sql.bound(params, conn), conn)

    def execute_bound(self, sql: Compiled, bound: Sequence[Any] | Mapping[str, Any]) -> Any:
        """Run ``sql`` with parameters already laid out for the driver; its cursor."""
        return sql.execute(self._dbapi, bound, self._connection)

    def rows(self, sql: Compiled, params: Mapping[str, Any] = _NO_PARAMS) -> Sequence[Sequence[Any]]:
        """Run ``sql`` and return all its rows."""
        return sql.run(self._dbapi, params, self._connection)[0]

    def execute_many(self, sql: Compiled, params: Sequence[Mapping[str, Any]]) -> None:
        """Run ``sql`` once per parameter set, in one driver call."""
        sql.execute_many(self._dbapi, params, self._connection)

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


def store_error(what: str, exc: BaseException, *, lost: bool = False) -> StoreError:
    """A :class:`StoreError` (``ConnectionLost`` if ``lost``) for ``exc`` raised during ``what``.

    Raise it ``from driver_error(exc)`` so the driver's exception is the cause.
    """
    cause = driver_error(exc)
    detail = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    error = ConnectionLost if lost else StoreError
    return error(f"{what} failed in the database: {type(cause).__name__}: {detail}")


class Database:
    """One saver's way into its engine: connections, locks and the transaction rules above."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sqlite = engine.dialect.name == "sqlite"
        self._error: type[BaseException] = engine.dialect.loaded_dbapi.Error
        # An in-memory database is one shared connection: every transaction takes the lock.
        self._memory = is_memory_sqlite(engine)
        self._write_lock: AbstractContextManager[Any] = write_lock(engine)
        self._keep_connections = self._sqlite and not self._memory
        self._idle: list[Any] = []
        self._closed = False

    def close(self) -> None:
        """Close the connections this object keeps (the engine's pool is the owner's)."""
        self._closed = True
        while self._idle:
            self._idle.pop().close()

    @contextmanager
    def transaction(
        self, what: str, *, write: bool, atomic: bool = True, with_connection: bool = False
    ) -> Iterator[Tx]:
        """A transaction that commits when the block ends and rolls back on error.

        Args:
            what: the operation, named in error messages.
            write: whether the block writes (on SQLite it then holds the write lock).
            atomic: ``False`` for a block of one statement, which then runs in autocommit.
            with_connection: open the transaction through SQLAlchemy so ``tx.connection``
                works (in autocommit too on PostgreSQL, if not ``atomic``).

        Raises:
            StoreError: the database or the pool failed (chained from the driver error);
                :class:`ConnectionLost` when the connection broke.
        """
        # The connection first, then the write lock: every transaction begun through the
        # engine holds its pooled connection while it queues for the lock, so a thread that
        # held the lock while it waited for the pool could wait for ever (up to the pool
        # timeout) on threads that wait for the lock.
        if with_connection:
            try:
                # The engine's "begin" hook takes the write lock once the connection is ours.
                connect = Engine.connect if atomic else one_statement
                with connect(self.engine) as conn, conn.begin():
                    yield Tx.of(conn)
            except (SQLAlchemyError, self._error) as exc:
                lost = isinstance(exc, DBAPIError) and exc.connection_invalidated
                raise store_error(what, exc, lost=lost) from driver_error(exc)
            return
        fairy, dbapi = self._checkout(what)
        checked_in = False
        try:
            with self._write_lock if write or self._memory else nullcontext():
                healthy = False
                try:
                    yield from self._run(dbapi, write=write, atomic=atomic)
                    healthy = True
                except BaseException as exc:
                    lost = self._abandon(fairy, dbapi, exc)
                    healthy = not lost and not isinstance(exc, self._error)
                    if isinstance(exc, self._error):
                        raise store_error(what, exc, lost=lost) from driver_error(exc)
                    raise
                finally:
                    # Still under the lock: the in-memory database's one shared connection
                    # is reset (rolled back) as it goes back to the pool.
                    checked_in = True
                    self._checkin(fairy, dbapi, healthy)
        finally:
            if not checked_in:  # interrupted while queueing for the lock
                self._checkin(fairy, dbapi, False)

    def _run(self, dbapi: Any, *, write: bool, atomic: bool) -> Iterator[Tx]:
        if self._sqlite:
            # The store's SQLite connections have sqlite3's own transaction handling switched
            # off: without BEGIN every statement commits by itself.
            if atomic:
                dbapi.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            yield Tx(dbapi)
            if atomic:
                dbapi.commit()
        elif atomic:
            yield Tx(dbapi)  # psycopg begins with the first statement
            dbapi.commit()
        else:
            dbapi.autocommit = True
            try:
                yield Tx(dbapi)
            finally:
                dbapi.autocommit = False

    def _checkout(self, what: str) -> tuple[Any, Any]:
        if self._idle:
            try:
                return None, self._idle.pop()
            except IndexError:  # another thread took the last one
                pass
        try:
            fairy = self.engine.raw_connection()
        except (SQLAlchemyError, self._error) as exc:
            raise store_error(what, exc) from driver_error(exc)
        dbapi = fairy.driver_connection
        if self._keep_connections:
            fairy.detach()  # from now on the connection is ours, not the pool's
            return None, dbapi
        return fairy, dbapi

    def _checkin(self, fairy: Any, dbapi: Any, healthy: bool) -> None:
        if fairy is not None:
            fairy.close()
        elif healthy and not self._closed:
            self._idle.append(dbapi)
        else:
            dbapi.close()

    def _abandon(self, fairy: Any, dbapi: Any, exc: BaseException) -> bool:
        # Roll back what the block did; returns whether the connection was lost.
        if isinstance(exc, self._error) and self.engine.dialect.is_disconnect(exc, dbapi, None):  # type: ignore[arg-type]
            if fairy is not None:
                fairy.invalidate(exc)
            return True
        try:
            dbapi.rollback()
        except self._error as rollback_exc:
            if fairy is not None:
                fairy.invalidate(rollback_exc)
            return True
        return False
