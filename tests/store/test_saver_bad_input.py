"""Bad input and broken databases: every case is a clear error, nothing is written, nothing else breaks.

Lengths are checked by the saver before any statement runs, on both backends (SQLite would
store a 10 kB thread id without a word; PostgreSQL would fail halfway).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import func, select, text, update
from tests.store.conftest import config_of, make_checkpoint, new_thread, put_chain

from wop_langgraph.protocol.errors import StoreError, ValidationError
from wop_langgraph.store import SQLModelSaver
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table, checkpoints_table


def _row_counts(saver: SQLModelSaver) -> tuple[int, int]:
    with saver.engine.connect() as conn:
        return (
            conn.execute(select(func.count()).select_from(checkpoints_table)).scalar_one(),
            conn.execute(select(func.count()).select_from(checkpoint_writes_table)).scalar_one(),
        )


@pytest.fixture
def witness(shared_saver: SQLModelSaver) -> Any:
    """Another thread's data, which must read back unchanged after each failure."""
    thread = new_thread()
    [config] = put_chain(shared_saver, thread, 1)
    shared_saver.put_writes(config, [("w", "still here")], "task")

    def check() -> None:
        found = shared_saver.get_tuple(config_of(thread))
        assert found is not None and found.pending_writes == [("task", "w", "still here")]

    return check


def _corrupt(saver: SQLModelSaver, table: Any, thread: str, **values: Any) -> None:
    with saver.engine.begin() as conn:
        conn.execute(update(table).where(table.c.thread_id == thread).values(**values))


def test_a_corrupt_checkpoint_blob_is_a_store_error_naming_the_row(
    shared_saver: SQLModelSaver, witness: Any
) -> None:
    thread = new_thread()
    put_chain(shared_saver, thread, 1)
    _corrupt(shared_saver, checkpoints_table, thread, checkpoint=b"\xc1\xc1 not msgpack")

    with pytest.raises(
        StoreError, match=rf"cannot read checkpoint .* of thread '{thread}'.*'msgpack' blob"
    ) as caught:
        shared_saver.get_tuple(config_of(thread))
    assert caught.value.__cause__ is not None
    with pytest.raises(StoreError):
        list(shared_saver.list(config_of(thread)))
    witness()


def test_a_corrupt_write_blob_and_an_unknown_type_tag(shared_saver: SQLModelSaver, witness: Any) -> None:
    thread = new_thread()
    [config] = put_chain(shared_saver, thread, 1)
    shared_saver.put_writes(config, [("w", 1)], "task-x")
    _corrupt(shared_saver, checkpoint_writes_table, thread, blob=b"\xc1")
    with pytest.raises(StoreError, match="cannot read write task-x/0 of checkpoint"):
        shared_saver.get_tuple(config)

    other = new_thread()
    put_chain(shared_saver, other, 1)
    _corrupt(shared_saver, checkpoints_table, other, type="zstd+msgpack-v9")
    with pytest.raises(StoreError, match=r"'zstd\+msgpack-v9'"):
        shared_saver.get_tuple(config_of(other))
    witness()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("thread_id", "t" * 301),
        ("thread_id", "é" * 151),  # 302 bytes of UTF-8 in 151 characters
        ("thread_id", "nul\x00inside"),
        ("checkpoint_ns", "n" * 1025),
        ("checkpoint_id", "c" * 65),
        ("run_id", "r" * 301),
    ],
)
def test_over_long_or_nul_ids_are_refused_before_writing(
    shared_saver: SQLModelSaver, witness: Any, field: str, value: str
) -> None:
    before = _row_counts(shared_saver)
    config: Any = {"configurable": {"thread_id": new_thread(), "checkpoint_ns": ""}}
    checkpoint = make_checkpoint({"x": 1})
    metadata: Any = {"source": "loop", "step": 0}
    if field == "checkpoint_id":
        checkpoint["id"] = value
    elif field == "run_id":
        metadata["run_id"] = value
    else:
        config["configurable"][field] = value

    with pytest.raises(ValidationError, match=field) as caught:
        shared_saver.put(config, checkpoint, metadata, {})
    assert caught.value.details is not None and caught.value.details["path"] == field
    assert _row_counts(shared_saver) == before
    witness()


def test_the_limit_counts_bytes_and_accepts_the_maximum(shared_saver: SQLModelSaver) -> None:
    thread = "é" * 150  # exactly 300 bytes
    [config] = put_chain(shared_saver, thread, 1, checkpoint_ns="n" * 1024)
    found = shared_saver.get_tuple(config)
    assert found is not None and found.config["configurable"]["thread_id"] == thread


@pytest.mark.parametrize(
    ("writes", "task_id", "match"),
    [
        ([("w", 1)], "k" * 129, "task_id is 129 bytes"),
        ([("c" * 1025, 1)], "task", "channel is 1025 bytes"),
        ([("w", 1), ("lock", threading.Lock())], "task", "cannot serialise the write to channel 'lock'"),
    ],
)
def test_bad_writes_are_refused_before_writing(
    shared_saver: SQLModelSaver, witness: Any, writes: list[tuple[str, Any]], task_id: str, match: str
) -> None:
    [config] = put_chain(shared_saver, new_thread(), 1)
    before = _row_counts(shared_saver)
    with pytest.raises(ValidationError, match=match):
        shared_saver.put_writes(config, writes, task_id)
    assert _row_counts(shared_saver) == before
    witness()


@pytest.mark.parametrize(
    ("metadata", "match"),
    [
        ({"step": 0, "when": object()}, "metadata is not JSON"),
        ({"step": 0, "nested": {"text": "a\x00b"}}, "metadata contains a NUL"),
    ],
)
def test_unstorable_metadata_is_refused(shared_saver: SQLModelSaver, metadata: Any, match: str) -> None:
    before = _row_counts(shared_saver)
    with pytest.raises(ValidationError, match=match):
        shared_saver.put(config_of(new_thread()), make_checkpoint(), metadata, {})
    assert _row_counts(shared_saver) == before


def test_missing_config_parts_are_validation_errors(shared_saver: SQLModelSaver) -> None:
    with pytest.raises(ValidationError, match=r"no configurable\.thread_id"):
        shared_saver.get_tuple({"configurable": {}})
    with pytest.raises(ValidationError, match=r"needs configurable\.checkpoint_id"):
        shared_saver.put_writes(config_of(new_thread()), [("w", 1)], "task")
    if shared_saver.engine.dialect.name == "sqlite":
        # SQLite filters through a JSON path built from the key, which a quote would break.
        with pytest.raises(ValidationError, match="metadata filter key"):
            list(shared_saver.list(None, filter={'a"b': 1}))
    else:
        # PostgreSQL compares whole JSON documents: any key is just data.
        assert list(shared_saver.list(None, filter={'a"b': 1})) == []


def test_a_closed_saver_refuses_with_a_store_error(db_url: str) -> None:
    saver = SQLModelSaver.from_url(db_url)
    saver.setup()
    [config] = put_chain(saver, new_thread(), 1)
    saver.close()
    for call in (
        lambda: saver.get_tuple(config),
        lambda: saver.put(config, make_checkpoint(), {}, {}),
        lambda: saver.put_writes(config, [("w", 1)], "task"),
        lambda: list(saver.list(config)),
        saver.setup,
    ):
        with pytest.raises(StoreError, match="closed saver"):
            call()

    reopened = SQLModelSaver.from_url(db_url)
    try:
        assert reopened.get_tuple(config) is not None  # closing damaged nothing
        # Disposing an engine the saver does not own only empties its pool (SQLAlchemy's
        # rule): the next call opens a fresh connection.
        borrowed = SQLModelSaver(reopened.engine)
        reopened.engine.dispose()
        assert borrowed.get_tuple(config) is not None
    finally:
        reopened.close()


def test_an_unreachable_postgres_is_a_store_error_from_the_driver() -> None:
    saver = SQLModelSaver.from_url(
        "postgresql://postgres@127.0.0.1:1/nowhere", connect_args={"connect_timeout": 3}
    )
    try:
        with pytest.raises(StoreError, match="setup failed in the database: OperationalError") as caught:
            saver.setup()
        assert isinstance(caught.value.__cause__, psycopg.OperationalError)
        with pytest.raises(StoreError, match="get_tuple failed in the database") as caught:
            saver.get_tuple(config_of("t"))
        assert isinstance(caught.value.__cause__, psycopg.OperationalError)
        assert caught.value.retryable
    finally:
        saver.close()


def test_an_unopenable_sqlite_file_is_a_store_error_from_the_driver(tmp_path: Path) -> None:
    saver = SQLModelSaver.from_url(f"sqlite:///{tmp_path / 'missing-dir' / 'runs.db'}")
    try:
        with pytest.raises(StoreError, match="unable to open database file") as caught:
            saver.put(config_of("t"), make_checkpoint(), {}, {})
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    finally:
        saver.close()


def test_a_failing_statement_rolls_back_and_leaves_other_data(saver: SQLModelSaver) -> None:
    thread = new_thread()
    [config] = put_chain(saver, thread, 1)
    saver.put_writes(config, [("w", "kept")], "task")
    with saver.engine.begin() as conn:
        conn.execute(text("ALTER TABLE wop_checkpoint_writes RENAME TO wop_writes_away"))
    try:
        with pytest.raises(StoreError, match="put_writes failed in the database") as caught:
            saver.put_writes(config, [("w2", 1)], "task-2")
        assert type(caught.value.__cause__).__module__.split(".")[0] in ("sqlite3", "psycopg")
        with pytest.raises(StoreError, match="delete_thread failed"):
            saver.delete_thread(thread)  # deletes writes first: fails, so the checkpoint stays
    finally:
        with saver.engine.begin() as conn:
            conn.execute(text("ALTER TABLE wop_writes_away RENAME TO wop_checkpoint_writes"))
    found = saver.get_tuple(config)
    assert found is not None and found.pending_writes == [("task", "w", "kept")]


def _kill_pooled_connection(saver: SQLModelSaver, url: str) -> None:
    with saver.engine.connect() as conn:
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    admin = SQLModelSaver.from_url(url)
    try:
        with admin.engine.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        admin.close()


class _Recorder:
    def record(self, conn: Any, batch: Any) -> None:
        pass


@pytest.mark.postgres
def test_a_connection_killed_by_the_server_is_replaced(postgres_url: str) -> None:
    # One pooled connection, used again at once: the idle-only ping does not look at it.
    saver = SQLModelSaver.from_url(postgres_url, pool_size=1, max_overflow=0)
    recording = SQLModelSaver.from_url(postgres_url, pool_size=1, max_overflow=0, recorder=_Recorder())
    try:
        saver.setup()
        [config] = put_chain(saver, new_thread(), 1)

        _kill_pooled_connection(saver, postgres_url)
        assert saver.get_tuple(config) is not None  # retried on a fresh connection
        _kill_pooled_connection(saver, postgres_url)
        saver.put_writes(config, [("w", 1)], "task")  # idempotent: retried too
        assert _pending_count(saver, config) == 1

        recording.put_writes(config, [("w", 1)], "task")
        _kill_pooled_connection(recording, postgres_url)
        with pytest.raises(StoreError, match="put_writes failed in the database") as caught:
            # What a recorder appends must not be appended twice: no retry, a clear error.
            recording.put_writes(config, [("w2", 2)], "task-2")
        assert isinstance(caught.value.__cause__, psycopg.OperationalError)
        recording.put_writes(config, [("w2", 2)], "task-2")  # the broken connection is gone
        assert _pending_count(saver, config) == 2
    finally:
        saver.close()
        recording.close()


@pytest.mark.postgres
def test_a_connection_that_died_while_idle_is_replaced_before_use(postgres_url: str) -> None:
    # The recording path is never retried, so only the ping on checkout can save this call.
    saver = SQLModelSaver.from_url(
        postgres_url, pool_size=1, max_overflow=0, recorder=_Recorder(), ping_after_idle=0.05
    )
    try:
        saver.setup()
        [config] = put_chain(saver, new_thread(), 1)
        saver.put_writes(config, [("w", 1)], "task")
        _kill_pooled_connection(saver, postgres_url)
        time.sleep(0.1)
        saver.put_writes(config, [("w2", 2)], "task-2")
        assert _pending_count(saver, config) == 2
    finally:
        saver.close()


def _pending_count(saver: SQLModelSaver, config: Any) -> int:
    found = saver.get_tuple(config)
    assert found is not None and found.pending_writes is not None
    return len(found.pending_writes)
