"""The recorder rule: ``put_writes`` hands every batch to the recorder inside its own transaction.

A recorder that appends a row to ``wop_events`` commits with the writes; one that writes and
then raises leaves neither the writes nor its row behind, on both backends and both savers.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Interrupt, interrupt
from sqlalchemy import Connection, func, insert, select
from tests.store.conftest import config_of, new_thread, put_chain

from wop_langgraph.store import AsyncSQLModelSaver, SQLModelSaver, WriteBatch
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table
from wop_langgraph.store.run_tables import EventRow

events = EventRow.__table__  # type: ignore[attr-defined]


class EventRecorder:
    """Appends one ``interrupt.requested`` row per question; with ``fail``, raises afterwards
    on every batch that carries a question."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.batches: list[WriteBatch] = []
        self.writes_seen_in_transaction: list[int] = []

    def record(self, conn: Connection, batch: WriteBatch) -> None:
        self.batches.append(batch)
        self.writes_seen_in_transaction.append(
            conn.execute(
                select(func.count()).where(
                    checkpoint_writes_table.c.thread_id == batch.thread_id,
                    checkpoint_writes_table.c.task_id == batch.task_id,
                )
            ).scalar_one()
        )
        for questions in batch.channel_values("__interrupt__"):
            for question in questions:
                sequence = conn.execute(
                    select(func.count()).select_from(events).where(events.c.run_id == batch.thread_id)
                ).scalar_one()
                conn.execute(
                    insert(events).values(
                        run_id=batch.thread_id,
                        sequence=sequence,
                        event_id=uuid.uuid4().hex,
                        type="interrupt.requested",
                        payload={"id": question.id, "value": question.value},
                        timestamp=datetime.now(UTC),
                        schema_version=1,
                    )
                )
        if self.fail and batch.channel_values("__interrupt__"):
            raise RuntimeError("recorder failed after writing its event")


def _events(saver: SQLModelSaver, thread: str) -> list[dict[str, Any]]:
    with saver.engine.connect() as conn:
        rows = conn.execute(
            select(events.c.payload).where(events.c.run_id == thread).order_by(events.c.sequence)
        )
        return [row.payload for row in rows]


def _stored_writes(saver: SQLModelSaver, thread: str) -> list[str]:
    with saver.engine.connect() as conn:
        rows = conn.execute(
            select(checkpoint_writes_table.c.channel).where(checkpoint_writes_table.c.thread_id == thread)
        )
        return sorted(row.channel for row in rows)


def _recording(url: str, recorder: EventRecorder, saver_type: type[SQLModelSaver] = SQLModelSaver) -> Any:
    return saver_type.from_url(url, recorder=recorder)


def test_recorder_runs_in_the_write_transaction_and_commits_with_it(
    shared_saver: SQLModelSaver, module_db_url: str
) -> None:
    recorder = EventRecorder()
    saver = _recording(module_db_url, recorder)
    try:
        thread = new_thread()
        [config] = put_chain(saver, thread, 1, checkpoint_ns="")
        question = Interrupt(value={"approve": "payment"}, id="i" * 32)
        writes = [("__interrupt__", (question,)), ("log", ["asked"])]
        saver.put_writes(config, writes, "task-1", "~__pregel_pull, approve")
        saver.put_writes(config, [("other", 1)], "task-2")

        [batch, second] = recorder.batches
        assert batch == WriteBatch(
            thread_id=thread,
            checkpoint_ns="",
            checkpoint_id=config["configurable"]["checkpoint_id"],
            task_id="task-1",
            task_path="~__pregel_pull, approve",
            writes=writes,
        )
        assert batch.writes[0][1][0] is question  # as LangGraph passed it, not serialised
        assert second.task_id == "task-2"  # called for every batch, interrupt or not
        assert recorder.writes_seen_in_transaction == [2, 1]  # the uncommitted writes are visible
        assert _events(saver, thread) == [{"id": "i" * 32, "value": {"approve": "payment"}}]
        assert _stored_writes(saver, thread) == ["__interrupt__", "log", "other"]
    finally:
        saver.close()


class InterruptOnlyRecorder(EventRecorder):
    """Declares that it only cares about interrupt batches."""

    channels = frozenset({"__interrupt__"})


def test_a_recorder_naming_its_channels_only_gets_those_batches(
    shared_saver: SQLModelSaver, module_db_url: str
) -> None:
    recorder = InterruptOnlyRecorder()
    saver = _recording(module_db_url, recorder)
    try:
        thread = new_thread()
        [config] = put_chain(saver, thread, 1, checkpoint_ns="")
        saver.put_writes(config, [("other", 1)], "task-0")
        question = Interrupt(value={"approve": "payment"}, id="j" * 32)
        saver.put_writes(config, [("__interrupt__", (question,))], "task-1")
        assert [b.task_id for b in recorder.batches] == ["task-1"]
        assert _events(saver, thread) == [{"id": "j" * 32, "value": {"approve": "payment"}}]
        assert _stored_writes(saver, thread) == ["__interrupt__", "other"]
    finally:
        saver.close()


def test_a_failing_recorder_leaves_nothing_of_the_batch(
    module_db_url: str, shared_saver: SQLModelSaver
) -> None:
    thread = new_thread()
    [config] = put_chain(shared_saver, thread, 1)
    shared_saver.put_writes(config, [("before", 1)], "earlier-task")

    recorder = EventRecorder(fail=True)
    saver = _recording(module_db_url, recorder)
    try:
        with pytest.raises(RuntimeError, match="recorder failed"):
            saver.put_writes(config, [("__interrupt__", (Interrupt(value="q", id="f" * 32),))], "task")
    finally:
        saver.close()

    assert recorder.writes_seen_in_transaction == [1]  # it did write, then raised
    assert _events(shared_saver, thread) == []
    assert _stored_writes(shared_saver, thread) == ["before"]
    found = shared_saver.get_tuple(config)
    assert found is not None and found.pending_writes == [("earlier-task", "before", 1)]


async def test_the_async_saver_keeps_the_same_rule(module_db_url: str, shared_saver: SQLModelSaver) -> None:
    thread = new_thread()
    [config] = put_chain(shared_saver, thread, 1)
    good, bad = EventRecorder(), EventRecorder(fail=True)
    async_good = _recording(module_db_url, good, AsyncSQLModelSaver)
    async_bad = _recording(module_db_url, bad, AsyncSQLModelSaver)
    try:
        await async_good.aput_writes(config, [("__interrupt__", (Interrupt(value="a", id="a" * 32),))], "t1")
        with pytest.raises(RuntimeError):
            await async_bad.aput_writes(
                config, [("__interrupt__", (Interrupt(value="b", id="b" * 32),))], "t2"
            )
    finally:
        async_good.close()
        async_bad.close()
    assert _events(shared_saver, thread) == [{"id": "a" * 32, "value": "a"}]
    assert _stored_writes(shared_saver, thread) == ["__interrupt__"]


def _approval_graph(saver: SQLModelSaver) -> Any:
    def approve(state: dict[str, Any]) -> dict[str, Any]:
        return {"decision": interrupt({"question": "ship it?"})}

    builder = StateGraph(dict)  # type: ignore[type-var]
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver)


def test_a_graph_interrupt_is_recorded_or_not_stored_at_all(module_db_url: str) -> None:
    recorder = EventRecorder()
    saver = _recording(module_db_url, recorder)
    try:
        thread = new_thread()
        graph = _approval_graph(saver)
        [asked] = graph.invoke({"decision": None}, config_of(thread), durability="sync")["__interrupt__"]
        assert _events(saver, thread) == [{"id": asked.id, "value": {"question": "ship it?"}}]

        recorder.fail = True
        failing = new_thread()
        with pytest.raises(RuntimeError, match="recorder failed"):
            graph.invoke({"decision": None}, config_of(failing), durability="sync")
        assert _events(saver, failing) == []
        state = graph.get_state(config_of(failing))
        assert state.next == ("approve",)  # the run got as far as the question...
        assert state.interrupts == () and state.tasks[0].interrupts == ()  # ...which was never stored

        recorder.fail = False
        final = graph.invoke(Command(resume={asked.id: "yes"}), config_of(thread), durability="sync")
        assert final == {"decision": "yes"}
    finally:
        saver.close()
