"""A recorder may hold the saver's saves (its optional ``hold``) and store them later, together.

The saver hands a held save over as a :data:`~wop_langgraph.store.held.HeldWrite` and stores
nothing; :func:`~wop_langgraph.store.held.storing` runs held saves in the transaction of any
connection (on PostgreSQL in one pipeline), a statement a table for the saves held next to each
other, and they read back as the same saves made directly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Connection, bindparam, func, select
from tests.round_trips import statements
from tests.store.conftest import make_checkpoint, new_thread

from wop_langgraph.store import SQLModelSaver
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table, checkpoints_table
from wop_langgraph.store.held import HeldRows, HeldWrite, run_held, store_ahead, stored_ahead, storing
from wop_langgraph.store.recording import WriteBatch
from wop_langgraph.store.run_tables import runs_table
from wop_langgraph.store.statements import driver_statement


class Holding:
    """A recorder that holds every top-level save and takes no batch itself."""

    channels: frozenset[str] | None = frozenset({"__interrupt__"})

    def __init__(self) -> None:
        self.held: list[tuple[str, WriteBatch | None, HeldWrite]] = []

    def record(self, conn: Connection, batch: WriteBatch) -> None:
        raise AssertionError("no batch with an interrupt in these tests")

    def hold(self, thread_id: str, checkpoint_ns: str, write: HeldWrite, batch: WriteBatch | None) -> bool:
        if checkpoint_ns:
            return False
        self.held.append((thread_id, batch, write))
        return True


def _config(thread_id: str, checkpoint_ns: str = "") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}}


def _save(saver: SQLModelSaver, thread_id: str, checkpoint_ns: str = "") -> None:
    first = saver.put(_config(thread_id, checkpoint_ns), make_checkpoint({"n": 1}), {"step": 0}, {})
    saver.put_writes(first, [("n", 2), ("m", "x")], "task-1")
    saver.put(first, make_checkpoint({"n": 2}), {"step": 1}, {})


def test_held_saves_are_stored_only_when_run_and_read_back_the_same(db_url: str) -> None:
    recorder = Holding()
    saver = SQLModelSaver.from_url(db_url, recorder=recorder)
    plain = SQLModelSaver.from_url(db_url)
    saver.setup()
    try:
        held, direct = new_thread(), new_thread()
        _save(saver, held)
        _save(plain, direct)
        assert [(t, b is None) for t, b, _ in recorder.held] == [(held, True), (held, False), (held, True)]
        assert recorder.held[1][1] is not None and recorder.held[1][1].task_id == "task-1"
        assert saver.get_tuple(_config(held)) is None  # nothing stored yet
        with saver.engine.begin() as conn:
            storing(conn, [write for _, _, write in recorder.held])
        for thread in (held, direct):
            history = list(plain.list(_config(thread)))
            assert [t.checkpoint["channel_values"] for t in history] == [{"n": 2}, {"n": 1}]
            assert history[1].pending_writes == [("task-1", "n", 2), ("task-1", "m", "x")]
    finally:
        saver.close()
        plain.close()


def test_a_save_the_recorder_does_not_hold_is_stored_at_once(db_url: str) -> None:
    recorder = Holding()
    saver = SQLModelSaver.from_url(db_url, recorder=recorder)
    saver.setup()
    try:
        thread = new_thread()
        _save(saver, thread, checkpoint_ns="child:1")  # a subgraph's: not held by this recorder
        assert recorder.held == []
        saved = saver.get_tuple(_config(thread, "child:1"))
        assert saved is not None and saved.checkpoint["channel_values"] == {"n": 2}
    finally:
        saver.close()


def test_held_saves_that_fail_store_none(db_url: str) -> None:
    recorder = Holding()
    saver = SQLModelSaver.from_url(db_url, recorder=recorder)
    saver.setup()
    try:
        thread = new_thread()
        _save(saver, thread)

        def broken(conn: Connection) -> None:
            raise RuntimeError("the third save failed")

        first, second, _ = (write for _, _, write in recorder.held)
        with pytest.raises(RuntimeError, match="the third save failed"), saver.engine.begin() as conn:
            storing(conn, [first, second, broken])
        assert saver.get_tuple(_config(thread)) is None  # all of them rolled back
    finally:
        saver.close()


class StoringFirst(Holding):
    """Holds the top-level saves, and stores them first as it records a batch with an
    interrupt (as the host's recorder does while a drive listens)."""

    def __init__(self, *, store: bool = True, fail: bool = False) -> None:
        super().__init__()
        self.store, self.fail = store, fail

    def stores_first(self, batch: WriteBatch) -> bool:
        return True

    def record(self, conn: Connection, batch: WriteBatch) -> None:
        if self.store:
            storing(conn, [write for _, _, write in self.held])
        if self.fail:
            raise RuntimeError("the recorder failed")


def _ask(saver: SQLModelSaver, thread_id: str) -> None:
    """Two held steps, then a task's interrupt on the second (a batch the recorder takes)."""
    first = saver.put(_config(thread_id), make_checkpoint({"n": 1}), {"step": 0}, {})
    saver.put_writes(first, [("n", 2)], "task-1")
    second = saver.put(first, make_checkpoint({"n": 2}), {"step": 1}, {})
    saver.put_writes(second, [("__interrupt__", ("ask",)), ("m", "x")], "task-2")


def test_a_batch_whose_recorder_stores_first_goes_with_what_it_stores(db_url: str) -> None:
    recorder = StoringFirst()
    saver = SQLModelSaver.from_url(db_url, recorder=recorder)
    saver.setup()
    try:
        thread = new_thread()
        with statements() as seen:
            _ask(saver, thread)
        saved = saver.get_tuple(_config(thread))
        assert saved is not None and saved.checkpoint["channel_values"] == {"n": 2}
        assert [(t, c) for t, c, _ in saved.pending_writes or []] == [
            ("task-2", "__interrupt__"),
            ("task-2", "m"),
        ]
        if saver.engine.dialect.name == "postgresql":
            saves = [(s.split(" (")[0], piped) for s, _, piped in seen if s.startswith("INSERT INTO wop_")]
            # The held saves, then the batch's own writes, all in one pipeline: a statement a
            # table (two checkpoints; the first step's writes and the batch's).
            assert saves == [
                ("INSERT INTO wop_checkpoints", True),
                ("INSERT INTO wop_checkpoint_writes", True),
            ], seen
    finally:
        saver.close()


@pytest.mark.parametrize("fail", [False, True])
def test_a_batch_whose_recorder_stores_nothing_is_stored_unless_it_fails(db_url: str, fail: bool) -> None:
    recorder = StoringFirst(store=False, fail=fail)
    saver = SQLModelSaver.from_url(db_url, recorder=recorder)
    saver.setup()
    try:
        thread = new_thread()
        if fail:
            with pytest.raises(RuntimeError, match="the recorder failed"):
                _ask(saver, thread)
        else:
            _ask(saver, thread)
        with saver.engine.begin() as conn:  # the held checkpoints, so that the writes can be read
            storing(conn, [write for _, batch, write in recorder.held if batch is None])
        saved = saver.get_tuple(_config(thread))
        assert saved is not None
        expected = [] if fail else [("task-2", "__interrupt__"), ("task-2", "m")]
        assert [(t, c) for t, c, _ in saved.pending_writes or []] == expected
    finally:
        saver.close()


def _held_saves(saver: SQLModelSaver) -> tuple[str, list[HeldWrite]]:
    thread = new_thread()
    _save(saver, thread)
    held = [write for t, _, write in saver.recorder.held if t == thread]  # type: ignore[union-attr]
    return thread, held


_RUNS = select(runs_table.c.run_id).where(runs_table.c.run_id == bindparam("any_run"))


def test_saves_stored_ahead_go_with_the_next_statement_or_as_the_block_ends(db_url: str) -> None:
    saver = SQLModelSaver.from_url(db_url, recorder=Holding())
    saver.setup()
    postgres = saver.engine.dialect.name == "postgresql"
    try:
        thread, held = _held_saves(saver)
        with saver.engine.begin() as conn, statements() as seen, stored_ahead(conn, held):
            assert driver_statement(_RUNS).named(conn, {"any_run": "none"}) == []
        if postgres:  # the saves (a statement a table), then the statement: one pipeline
            assert len(seen) == 3 and all(piped for *_, piped in seen), seen
        assert saver.get_tuple(_config(thread)).checkpoint["channel_values"] == {"n": 2}  # type: ignore[union-attr]

        thread, held = _held_saves(saver)
        with saver.engine.begin() as conn, stored_ahead(conn, held):
            pass  # no statement came: stored as the block ends
        assert saver.get_tuple(_config(thread)) is not None

        thread, held = _held_saves(saver)
        with pytest.raises(RuntimeError), saver.engine.begin() as conn, stored_ahead(conn, held):
            raise RuntimeError("the block failed")
        assert saver.get_tuple(_config(thread)) is None
        with saver.engine.begin() as conn:  # nothing left behind on the pooled connection
            assert store_ahead(conn) == []
    finally:
        saver.close()


def test_saves_stored_ahead_never_go_in_a_savepoint(db_url: str) -> None:
    saver = SQLModelSaver.from_url(db_url, recorder=Holding())
    saver.setup()
    try:
        thread, held = _held_saves(saver)
        with saver.engine.begin() as conn, stored_ahead(conn, held):
            savepoint = conn.begin_nested()
            driver_statement(_RUNS).named(conn, {"any_run": "none"})
            savepoint.rollback()  # rolls back what ran in it: the saves waited
        assert saver.get_tuple(_config(thread)).checkpoint["channel_values"] == {"n": 2}  # type: ignore[union-attr]
    finally:
        saver.close()


@contextmanager
def _holding_saver(db_url: str) -> Iterator[tuple[SQLModelSaver, Holding]]:
    """A saver over ``db_url`` whose recorder holds every top-level save, and that recorder."""
    recorder = Holding()
    saver = SQLModelSaver.from_url(db_url, recorder=recorder)
    saver.setup()
    try:
        yield saver, recorder
    finally:
        saver.close()


def _stored(saver: SQLModelSaver, thread_id: str) -> tuple[list[Any], list[Any]]:
    """The thread's checkpoint rows and write rows as stored, in key order."""
    cps, writes = checkpoints_table, checkpoint_writes_table
    with saver.engine.connect() as conn:
        checkpoints = conn.execute(
            select(cps.c.checkpoint_id, cps.c.parent_checkpoint_id, cps.c.checkpoint, cps.c.metadata)
            .where(cps.c.thread_id == thread_id)
            .order_by(cps.c.checkpoint_id)
        ).all()
        stored = conn.execute(
            select(writes.c.checkpoint_id, writes.c.task_id, writes.c.idx, writes.c.channel, writes.c.blob)
            .where(writes.c.thread_id == thread_id)
            .order_by(writes.c.checkpoint_id, writes.c.task_id, writes.c.idx)
        ).all()
    return [tuple(r) for r in checkpoints], [tuple(r) for r in stored]


def _saves_under_one_key(saver: SQLModelSaver, thread_id: str, checkpoint: Any) -> None:
    """The same checkpoint put twice (the second replaces the first); writes of one task under
    the same slots twice: an ordinary write (the first stays) and a special slot, the task's
    error (the second replaces the first)."""
    first = saver.put(_config(thread_id), checkpoint, {"step": 0}, {})
    saver.put_writes(first, [("n", 2), ("__error__", "first failure")], "task-1")
    saver.put_writes(first, [("n", 3), ("__error__", "second failure")], "task-1")
    again = {**checkpoint, "channel_values": {"n": 5}}
    saver.put(_config(thread_id), again, {"step": 0, "again": True}, {})  # type: ignore[arg-type]


def test_held_saves_under_one_key_are_stored_as_saving_them_in_turn_stores_them(db_url: str) -> None:
    plain = SQLModelSaver.from_url(db_url)
    with _holding_saver(db_url) as (saver, recorder), contextlib.closing(plain):
        held, direct = new_thread(), new_thread()
        checkpoint = make_checkpoint({"n": 1})  # (one id for both threads, to compare their rows)
        _saves_under_one_key(saver, held, checkpoint)
        _saves_under_one_key(plain, direct, checkpoint)
        assert len(recorder.held) == 4
        with saver.engine.begin() as conn, statements() as seen:
            storing(conn, [write for _, _, write in recorder.held])
        if saver.engine.dialect.name == "postgresql":  # one statement a table
            assert [s.split(" (")[0] for s, *_ in seen] == [
                "INSERT INTO wop_checkpoints",
                "INSERT INTO wop_checkpoint_writes",
            ], seen
        assert _stored(saver, held) == _stored(plain, direct)
        saved = saver.get_tuple(_config(held))
        assert saved is not None and saved.checkpoint["channel_values"] == {"n": 5}
        assert saved.metadata["again"] is True
        assert sorted((c, v) for _, c, v in saved.pending_writes or []) == [
            ("__error__", "second failure"),
            ("n", 2),
        ]


def test_held_saves_keep_their_order_around_other_writes(db_url: str) -> None:
    """Rows merge only with the saves held next to them: a write between two saves sees the
    first stored and not the second."""
    with _holding_saver(db_url) as (saver, _):
        thread, held = _held_saves(saver)
        assert all(isinstance(write, HeldRows) for write in held)
        first, writes, second = held
        counted: list[int] = []
        count = (
            select(func.count()).select_from(checkpoints_table).where(checkpoints_table.c.thread_id == thread)
        )

        def between(conn: Connection) -> None:
            counted.append(conn.execute(count).scalar_one())

        with saver.engine.begin() as conn:
            run_held(conn, [first, writes, between, second])
            counted.append(conn.execute(count).scalar_one())
        assert counted == [1, 2]
        history = list(saver.list(_config(thread)))
        assert [t.checkpoint["channel_values"] for t in history] == [{"n": 2}, {"n": 1}]


def test_held_writes_beyond_one_statement_are_all_stored(db_url: str) -> None:
    with _holding_saver(db_url) as (saver, recorder):
        thread = new_thread()
        first = saver.put(_config(thread), make_checkpoint({"n": 1}), {"step": 0}, {})
        for task in ("task-1", "task-2"):  # 2 x 60 rows: more than one statement holds
            saver.put_writes(first, [(f"c{i}", i) for i in range(60)], task)
        with saver.engine.begin() as conn, statements() as seen:
            storing(conn, [write for _, _, write in recorder.held])
        if saver.engine.dialect.name == "postgresql":
            assert [s.split(" (")[0] for s, *_ in seen] == [
                "INSERT INTO wop_checkpoints",
                "INSERT INTO wop_checkpoint_writes",
                "INSERT INTO wop_checkpoint_writes",
            ], seen
        saved = saver.get_tuple(_config(thread))
        assert saved is not None
        assert sorted((t, c, v) for t, c, v in saved.pending_writes or []) == sorted(
            (t, f"c{i}", i) for t in ("task-1", "task-2") for i in range(60)
        )
