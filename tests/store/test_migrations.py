"""Schema migrations: from empty, from version 1 with data, re-runs, concurrent setups, drift."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, column, insert, inspect, select, table, text
from sqlmodel import SQLModel
from tests.store.conftest import config_of, new_thread, put_chain

import wop_langgraph.store.callbacks
import wop_langgraph.store.checkpoint_tables
import wop_langgraph.store.forks
import wop_langgraph.store.lg_threads
import wop_langgraph.store.outbox_table
import wop_langgraph.store.run_tables
from wop_langgraph.proof.chain import chain_next
from wop_langgraph.proof.statements import digest_of_stored
from wop_langgraph.protocol.errors import StoreError
from wop_langgraph.store import SQLModelSaver, migrations
from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.events import NewEvent, append
from wop_langgraph.store.migrations import HEAD, Migration, current_version, upgrade

RUN_INDEX = "ix_wop_checkpoints_run_id"
versions_table = table("wop_schema_version", column("version"), column("description"))


@pytest.fixture
def engine(db_url: str) -> Any:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


def _store_tables() -> list[Any]:
    assert wop_langgraph.store.checkpoint_tables.checkpoints_table.metadata is SQLModel.metadata
    return [t for t in SQLModel.metadata.sorted_tables if t.name.startswith("wop_")]


def _versions(engine: Engine) -> list[tuple[int, Any]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(versions_table).order_by(text("version")))]


def _indexes(engine: Engine, name: str) -> set[str]:
    return {ix["name"] for ix in inspect(engine).get_indexes(name) if ix["name"]}


def test_upgrade_creates_every_store_table_from_empty(engine: Engine) -> None:
    assert upgrade(engine) == HEAD == 9
    names = set(inspect(engine).get_table_names())
    assert {t.name for t in _store_tables()} | {"wop_schema_version"} <= names
    assert {"wop_runs", "wop_events", "wop_event_counters", "wop_interrupts", "wop_idempotency"} <= names
    assert [v for v, _ in _versions(engine)] == list(range(1, HEAD + 1))


def _describe_database(conn: Connection, name: str) -> dict[str, Any]:
    inspector = inspect(conn)
    return {
        "columns": {
            c["name"]: (c["type"].compile(dialect=conn.dialect), c["nullable"])
            for c in inspector.get_columns(name)
        },
        "primary_key": inspector.get_pk_constraint(name)["constrained_columns"],
        "indexes": {
            (ix["name"], tuple(ix["column_names"]), bool(ix["unique"]))
            for ix in inspector.get_indexes(name)
            if not ix.get("duplicates_constraint")  # PostgreSQL lists UNIQUE constraints here too
        },
        "unique": {(u["name"], tuple(u["column_names"])) for u in inspector.get_unique_constraints(name)},
    }


def _describe_model(conn: Connection, model: Any) -> dict[str, Any]:
    return {
        "columns": {c.name: (c.type.compile(dialect=conn.dialect), c.nullable) for c in model.columns},
        "primary_key": [c.name for c in model.primary_key.columns],
        "indexes": {(ix.name, tuple(c.name for c in ix.columns), bool(ix.unique)) for ix in model.indexes},
        "unique": {
            (u.name, tuple(c.name for c in u.columns))
            for u in model.constraints
            if type(u).__name__ == "UniqueConstraint"
        },
    }


def test_the_migrated_schema_is_exactly_the_table_classes(engine: Engine) -> None:
    """Fails when a table class changes without a migration that makes the same change."""
    upgrade(engine)
    with engine.connect() as conn:
        for model in _store_tables():
            assert _describe_database(conn, model.name) == _describe_model(conn, model), model.name


def test_upgrade_from_version_1_keeps_data_and_adds_the_index(engine: Engine, db_url: str) -> None:
    assert upgrade(engine, target=1) == 1
    assert RUN_INDEX not in _indexes(engine, "wop_checkpoints")
    saver = SQLModelSaver(engine)
    thread = new_thread()
    configs = put_chain(saver, thread, 3, metadata=lambda i: {"run_id": f"run-{i}"})
    saver.put_writes(configs[-1], [("w", "kept")], "task")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO wop_event_counters (run_id, next_sequence) VALUES ('r/1', 7)"))

    assert upgrade(engine) == HEAD
    assert RUN_INDEX in _indexes(engine, "wop_checkpoints")
    found = saver.get_tuple(config_of(thread))
    assert found is not None and found.pending_writes == [("task", "w", "kept")]
    assert len(list(saver.list(config_of(thread)))) == 3
    with engine.connect() as conn:
        assert conn.execute(text("SELECT next_sequence FROM wop_event_counters")).scalar_one() == 7
    saver.delete_for_runs(["run-0"])
    assert len(list(saver.list(config_of(thread)))) == 2


def test_upgrade_to_9_gives_sqlite_counters_their_runs_chain_head(engine: Engine) -> None:
    """Version 8 SQLite read a run's head from its last event; from 9 it is the counter row's."""
    if engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's counter rows hold their head since version 8")
    upgrade(engine, target=8)
    heads = ["a" * 64, "b" * 64]
    at = datetime(2026, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        for run_id, chained in (("acme/old", heads), ("acme/unchained", [None, None]), ("acme/empty", [])):
            conn.execute(
                text("INSERT INTO wop_event_counters (run_id, next_sequence, closed) VALUES (:r, :n, false)"),
                {"r": run_id, "n": len(chained)},
            )
            for sequence, head in enumerate(chained):
                conn.execute(
                    text(
                        "INSERT INTO wop_events (run_id, sequence, event_id, type, payload, timestamp, "
                        "schema_version, chain_hash) VALUES (:r, :s, :e, 'old', '{}', :t, 1, :h)"
                    ),
                    {"r": run_id, "s": sequence, "e": f"{run_id}-{sequence}", "t": at, "h": head},
                )
    assert upgrade(engine) == HEAD
    with engine.connect() as conn:
        found = dict(conn.execute(text("SELECT run_id, chain_head FROM wop_event_counters")).all())
        assert found == {"acme/old": heads[1], "acme/unchained": None, "acme/empty": None}
    with engine.begin() as conn:
        (new,) = append(conn, "acme/old", [NewEvent("new", {})], now=at).events
    assert new.sequence == 2 and new.chain_hash == chain_next(heads[1], digest_of_stored(new))


def test_running_again_changes_nothing(engine: Engine) -> None:
    upgrade(engine)
    recorded = _versions(engine)
    assert upgrade(engine) == HEAD
    assert upgrade(engine, target=1) == HEAD  # no downgrades
    with engine.connect() as conn:
        assert upgrade(conn) == HEAD
    assert _versions(engine) == recorded


def test_concurrent_setups_apply_each_version_once(db_url: str) -> None:
    engines = [make_engine(db_url) for _ in range(4)]
    start = threading.Barrier(len(engines))
    results: list[Any] = [None] * len(engines)

    def setup(i: int) -> None:
        start.wait()
        try:
            results[i] = SQLModelSaver(engines[i]).setup()
        except Exception as exc:  # pragma: no cover - reported by the assertion below
            results[i] = exc

    workers = [threading.Thread(target=setup, args=(i,)) for i in range(len(engines))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    try:
        assert results == [HEAD] * len(engines)
        assert [v for v, _ in _versions(engines[0])] == list(range(1, HEAD + 1))
    finally:
        for engine in engines:
            engine.dispose()


def test_a_database_newer_than_the_code_is_refused(engine: Engine) -> None:
    upgrade(engine)
    with engine.begin() as conn:
        conn.execute(insert(versions_table).values(version=HEAD + 7, description="from the future"))
    with pytest.raises(StoreError, match=f"schema version {HEAD + 7}, newer than this wop-langgraph knows"):
        upgrade(engine)


def test_a_failing_migration_rolls_back_only_itself(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE wop_half_done (x INTEGER)"))
        raise RuntimeError("disk on fire")

    broken_version = HEAD + 1
    monkeypatch.setattr(
        migrations, "MIGRATIONS", (*migrations.MIGRATIONS, Migration(broken_version, "broken", broken))
    )
    monkeypatch.setattr(migrations, "HEAD", broken_version)
    with pytest.raises(
        StoreError, match=rf"schema migration {broken_version} \(broken\) failed: disk on fire"
    ):
        upgrade(engine)
    with engine.connect() as conn:
        assert current_version(conn) == broken_version - 1
    assert "wop_half_done" not in inspect(engine).get_table_names()


def test_upgrade_inside_a_callers_transaction_uses_savepoints(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.begin()
        assert upgrade(conn) == HEAD
        conn.rollback()  # the caller decides: nothing was committed
    with engine.connect() as conn:
        assert current_version(conn) == 0


def test_unknown_targets_are_refused(engine: Engine) -> None:
    with pytest.raises(ValueError, match="unknown schema version"):
        upgrade(engine, target=HEAD + 1)
