"""Versioned schema migrations of the store, recorded in ``wop_schema_version``.

:func:`upgrade` applies the missing versions in order, each in its own transaction together
with the row that records it, so a crash leaves the database at a whole version. Two
processes may run it at once: on PostgreSQL every migration transaction first takes a
transaction-scoped advisory lock, on SQLite it begins ``BEGIN IMMEDIATE`` (engines from
:func:`~wop_langgraph.store.engine.make_engine`), and either way the loser waits, then sees
the version already recorded and skips it.

How an old migration stays what it was: every migration spells out its own DDL. Version 1
creates the tables from the frozen definitions in this module (the tables as they stood at
version 1), never from the live table classes, so editing ``run_tables.py`` or
``checkpoint_tables.py`` cannot change what version 1 creates. To change a table, edit its
class AND append a migration that alters the table explicitly (``ALTER TABLE``, a new
index...). ``tests/store/test_migrations.py`` upgrades an empty database and compares it with
the live table classes, so a table edited without its migration fails the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Connection,
    DateTime,
    Engine,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    insert,
    inspect,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from wop_langgraph.protocol.errors import StoreError
from wop_langgraph.store.engine import READ_ONLY

__all__ = ["HEAD", "MIGRATIONS", "Migration", "current_version", "upgrade"]

#: Table that records which schema versions a database has.
SCHEMA_VERSION_TABLE = "wop_schema_version"

# Key of the PostgreSQL advisory lock that serialises migrations across processes: a fixed
# 63-bit number (the first 8 bytes of sha256("wop_langgraph.migrations"), top bit cleared).
_ADVISORY_LOCK_KEY = 0x2B0C5D2E6F1A4C33

_version_metadata = MetaData()
_schema_version = Table(
    SCHEMA_VERSION_TABLE,
    _version_metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("description", String(200), nullable=False),
    Column("applied_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema version: what it changes and the DDL that changes it."""

    version: int
    description: str
    apply: Callable[[Connection], None]


def _json() -> JSON:
    return JSON().with_variant(JSONB(), "postgresql")


def _v1_metadata() -> MetaData:
    """The store's tables exactly as version 1 created them (frozen: never edit)."""
    md = MetaData()

    def utc(name: str, nullable: bool = True) -> Column[object]:
        return Column(name, DateTime(timezone=True), nullable=nullable)

    Table(
        "wop_runs",
        md,
        Column("run_id", String(300), primary_key=True),
        Column("workflow_id", String(128), nullable=False),
        Column("tenant", String(140), nullable=False),
        Column("owner", _json(), nullable=False),
        Column("status", String(32), nullable=False),
        Column("inputs", _json()),
        Column("configurable", _json()),
        Column("tags", _json()),
        Column("run_metadata", _json()),
        Column("callback_url", String(2048)),
        Column("current_node_id", String(1024)),
        Column("error", _json()),
        Column("outputs", _json()),
        utc("created_at", nullable=False),
        utc("updated_at", nullable=False),
        utc("completed_at"),
        Index("ix_wop_runs_tenant", "tenant"),
    )
    Table(
        "wop_event_counters",
        md,
        Column("run_id", String(300), primary_key=True),
        Column("next_sequence", BigInteger, nullable=False),
    )
    Table(
        "wop_events",
        md,
        Column("run_id", String(300), primary_key=True),
        Column("sequence", BigInteger, primary_key=True, autoincrement=False),
        Column("event_id", String(128), nullable=False),
        Column("type", String(128), nullable=False),
        Column("node_id", String(1024)),
        Column("payload", _json(), nullable=False),
        utc("timestamp", nullable=False),
        Column("schema_version", Integer, nullable=False),
        Column("causation_id", String(128)),
        UniqueConstraint("event_id", name="uq_wop_events_event_id"),
        Index("ix_wop_events_run_type", "run_id", "type"),
    )
    Table(
        "wop_interrupts",
        md,
        Column("interrupt_id", String(300), primary_key=True),
        Column("run_id", String(300), nullable=False),
        Column("node_id", String(1024), nullable=False),
        Column("key", String(256), nullable=False),
        Column("lg_interrupt_id", String(64), nullable=False),
        Column("checkpoint_ns", String(2048), nullable=False),
        Column("task_id", String(64), nullable=False),
        Column("visit_index", Integer, nullable=False),
        Column("ordinal", Integer, nullable=False),
        Column("kind", String(64), nullable=False),
        Column("payload", _json(), nullable=False),
        Column("status", String(16), nullable=False),
        utc("deadline"),
        Column("votes", _json()),
        Column("resume_value", _json()),
        Column("resolution", _json()),
        Column("resolved_by", _json()),
        utc("created_at", nullable=False),
        utc("resolved_at"),
        utc("consumed_at"),
        UniqueConstraint("key", name="uq_wop_interrupts_key"),
        UniqueConstraint("run_id", "lg_interrupt_id", name="uq_wop_interrupts_lg_id"),
        Index("ix_wop_interrupts_status_deadline", "status", "deadline"),
        Index("ix_wop_interrupts_run_node", "run_id", "node_id", "status"),
    )
    Table(
        "wop_idempotency",
        md,
        Column("scope", String(300), primary_key=True),
        Column("endpoint", String(256), primary_key=True),
        Column("key", String(128), primary_key=True),
        Column("request_hash", String(64), nullable=False),
        Column("state", String(16), nullable=False),
        Column("status_code", Integer),
        Column("headers", _json()),
        Column("body", _json()),
        utc("created_at", nullable=False),
        utc("expires_at", nullable=False),
        Index("ix_wop_idempotency_expires", "expires_at"),
    )
    Table(
        "wop_checkpoints",
        md,
        Column("thread_id", String(300), primary_key=True),
        Column("checkpoint_ns", String(1024), primary_key=True),
        Column("checkpoint_id", String(64), primary_key=True),
        Column("parent_checkpoint_id", String(64)),
        Column("run_id", String(300)),
        Column("type", Text, nullable=False),
        Column("checkpoint", LargeBinary, nullable=False),
        Column("metadata", _json(), nullable=False),
    )
    Table(
        "wop_checkpoint_writes",
        md,
        Column("thread_id", String(300), primary_key=True),
        Column("checkpoint_ns", String(1024), primary_key=True),
        Column("checkpoint_id", String(64), primary_key=True),
        Column("task_id", String(128), primary_key=True),
        Column("idx", Integer, primary_key=True, autoincrement=False),
        Column("task_path", Text, nullable=False),
        Column("channel", String(1024), nullable=False),
        Column("type", Text, nullable=False),
        Column("blob", LargeBinary, nullable=False),
    )
    return md


def _create_v1(conn: Connection) -> None:
    # checkfirst: a database whose tables were made by ``metadata.create_all`` is adopted.
    _v1_metadata().create_all(conn, checkfirst=True)


def _create_v2(conn: Connection) -> None:
    # delete_for_runs looks checkpoints up by the run that wrote them; without this index it
    # scans every checkpoint of every thread.
    checkpoints = _v1_metadata().tables["wop_checkpoints"]
    Index("ix_wop_checkpoints_run_id", checkpoints.c.run_id).create(conn, checkfirst=True)


def _create_v3(conn: Connection) -> None:
    # The run queue lives on the run row (no second table to keep consistent with it), and the
    # event counter gets the flag that closes a run's log with its terminal event.
    utc = DateTime(timezone=True).compile(dialect=conn.dialect)
    for statement in (
        f"ALTER TABLE wop_runs ADD COLUMN queued_at {utc}",
        "ALTER TABLE wop_runs ADD COLUMN queue_version BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE wop_runs ADD COLUMN lease_owner VARCHAR(64)",
        f"ALTER TABLE wop_runs ADD COLUMN lease_until {utc}",
        "ALTER TABLE wop_event_counters ADD COLUMN closed BOOLEAN NOT NULL DEFAULT false",
    ):
        conn.execute(text(statement))
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_wop_runs_queued ON wop_runs (queued_at)"))
    # Runs left mid-flight by an older version belong to the queue, as every unfinished run that
    # is not waiting on a pending interrupt does now.
    conn.execute(
        text(
            "UPDATE wop_runs SET queued_at = updated_at, queue_version = 1 "
            "WHERE status NOT IN ('completed', 'failed', 'cancelled') AND ("
            "status IN ('pending', 'running') OR EXISTS (SELECT 1 FROM wop_interrupts i "
            "WHERE i.run_id = wop_runs.run_id AND i.status IN ('resolved', 'expired') "
            "AND i.consumed_at IS NULL))"
        )
    )
    conn.execute(
        text(
            "UPDATE wop_event_counters SET closed = true WHERE run_id IN (SELECT run_id FROM wop_runs "
            "WHERE status IN ('completed', 'failed', 'cancelled'))"
        )
    )


def _create_v4(conn: Connection) -> None:
    # The notification outbox (wop_langgraph.notify): planned in the interrupt's transaction,
    # delivered by workers; the unique constraint plans each (key, recipient, purpose) once.
    md = MetaData()
    Table(
        "wop_notifications",
        md,
        Column("notification_id", String(64), primary_key=True),
        Column("run_id", String(300), nullable=False),
        Column("interrupt_id", String(300), nullable=False),
        Column("interrupt_key", String(256), nullable=False),
        Column("recipient", String(256), nullable=False),
        Column("purpose", String(32), nullable=False),
        Column("state", String(16), nullable=False),
        Column("addresses", _json(), nullable=False),
        Column("delivered", _json()),
        Column("attempts", Integer, nullable=False),
        Column("last_error", Text),
        Column("due_at", DateTime(timezone=True), nullable=False),
        Column("lease_until", DateTime(timezone=True)),
        Column("created_at", DateTime(timezone=True), nullable=False),
        Column("updated_at", DateTime(timezone=True), nullable=False),
        Column("sent_at", DateTime(timezone=True)),
        UniqueConstraint("interrupt_key", "recipient", "purpose", name="uq_wop_notifications_once"),
        Index("ix_wop_notifications_due", "state", "due_at"),
        Index("ix_wop_notifications_run", "run_id"),
    )
    md.create_all(conn, checkfirst=True)


def _create_v5(conn: Connection) -> None:
    # Forks (host/fork.py): one row per fork run, written with the run and never changed.
    md = MetaData()
    Table(
        "wop_run_forks",
        md,
        Column("run_id", String(300), primary_key=True),
        Column("source_run_id", String(300), nullable=False, index=True),
        Column("mode", String(16), nullable=False),
        Column("from_seq", BigInteger, nullable=False),
        Column("created_at", DateTime(timezone=True), nullable=False),
    )
    md.create_all(conn, checkfirst=True)


def _create_v6(conn: Connection) -> None:
    # The interrupt profiles a gate asked for (e.g. openwop-interrupt-auth-required): host-side
    # rules kept beside the payload, which is the closed wire InterruptPayload.
    kind = _json().compile(dialect=conn.dialect)
    conn.execute(text(f"ALTER TABLE wop_interrupts ADD COLUMN profiles {kind}"))


def _create_v7(conn: Connection) -> None:
    # Tables the server used to create itself (create_all at start-up): callback delivery
    # claims, and the LangGraph Server API's threads. checkfirst: such a database is adopted.
    md = MetaData()

    def utc(name: str, nullable: bool = True) -> Column[object]:
        return Column(name, DateTime(timezone=True), nullable=nullable)

    Table(
        "wop_server_callbacks",
        md,
        Column("interrupt_id", String(300), primary_key=True),
        Column("run_id", String(300), nullable=False, index=True),
        Column("state", String(16), nullable=False),
        Column("attempts", Integer, nullable=False),
        Column("last_status", Integer),
        Column("last_error", Text),
        utc("updated_at", nullable=False),
    )
    Table(
        "wop_lg_threads",
        md,
        Column("thread_id", String(128), primary_key=True),
        Column("tenant", String(300), nullable=False),
        Column("metadata", _json(), nullable=False),
        Column("run_id", String(300)),
        utc("created_at", nullable=False),
        utc("updated_at", nullable=False),
        Index("ix_wop_lg_threads_tenant_updated", "tenant", "updated_at"),
    )
    Table(
        "wop_lg_thread_runs",
        md,
        Column("run_id", String(300), primary_key=True),
        Column("thread_id", String(128), nullable=False),
        Column("assistant_id", String(300), nullable=False),
        Column("metadata", _json(), nullable=False),
        Column("multitask_strategy", String(16), nullable=False),
        utc("created_at", nullable=False),
        Index("ix_wop_lg_thread_runs_thread", "thread_id", "created_at"),
    )
    Table(
        "wop_lg_queued_runs",
        md,
        Column("run_id", String(300), primary_key=True),
        Column("thread_id", String(128), nullable=False),
        Column("tenant", String(300), nullable=False),
        Column("owner", _json(), nullable=False),
        Column("graph_id", String(300), nullable=False),
        Column("assistant_id", String(300), nullable=False),
        Column("input", _json(), nullable=True),
        Column("metadata", _json(), nullable=False),
        Column("status", String(16), nullable=False),
        utc("created_at", nullable=False),
        utc("updated_at", nullable=False),
        Index("ix_wop_lg_queued_runs_thread", "thread_id", "created_at"),
        Index("ix_wop_lg_queued_runs_status", "status"),
    )
    Table(
        "wop_lg_deleted_runs",
        md,
        Column("run_id", String(300), primary_key=True),
        Column("deleted_by", String(300), nullable=False),
        utc("deleted_at", nullable=False),
    )
    md.create_all(conn, checkfirst=True)


def _create_v8(conn: Connection) -> None:
    # The per-run hash chain (wop_langgraph.proof.chain) and the signed receipts and checkpoints
    # over it (wop_langgraph.proof.receipts). Events logged before this version keep no chain
    # value; a run's chain starts at its first event logged after it.
    conn.execute(text("ALTER TABLE wop_events ADD COLUMN chain_hash VARCHAR(64)"))
    conn.execute(text("ALTER TABLE wop_event_counters ADD COLUMN chain_head VARCHAR(64)"))
    conn.execute(text("ALTER TABLE wop_event_counters ADD COLUMN chain_prev VARCHAR(64)"))
    md = MetaData()
    Table(
        "wop_receipts",
        md,
        Column("run_id", String(300), primary_key=True),
        Column("name", String(400), primary_key=True),
        Column("kind", String(16), nullable=False),
        Column("sequence", BigInteger, nullable=False),
        Column("kid", String(128), nullable=False),
        Column("envelope", _json(), nullable=False),
        Column("created_at", DateTime(timezone=True), nullable=False),
    )
    md.create_all(conn, checkfirst=True)


def _create_v9(conn: Connection) -> None:
    # SQLite's appends chain from their counter row's head (wop_langgraph.store.events), as
    # PostgreSQL's have since version 8, where SQLite read its run's last event: each row takes
    # the chain value of its run's last event (none, for a run logged before the chain).
    if conn.dialect.name != "sqlite":
        return
    conn.execute(
        text(
            "UPDATE wop_event_counters SET chain_head = (SELECT e.chain_hash FROM wop_events e "
            "WHERE e.run_id = wop_event_counters.run_id "
            "AND e.sequence = wop_event_counters.next_sequence - 1) WHERE chain_head IS NULL"
        )
    )


#: Every schema version, oldest first; append, never edit.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "runs, events, interrupts, idempotency, checkpoints and writes", _create_v1),
    Migration(2, "index checkpoints by metadata run_id (delete_for_runs)", _create_v2),
    Migration(3, "run queue and leases on wop_runs; closed event logs", _create_v3),
    Migration(4, "notification outbox wop_notifications", _create_v4),
    Migration(5, "fork records wop_run_forks", _create_v5),
    Migration(6, "interrupt profiles on wop_interrupts", _create_v6),
    Migration(7, "server callbacks and LangGraph API threads and queued runs", _create_v7),
    Migration(8, "event hash chain; signed receipts wop_receipts", _create_v8),
    Migration(9, "SQLite event counters hold their run's chain head", _create_v9),
)

#: The newest schema version this code knows.
HEAD = MIGRATIONS[-1].version


def current_version(conn: Connection) -> int:
    """The newest schema version recorded in the database, 0 for a database never set up."""
    if not inspect(conn).has_table(SCHEMA_VERSION_TABLE):
        return 0
    found = conn.execute(select(func.max(_schema_version.c.version))).scalar()
    return int(found or 0)


def upgrade(bind: Engine | Connection, target: int | None = None) -> int:
    """Bring the schema up to ``target`` (default: :data:`HEAD`) and return the version reached.

    Each missing version runs in its own transaction with the row that records it. With a
    :class:`~sqlalchemy.Engine` the transactions are committed here; with a
    :class:`~sqlalchemy.Connection` that is already in a transaction each version runs in a
    savepoint and the caller commits. A database already at or past ``target`` is left
    alone (there are no downgrades).

    Raises:
        ValueError: ``target`` is not a known version.
        StoreError: the database records a version newer than this code knows, or a
            migration failed (the failing version is rolled back; earlier ones stay).
    """
    goal = HEAD if target is None else target
    if not 0 <= goal <= HEAD:
        raise ValueError(f"unknown schema version {goal}; this code knows 1..{HEAD}")
    if isinstance(bind, Engine):
        with bind.connect().execution_options(**{READ_ONLY: True}) as peek:
            found = _checked_version(peek)
            peek.rollback()
        if found >= goal:
            return found
        with bind.connect() as conn:
            return _upgrade(conn, goal)
    return _upgrade(bind, goal)


def _upgrade(conn: Connection, goal: int) -> int:
    reached = 0
    for migration in MIGRATIONS:
        if migration.version > goal:
            break
        with _transaction(conn):
            _serialise(conn)
            _version_metadata.create_all(conn, checkfirst=True)
            reached = _checked_version(conn)
            if reached >= migration.version:
                continue
            try:
                migration.apply(conn)
            except Exception as exc:
                raise StoreError(
                    f"schema migration {migration.version} ({migration.description}) failed: {exc}"
                ) from exc
            conn.execute(
                insert(_schema_version).values(version=migration.version, description=migration.description)
            )
            reached = migration.version
    return reached


def _checked_version(conn: Connection) -> int:
    version = current_version(conn)
    if version > HEAD:
        raise StoreError(
            f"the database is at schema version {version}, newer than this wop-langgraph knows "
            f"({HEAD}); upgrade the package instead of running an older one against it"
        )
    return version


@contextmanager
def _transaction(conn: Connection) -> Iterator[None]:
    if conn.in_transaction():
        with conn.begin_nested():
            yield
    else:
        with conn.begin():
            yield


def _serialise(conn: Connection) -> None:
    # SQLite needs nothing here: the engine's BEGIN IMMEDIATE already holds the write lock.
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK_KEY})
