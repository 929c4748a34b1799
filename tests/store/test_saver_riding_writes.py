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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Connection, select
from tests.round_trips import round_trips
from tests.store.conftest import new_thread, put_chain

from wop_langgraph.store import SQLModelSaver, WriteBatch
from wop_langgraph.store._saver_sql import gated_writes_params, gated_writes_upsert
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table
from wop_langgraph.store.engine import one_statement
from wop_langgraph.store.events import (
    NewEvent,
    NextAppend,
    RideNotTaken,
    RidingWrite,
    RunLogClosed,
    append,
    read_events,
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

    def record(self, conn: Connection, batch: WriteBatch, ahead: NextAppend | None = None) -> None:
        self.recorded.append(batch.task_id)
        if batch.task_id in self.skip:
            return
        event = NewEvent("node.completed", {"nodeId": batch.task_id}, event_id=f"end-{batch.task_id}")
        with contextlib.suppress(RunLogClosed):
            append(conn, batch.thread_id, [event], now=NOW, once=True, ahead=ahead)


def _log(saver: SQLModelSaver, thread: str) -> list[str]:
    with saver.engine.connect() as conn:
        return [e.type for e in read_events(conn, thread)]


def _stored(saver: SQLModelSaver, thread: str) -> list[tuple[str, str]]:
    table = checkpoint_writes_table
    with saver.engine.connect() as conn:
        rows = conn.execute(select(table.c.task_id, table.c.channel).where(table.c.thread_id == thread))
        return sorted((row.task_id, row.channel) for row in rows)


@dataclass
class Riding:
    """A saver with a :class:`TaskEndRecorder`, and a thread with one checkpoint."""

    saver: SQLModelSaver
    recorder: TaskEndRecorder
    thread: str
    config: Any

    @property
    def postgres(self) -> bool:
        return self.saver.engine.dialect.name == "postgresql"

    def close_log(self) -> None:
        with self.saver.engine.begin() as conn:
            append(conn, self.thread, [NewEvent("run.cancelled", {"reason": "test"})], now=NOW, close=True)


@pytest.fixture
def riding(module_db_url: str, shared_saver: SQLModelSaver) -> Iterator[Riding]:
    recorder = TaskEndRecorder()
    saver = SQLModelSaver.from_url(module_db_url, recorder=recorder)
    try:
        thread = new_thread()
        [config] = put_chain(saver, thread, 1, checkpoint_ns="")
        yield Riding(saver, recorder, thread, config)
    finally:
        saver.close()


def test_a_batch_and_its_end_are_one_statement_on_postgresql(riding: Riding) -> None:
    with round_trips() as sent:
        riding.saver.put_writes(riding.config, [("out", 1), ("log", ["done"])], "task-a")
    assert _stored(riding.saver, riding.thread) == [("task-a", "log"), ("task-a", "out")]
    assert _log(riding.saver, riding.thread) == ["node.completed"]
    if riding.postgres:
        # The writes, the counter and the event: one statement, in autocommit (no BEGIN,
        # no COMMIT); the usual way sends BEGIN, the writes, the append and COMMIT.
        assert len(sent) == 1, sent
        assert sent[0].startswith("WITH reserved"), sent


def test_a_batch_whose_recorder_appends_nothing_is_stored_alone(riding: Riding) -> None:
    riding.recorder.skip.add("task-b")
    with round_trips() as sent:
        riding.saver.put_writes(riding.config, [("out", 2)], "task-b")
    assert _stored(riding.saver, riding.thread) == [("task-b", "out")]
    assert _log(riding.saver, riding.thread) == []
    if riding.postgres:
        assert len(sent) == 1 and sent[0].startswith("INSERT INTO wop_checkpoint_writes"), sent


def test_a_batch_whose_end_is_logged_already_is_stored_and_logged_once(riding: Riding) -> None:
    """A task run again after a crash that kept its end but not its writes: the append that the
    writes rode in logs nothing, so the batch is stored the usual way, the end logged once."""
    ended = NewEvent("node.completed", {"nodeId": "task-c"}, event_id="end-task-c")
    with riding.saver.engine.begin() as conn:
        append(conn, riding.thread, [ended], now=NOW)
    riding.saver.put_writes(riding.config, [("out", 3)], "task-c")
    assert _stored(riding.saver, riding.thread) == [("task-c", "out")]
    assert _log(riding.saver, riding.thread) == ["node.completed"]
    assert riding.recorder.recorded == (["task-c", "task-c"] if riding.postgres else ["task-c"])


def test_a_batch_of_a_run_whose_log_closed_is_stored_with_nothing_logged(riding: Riding) -> None:
    riding.close_log()
    riding.saver.put_writes(riding.config, [("out", 4)], "task-d")
    assert _stored(riding.saver, riding.thread) == [("task-d", "out")]
    assert _log(riding.saver, riding.thread) == ["run.cancelled"]


def _ride(riding: Riding) -> RidingWrite:
    """One write row of the thread's checkpoint (``out`` = 5, task ``task-e``), as a riding upsert."""
    checkpoint_id = riding.config["configurable"]["checkpoint_id"]
    row = (riding.thread, "", checkpoint_id, "task-e", 0, "", "out", "json", b"5")
    return gated_writes_upsert, 1, gated_writes_params([row])


def _append_end_carrying(riding: Riding) -> None:
    """Log an end in autocommit, the thread's riding upsert in its statement."""
    engine = riding.saver.engine
    ahead = NextAppend(riding.thread, ride=_ride(riding))
    with one_statement(engine) as conn, conn.begin():
        append(conn, riding.thread, [NewEvent("node.completed", {"nodeId": "e"})], now=NOW, ahead=ahead)
    assert ahead.rode


def test_riding_writes_are_stored_only_with_the_events(riding: Riding) -> None:
    """The saver's riding upsert reads the append's gate: no events logged, no writes stored."""
    if not riding.postgres:
        pytest.skip("writes ride in an append's statement on PostgreSQL only")
    _append_end_carrying(riding)
    assert _stored(riding.saver, riding.thread) == [("task-e", "out")]
    found = riding.saver.get_tuple(riding.config)
    assert found is not None and found.pending_writes == [("task-e", "out", 5)]

    closed = Riding(riding.saver, riding.recorder, new_thread(), None)
    [closed.config] = put_chain(riding.saver, closed.thread, 1, checkpoint_ns="")
    closed.close_log()
    with pytest.raises(RideNotTaken):
        _append_end_carrying(closed)
    assert _stored(riding.saver, closed.thread) == []
