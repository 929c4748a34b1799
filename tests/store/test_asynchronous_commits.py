"""Saves that record nothing may commit asynchronously (``SaverBase.committing_asynchronously``).

On PostgreSQL such a save is one statement that turns ``synchronous_commit`` off for its own
transaction, so its commit returns without waiting for the WAL flush; outside the block, and
for writes a recorder takes (what they record is seen by others), commits stay synchronous.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from tests.round_trips import round_trips
from tests.store.conftest import make_checkpoint, new_thread

from wop_langgraph.store import AsyncSQLModelSaver, SQLModelSaver
from wop_langgraph.store.engine import is_sqlite

SWITCH = "set_config('synchronous_commit', 'off', true)"


def _config(thread_id: str) -> dict[str, dict[str, str]]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _save_one(saver: SQLModelSaver, thread_id: str) -> None:
    """A checkpoint of ``thread_id`` and one write of it."""
    stored = saver.put(_config(thread_id), make_checkpoint({"n": 1}), {"step": 0}, {})
    saver.put_writes(stored, [("n", 2)], "task-1")


def test_a_save_in_the_block_switches_its_own_commit_to_asynchronous(postgres_url: str) -> None:
    saver = SQLModelSaver.from_url(postgres_url)
    saver.setup()
    try:
        thread = new_thread()
        with round_trips() as inside, saver.committing_asynchronously():
            _save_one(saver, thread)
        with round_trips() as outside:
            _save_one(saver, new_thread())
        # One statement each, in autocommit, with the switch; the same saves outside without it.
        assert [sent.endswith(SWITCH) for sent in inside] == [True, True], inside
        assert len(outside) == 2 and not any(SWITCH in sent for sent in outside), outside
        saved = saver.get_tuple(_config(thread))
        assert saved is not None and saved.checkpoint["channel_values"] == {"n": 1}
        assert saved.pending_writes == [("task-1", "n", 2)]
        # The switch holds for the statement's own transaction only, until its commit.
        with saver.engine.connect() as conn:
            with conn.begin():
                conn.execute(text(f"SELECT {SWITCH}"))
                assert conn.execute(text("SHOW synchronous_commit")).scalar() == "off"
            assert conn.execute(text("SHOW synchronous_commit")).scalar() == "on"
    finally:
        saver.close()


def test_an_async_saver_keeps_the_block_on_its_worker_threads(postgres_url: str) -> None:
    saver = AsyncSQLModelSaver.from_url(postgres_url)
    saver.setup()

    async def save() -> None:
        stored = await saver.aput(_config(new_thread()), make_checkpoint({"n": 1}), {"step": 0}, {})
        await saver.aput_writes(stored, [("n", 2)], "task-1")

    try:
        with round_trips() as sent, saver.committing_asynchronously():
            asyncio.run(save())
        assert [s.endswith(SWITCH) for s in sent] == [True, True], sent
    finally:
        saver.close()


def test_sqlite_saves_the_same_way_in_the_block(saver: SQLModelSaver) -> None:
    thread = new_thread()
    with saver.committing_asynchronously():
        _save_one(saver, thread)
    saved = saver.get_tuple(_config(thread))
    assert saved is not None and saved.pending_writes == [("task-1", "n", 2)]
    if is_sqlite(saver.engine):
        assert saver._sql.upsert_checkpoint_asynchronously is saver._sql.upsert_checkpoint
