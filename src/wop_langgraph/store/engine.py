"""Database engines tuned for the store: SQLite embedded by default, PostgreSQL for scale.

SQLite gets WAL (readers never wait for the writer), a busy timeout (a second writer waits
instead of failing with "database is locked"), foreign keys, and ``BEGIN IMMEDIATE`` for
write transactions so that two writers never both read and then collide on upgrade to a
write lock; :func:`write_lock` lets the threads of one process queue for that lock without
SQLite's sleeping busy handler, and every write transaction begun through the engine takes it
(held from ``BEGIN IMMEDIATE`` until the connection goes back to the pool). The lock is taken
only by a thread that already has its connection, never the other way round: writers queue for
the lock holding pooled connections, so a lock holder that waited for the pool would wait on
them. A SQLite file keeps SQLAlchemy's default pool (``QueuePool``, 5 connections + 10
overflow, 30 s timeout); the sizes below are PostgreSQL's. PostgreSQL goes
through psycopg 3 with a pooled connection, pinged before use (every time, or once it sat
idle: ``ping_after_idle``), whose transactions begin with their first statement
(:mod:`~wop_langgraph.store.pg_connection`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError, IntegrityError
from sqlalchemy.pool import QueuePool, StaticPool

from wop_langgraph.store import pg_connection

__all__ = [
    "READ_ONLY",
    "SQLITE_BUSY_TIMEOUT_MS",
    "URL",
    "Connection",
    "Engine",
    "IntegrityError",
    "configure_sqlite",
    "is_memory_sqlite",
    "is_sqlite",
    "make_engine",
    "normalize_url",
    "one_statement",
    "parse_url",
    "pool_size",
    "reading",
    "watches_statements",
    "write_lock",
]

#: How long a SQLite writer waits for the lock before giving up (milliseconds).
SQLITE_BUSY_TIMEOUT_MS = 60_000

# Pool connection-record key: when the connection last went back to the pool.
_IDLE_SINCE = "wop_idle_since"

#: Execution option: a transaction that only reads; on SQLite it begins DEFERRED, not IMMEDIATE.
READ_ONLY = "wop_read_only"


def parse_url(url: str) -> URL | None:
    """``url`` parsed as a database URL, or ``None`` when it is not one."""
    try:
        return make_url(url)
    except ArgumentError:
        return None


def normalize_url(url: str | URL) -> URL:
    """Return ``url`` with the driver this project uses spelled out.

    ``postgresql://`` and ``postgres://`` become ``postgresql+psycopg://`` (psycopg 3); SQLite
    URLs are kept as they are.
    """
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def is_sqlite(engine: Engine) -> bool:
    """Whether ``engine`` talks to SQLite."""
    return engine.dialect.name == "sqlite"


def make_engine(url: str | URL, *, ping_after_idle: float | None = None, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` with the store's connection settings applied.

    Args:
        url: ``sqlite:///path.db`` (or ``sqlite://`` for a private in-memory database) or
            ``postgresql://...`` / ``postgresql+psycopg://...``.
        ping_after_idle: PostgreSQL only. ``None`` (the default) pings every connection as
            it leaves the pool (``pool_pre_ping``); a number of seconds pings only the
            connections that sat idle in the pool at least that long, which is where dead
            connections come from (server idle timeouts, NAT and firewall resets), and saves a
            round trip on every busy checkout.
        **kwargs: passed through to :func:`sqlalchemy.create_engine`, overriding the defaults.
    """
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, **kwargs)
    options: dict[str, Any] = {
        "pool_pre_ping": ping_after_idle is None,
        "pool_size": 10,
        "max_overflow": 20,
    }
    options.update(kwargs)
    engine = create_engine(parsed, **options)
    if ping_after_idle is not None:
        _ping_when_idle(engine, ping_after_idle)
    _connect_beginning_with_statement(engine)
    return engine


def _connect_beginning_with_statement(engine: Engine) -> None:
    """psycopg connections of :func:`~wop_langgraph.store.pg_connection.connection_class`: a
    transaction's ``BEGIN`` goes with its first statement (when psycopg has what it needs)."""
    connection_class = pg_connection.connection_class()
    if connection_class is None or engine.dialect.driver != "psycopg":
        return

    def connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        return connection_class.connect(*cargs, **cparams)

    event.listen(engine, "do_connect", connect)


def _ping_when_idle(engine: Engine, seconds: float) -> None:
    def on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    def on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get(_IDLE_SINCE)
        if idle_since is None or time.monotonic() - idle_since < seconds:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:
            # The pool drops this connection and checks out (or opens) another one.
            raise DisconnectionError(f"connection idle for {seconds}s or more failed its ping") from exc

    event.listen(engine, "checkin", on_checkin)
    event.listen(engine, "checkout", on_checkout)


def _sqlite_engine(url: URL, **kwargs: Any) -> Engine:
    options: dict[str, Any] = {
        "connect_args": {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
    }
    if url.database in (None, "", ":memory:"):
        # One shared connection: every new connection to ":memory:" would be another database.
        options["poolclass"] = StaticPool
    else:
        # As for PostgreSQL: a file's connection is cheap to keep, and opening one (the
        # pragmas, the WAL check) costs ~0.5 ms CPU each time a burst overflows the pool.
        options |= {"pool_size": 10, "max_overflow": 20}
    options.update(kwargs)
    engine = create_engine(url, **options)
    configure_sqlite(engine)
    return engine


def configure_sqlite(engine: Engine) -> None:
    """Install the pragmas and the transaction-begin rule on a SQLite engine (idempotent)."""
    if event.contains(engine, "connect", _on_sqlite_connect):
        return
    event.listen(engine, "connect", _on_sqlite_connect)
    event.listen(engine, "begin", _on_sqlite_begin)
    event.listen(engine, "checkin", _release_write_lock)
    event.listen(engine, "invalidate", _release_write_lock)


def _on_sqlite_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    # Take transaction control away from the sqlite3 module so that "begin" below decides.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        _enable_wal(cursor)
        # In WAL mode NORMAL keeps the database consistent after a crash; only the last
        # transactions before a power loss may roll back.
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def _enable_wal(cursor: sqlite3.Cursor) -> None:
    # Turning a new file to WAL needs an exclusive lock and SQLite does not call the busy
    # handler for it: connections opening a fresh file together get "database is locked"
    # at once. Retry for as long as the busy timeout would have waited.
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _on_sqlite_begin(conn: Connection) -> None:
    read_only = bool(conn.get_execution_options().get(READ_ONLY))
    # Queue on the process's lock rather than in SQLite's busy handler, which sleeps 1-100 ms
    # per try: 32 resolves and 4 workers colliding lost hundreds of ms to it. Past the busy
    # timeout, go on without it and let SQLite decide as before.
    needs_lock = (not read_only or is_memory_sqlite(conn.engine)) and _HELD_LOCK not in conn.info
    if needs_lock:
        lock = _lock_of(conn.engine)
        if lock.acquire(timeout=SQLITE_BUSY_TIMEOUT_MS / 1000):
            conn.info[_HELD_LOCK] = lock
    begin = "BEGIN" if read_only else "BEGIN IMMEDIATE"
    if not watches_statements(conn):
        # Straight on the driver: every transaction begins here, and SQLAlchemy's statement
        # machinery costs more than the BEGIN. Its errors are wrapped as through SQLAlchemy.
        try:
            conn.connection.driver_connection.execute(begin)  # type: ignore[union-attr]
        except sqlite3.Error as exc:
            conn._handle_dbapi_exception(exc, begin, (), None, None)
        return
    conn.exec_driver_sql(begin)  # a listener watches statements: let it see this one


def watches_statements(conn: Connection) -> bool:
    """Whether something watches the statements of ``conn``: a statement or cursor listener
    on it or its engine, the dialect's ``do_execute``/``do_executemany`` hooks, or SQL logging
    (``echo``). Then statements must run through SQLAlchemy, which shows them all."""
    # Listeners on the connection itself join the engine's (slower to ask; rarely there).
    events = conn.dispatch if conn._has_events else conn.engine.dispatch
    dialect_events = conn.dialect.dispatch
    return bool(
        events.before_cursor_execute
        or events.after_cursor_execute
        or events.before_execute
        or events.after_execute
        or conn._echo
        or dialect_events.do_execute
        or dialect_events.do_executemany
    )


def _release_write_lock(_dbapi_connection: Any, record: Any, *_: Any) -> None:
    # The commit (or rollback) is done once the connection is back in the pool.
    lock = record.info.pop(_HELD_LOCK, None)
    if lock is not None:
        lock.release()


def reading(engine: Engine) -> Connection:
    """A connection for reads only (use it as a context manager); never write through it.

    On PostgreSQL it runs in autocommit: each ``SELECT`` is one round trip, with no ``BEGIN``
    before it and no ``ROLLBACK`` after (after which psycopg also drops every statement the
    connection had prepared, ``DEALLOCATE ALL``). Each statement sees what was committed when
    it started. That is all a transaction at PostgreSQL's default level (READ COMMITTED) gives a
    read too, since there every statement takes its own snapshot: several statements read
    through one connection never saw one snapshot on PostgreSQL, in a transaction or not. A
    caller that needs them to must read in a ``REPEATABLE READ`` transaction of its own (as a
    fork copies a checkpoint). Row and advisory locks would end with their statement here:
    take them in ``engine.begin()``.

    On SQLite its transaction begins ``DEFERRED``: a read neither takes the write lock nor waits
    in the busy handler behind a writer of another process, and its statements share one WAL
    snapshot.
    """
    if engine.dialect.name == "postgresql":
        return engine.connect().execution_options(isolation_level="AUTOCOMMIT", **{READ_ONLY: True})
    return engine.connect().execution_options(**{READ_ONLY: True})


def one_statement(engine: Engine) -> Connection:
    """A connection for a write of exactly one statement (use ``with one_statement(e) as c, c.begin()``).

    On PostgreSQL it runs in autocommit: the statement is its own transaction, one round trip
    instead of three (``BEGIN``, the statement, ``COMMIT``), and equally atomic. Never use it
    for two statements that must commit together. Elsewhere it is an ordinary connection (a
    SQLite write begins ``IMMEDIATE`` under the process's write lock, as every write does).
    """
    if engine.dialect.name == "postgresql":
        return engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    return engine.connect()


class WriteLock:
    """A SQLite file's process-wide writer lock.

    Re-entrant for the thread that holds it (a write that thread begins inside its own, on the
    in-memory database's one shared connection say, would otherwise wait on itself), and
    released by whoever returns the connection (a connection the garbage collector checks in,
    on another thread).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0

    def acquire(self, timeout: float = -1) -> bool:
        """Take the lock (again, when this thread holds it); ``False`` after ``timeout`` seconds."""
        me = threading.get_ident()
        if self._owner == me:
            self._depth += 1
            return True
        if not self._lock.acquire(timeout=timeout):
            return False
        self._owner, self._depth = me, 1
        return True

    def release(self) -> None:
        """Undo one :meth:`acquire`."""
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            self._lock.release()

    def __enter__(self) -> WriteLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


#: Key in a pooled connection's ``info``: the write lock its open transaction holds.
_HELD_LOCK = "wop_write_lock"
_write_locks: dict[str, WriteLock] = {}
_engine_locks: weakref.WeakKeyDictionary[Engine, WriteLock] = weakref.WeakKeyDictionary()
_write_locks_guard = threading.Lock()


def write_lock(engine: Engine) -> AbstractContextManager[Any]:
    """A lock to hold around a write transaction on ``engine`` (a no-op on PostgreSQL).

    Take it once the transaction's connection is checked out, never before: a thread holding
    it must not wait for the pool, whose connections may all be held by threads waiting for it.

    SQLite lets one writer in at a time and makes the others wait in its busy handler, which
    sleeps in steps of 1 to 100 ms: threads of one process that collide on the lock would
    lose whole milliseconds per write. Taking this process-wide lock before ``BEGIN`` (one per
    database file, shared by every engine on that file) queues them with no sleep; other
    processes still wait on the busy timeout. A private in-memory database has a single shared
    connection, so every transaction on it, read or write, must hold the lock.
    """
    if not is_sqlite(engine):
        return nullcontext()
    return _lock_of(engine)


def _lock_of(engine: Engine) -> WriteLock:
    # Looked up on every transaction's begin: remembered per engine, the path resolved once.
    lock = _engine_locks.get(engine)
    if lock is None:
        lock = _engine_locks.setdefault(engine, _file_lock(engine))
    return lock


def _file_lock(engine: Engine) -> WriteLock:
    database = engine.url.database or ""
    key = f"memory:{id(engine.pool)}" if database in ("", ":memory:") else os.path.abspath(database)
    lock = _write_locks.get(key)
    if lock is None:
        with _write_locks_guard:
            # Every spelling of a path maps to the lock of the file it resolves to.
            shared = key if key.startswith("memory:") else os.path.realpath(key)
            lock = _write_locks.setdefault(shared, WriteLock())
            _write_locks[key] = lock
    return lock


def is_memory_sqlite(engine: Engine) -> bool:
    """Whether ``engine`` is a private in-memory SQLite database (one shared connection)."""
    return is_sqlite(engine) and engine.url.database in (None, "", ":memory:")


def pool_size(engine: Engine) -> int | None:
    """How many connections ``engine``'s pool keeps (``None``: a pool without a fixed size)."""
    pool = engine.pool
    return pool.size() if isinstance(pool, QueuePool) else None
