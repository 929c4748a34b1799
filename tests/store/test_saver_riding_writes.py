"""A batch whose recording is one append rides in that append's statement (PostgreSQL).

A recorder that says (``one_append``) its record of a batch is at most one append to the run's
log gets, on PostgreSQL, the batch's writes stored in that append's statement, in autocommit:
one round trip where a transaction of the writes and the append takes four. The writes are
stored exactly when the append logs its events; when it logs nothing (a closed log, an event
logged already) the batch is stored the usual way, in one transaction with whatever the
recorder then does, so the rules of ``test_saver_recorder`` hold whichever way it went. On
SQLite every batch takes the usual way; the outcomes below hold there too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Connection, select
from tests.store.conftest import new_thread, put_chain

from wop_langgraph.store import SQLModelSaver, WriteBatch
from wop_langgraph.store._saver_sql import gated_writes_params, gated_writes_upsert
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table
from wop_langgraph.store.engine import one_statement
from wop_langgraph.store.events import (
    NewEvent,
    RideNotTaken,
    RunLogClosed,
    append_event_once,
    append_events,
    read_events,
    riding_next_append,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class TaskEndRecorder:
    """Logs ``node.completed`` of each batch once (a stable id per task), unless told to skip
    it; a closed log is not an error (as the host's recorder of node ends)."""

    channels = None

    def __init__(self) -> None:
        self.skip: set[str] = set()
        self.recorded: list[str] = []

    def one_append(self, batch: WriteBatch) -> bool:
        return True

    def record(self, conn: Connection, batch: WriteBatch) -> None:
        self.recorded.append(batch.task_id)
        if batch.task_id in self.skip:
            return
        event = NewEvent("node.completed", {"nodeId": batch.task_id}, event_id=f"end-{batch.task_id}")
        with contextlib.suppress(RunLogClosed):
            append_event_once(conn, batch.thread_id, event, now=NOW)


@contextlib.contextmanager
def _round_trips(saver: SQLModelSaver) -> Iterator[list[str]]:
    """What psycopg sends meanwhile: statements and transaction commands (PostgreSQL only)."""
    sent: list[str] = []
    if saver.engine.dialect.name != "postgresql":
        yield sent
        return
    import psycopg

    execute, command = psycopg.Cursor.execute, psycopg.Connection._exec_command

    def traced_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(" ".join(str(query).split())[:60])
        return execute(self, query, *args, **kwargs)

    def traced_command(self: Any, cmd: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(bytes(cmd).decode() if isinstance(cmd, bytes | bytearray) else str(cmd))
        return command(self, cmd, *args, **kwargs)

    psycopg.Cursor.execute = traced_execute  # type: ignore[method-assign]
    psycopg.Connection._exec_command = traced_command  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        psycopg.Connection._exec_command = command  # type: ignore[method-assign]


def _log(saver: SQLModelSaver, thread: str) -> list[str]:
    with saver.engine.connect() as conn:
        return [e.type for e in read_events(conn, thread)]


def _stored(saver: SQLModelSaver, thread: str) -> list[tuple[str, str]]:
    table = checkpoint_writes_table
    with saver.engine.connect() as conn:
        rows = conn.execute(select(table.c.task_id, table.c.channel).where(table.c.thread_id == thread))
        return sorted((row.task_id, row.channel) for row in rows)


def _saver(url: str, recorder: TaskEndRecorder) -> SQLModelSaver:
    return SQLModelSaver.from_url(url, recorder=recorder)


def test_a_batch_and_its_end_are_one_statement_on_postgresql(
    module_db_url: str, shared_saver: SQLModelSaver
) -> None:
    recorder = TaskEndRecorder()
    saver = _saver(module_db_url, recorder)
    try:
        thread = new_thread()
        [config] = put_chain(saver, thread, 1, checkpoint_ns="")
        with _round_trips(saver) as sent:
            saver.put_writes(config, [("out", 1), ("log", ["done"])], "task-a")
        assert _stored(saver, thread) == [("task-a", "log"), ("task-a", "out")]
        assert _log(saver, thread) == ["node.completed"]
        if saver.engine.dialect.name == "postgresql":
            # The writes, the counter and the event: one statement, in autocommit (no BEGIN,
            # no COMMIT); the usual way sends BEGIN, the writes, the append and COMMIT.
            assert len(sent) == 1, sent
            assert sent[0].startswith("WITH reserved"), sent
    finally:
        saver.close()


def test_a_batch_whose_recorder_appends_nothing_is_stored_alone(
    module_db_url: str, shared_saver: SQLModelSaver
) -> None:
    recorder = TaskEndRecorder()
    recorder.skip.add("task-b")
    saver = _saver(module_db_url, recorder)
    try:
        thread = new_thread()
        [config] = put_chain(saver, thread, 1, checkpoint_ns="")
        with _round_trips(saver) as sent:
            saver.put_writes(config, [("out", 2)], "task-b")
        assert _stored(saver, thread) == [("task-b", "out")]
        assert _log(saver, thread) == []
        if saver.engine.dialect.name == "postgresql":
            assert len(sent) == 1 and sent[0].startswith("INSERT INTO wop_checkpoint_writes"), sent
    finally:
        saver.close()


def test_a_batch_whose_end_is_logged_already_is_stored_and_logged_once(
    module_db_url: str, shared_saver: SQLModelSaver
) -> None:
    """A task run again after a crash that kept its end but not its writes: the append that the
    writes rode in logs nothing, so the batch is stored the usual way, the end logged once."""
    recorder = TaskEndRecorder()
    saver = _saver(module_db_url, recorder)
    try:
        thread = new_thread()
        [config] = put_chain(saver, thread, 1, checkpoint_ns="")
        with saver.engine.begin() as conn:
            append_events(
                conn,
                thread,
                [NewEvent("node.completed", {"nodeId": "task-c"}, event_id="end-task-c")],
                now=NOW,
            )
        saver.put_writes(config, [("out", 3)], "task-c")
        assert _stored(saver, thread) == [("task-c", "out")]
        assert _log(saver, thread) == ["node.completed"]
        assert recorder.recorded == (
            ["task-c", "task-c"] if saver.engine.dialect.name == "postgresql" else ["task-c"]
        )
    finally:
        saver.close()


def test_a_batch_of_a_run_whose_log_closed_is_stored_with_nothing_logged(
    module_db_url: str, shared_saver: SQLModelSaver
) -> None:
    recorder = TaskEndRecorder()
    saver = _saver(module_db_url, recorder)
    try:
        thread = new_thread()
        [config] = put_chain(saver, thread, 1, checkpoint_ns="")
        with saver.engine.begin() as conn:
            append_events(conn, thread, [NewEvent("run.cancelled", {"reason": "test"})], now=NOW, close=True)
        saver.put_writes(config, [("out", 4)], "task-d")
        assert _stored(saver, thread) == [("task-d", "out")]
        assert _log(saver, thread) == ["run.cancelled"]
    finally:
        saver.close()


def test_riding_writes_are_stored_only_with_the_events(
    module_db_url: str, shared_saver: SQLModelSaver
) -> None:
    """The saver's riding upsert reads the append's gate: no events logged, no writes stored."""
    if shared_saver.engine.dialect.name != "postgresql":
        pytest.skip("writes ride in an append's statement on PostgreSQL only")
    thread = new_thread()
    [config] = put_chain(shared_saver, thread, 1, checkpoint_ns="")
    row = (thread, "", config["configurable"]["checkpoint_id"], "task-e", 0, "", "out", "json", b"5")
    ride = (gated_writes_upsert, 1, gated_writes_params([row]))
    with shared_saver.engine.begin() as conn:
        append_events(conn, thread, [NewEvent("run.cancelled", {"reason": "test"})], now=NOW, close=True)
    with (
        pytest.raises(RideNotTaken),
        one_statement(shared_saver.engine) as conn,
        conn.begin(),
        riding_next_append(conn, thread, ride),
    ):
        append_events(conn, thread, [NewEvent("node.completed", {"nodeId": "e"})], now=NOW)
    assert _stored(shared_saver, thread) == []

    other = new_thread()
    [config] = put_chain(shared_saver, other, 1, checkpoint_ns="")
    row = (other, "", config["configurable"]["checkpoint_id"], "task-e", 0, "", "out", "json", b"5")
    ride = (gated_writes_upsert, 1, gated_writes_params([row]))
    with one_statement(shared_saver.engine) as conn, conn.begin(), riding_next_append(conn, other, ride):
        append_events(conn, other, [NewEvent("node.completed", {"nodeId": "e"})], now=NOW)
    assert _stored(shared_saver, other) == [("task-e", "out")]
    found = shared_saver.get_tuple(config)
    assert found is not None and found.pending_writes == [("task-e", "out", 5)]
