"""The sync saver methods, one by one, on both backends (the conformance suite only runs async).

Also what the suite never checks: special slots upserted in place, per-write insert-if-absent
in a mixed batch, ``writes_sort_key`` order across tasks, paging in ``list``, and the exact
rule of what ``prune`` keeps.
"""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langgraph.checkpoint.base import WRITES_IDX_MAP, writes_sort_key
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel._task_status import CONTROL_WRITES
from sqlalchemy import select, text
from tests.store.conftest import config_of, make_checkpoint, new_thread, put_chain

import wop_langgraph.store._saver_base as saver_base
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.store import AsyncSQLModelSaver, SQLModelSaver
from wop_langgraph.store._saver_sql import CONTROL_CHANNELS, NULL_TASK_ID, WRITES_PER_STATEMENT
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table, checkpoints_table


def _pending(saver: SQLModelSaver, config: Any) -> list[tuple[str, str, Any]]:
    found = saver.get_tuple(config)
    assert found is not None and found.pending_writes is not None
    return found.pending_writes


def test_put_then_get_tuple_latest_and_by_id(shared_saver: SQLModelSaver) -> None:
    thread = new_thread()
    first = shared_saver.put(
        {"configurable": {"thread_id": thread, "checkpoint_ns": ""}, "metadata": {"team": "ops"}},
        make_checkpoint({"messages": ["hi"], "count": 1}),
        {"source": "input", "step": -1, "parents": {}, "run_id": "run-1"},
        {},
    )
    second = shared_saver.put(first, make_checkpoint({"count": 2}), {"source": "loop", "step": 0}, {})

    assert set(second["configurable"]) == {"thread_id", "checkpoint_ns", "checkpoint_id"}
    latest = shared_saver.get_tuple(config_of(thread))
    assert latest is not None
    assert latest.config == second
    assert latest.parent_config == first
    assert latest.checkpoint["channel_values"] == {"count": 2}
    assert latest.pending_writes == []

    older = shared_saver.get_tuple(first)
    assert older is not None and older.parent_config is None
    assert older.checkpoint["channel_values"] == {"messages": ["hi"], "count": 1}
    assert older.metadata == {"source": "input", "step": -1, "parents": {}, "run_id": "run-1", "team": "ops"}
    assert shared_saver.get(first) == older.checkpoint


def test_get_tuple_of_unknown_thread_or_id_is_none(shared_saver: SQLModelSaver) -> None:
    thread = new_thread()
    assert shared_saver.get_tuple(config_of(thread)) is None
    put_chain(shared_saver, thread, 1)
    assert shared_saver.get_tuple(config_of(thread, checkpoint_id=str(uuid.uuid4()))) is None
    assert shared_saver.get_tuple(config_of(thread, "other-ns")) is None


def test_pending_writes_come_back_in_writes_sort_key_order(shared_saver: SQLModelSaver) -> None:
    [config] = put_chain(shared_saver, new_thread(), 1)
    batches = [
        ("task-b", "~__pregel_pull, zeta", [("x", 1), ("y", 2)]),
        ("task-a", "~__pregel_push, 0000000001", [("__interrupt__", "q"), ("x", 3)]),
        ("task-c", "", [("x", 4)]),
        ("task-0", "~__pregel_pull, alpha", [("y", 5), ("__error__", "e"), ("x", 6)]),
    ]
    expected: list[tuple[tuple[str, str, int], tuple[str, str, Any]]] = []
    for task_id, task_path, writes in batches:
        shared_saver.put_writes(config, writes, task_id, task_path)
        for i, (channel, value) in enumerate(writes):
            key = writes_sort_key(task_path, task_id, WRITES_IDX_MAP.get(channel, i))
            expected.append((key, (task_id, channel, value)))

    assert _pending(shared_saver, config) == [w for _, w in sorted(expected)]


def test_special_slots_are_replaced_in_place_and_ordinary_writes_kept(shared_saver: SQLModelSaver) -> None:
    [config] = put_chain(shared_saver, new_thread(), 1)
    task = str(uuid.uuid4())

    shared_saver.put_writes(config, [("__interrupt__", ["first?"])], task)
    shared_saver.put_writes(config, [("__interrupt__", ["second?"]), ("__resume__", ["A1"])], task)
    shared_saver.put_writes(config, [("answer", "original"), ("__error__", "e1")], task)
    # Same (task, idx) again: the ordinary write keeps its first value, the special slot moves on.
    shared_saver.put_writes(config, [("answer", "replayed"), ("__error__", "e2")], task)

    assert sorted(_pending(shared_saver, config), key=lambda w: w[1]) == [
        (task, "__error__", "e2"),
        (task, "__interrupt__", ["second?"]),
        (task, "__resume__", ["A1"]),
        (task, "answer", "original"),
    ]


def test_a_slot_written_twice_in_one_batch_keeps_the_last_value(shared_saver: SQLModelSaver) -> None:
    [config] = put_chain(shared_saver, new_thread(), 1)
    task = str(uuid.uuid4())
    shared_saver.put_writes(config, [("__resume__", ["A1"]), ("__resume__", ["A1", "A2"]), ("a", "A1")], task)
    assert _pending(shared_saver, config) == [(task, "__resume__", ["A1", "A2"]), (task, "a", "A1")]


def test_writes_are_attached_to_their_checkpoint_only(shared_saver: SQLModelSaver) -> None:
    first, second = put_chain(shared_saver, new_thread(), 2)
    shared_saver.put_writes(first, [("old", 1)], "t1")
    shared_saver.put_writes(second, [("new", 2)], "t2")
    assert _pending(shared_saver, first) == [("t1", "old", 1)]
    assert _pending(shared_saver, second) == [("t2", "new", 2)]


def test_list_filters_by_namespace_metadata_before_and_limit(shared_saver: SQLModelSaver) -> None:
    thread = new_thread()
    root = put_chain(
        shared_saver,
        thread,
        5,
        metadata=lambda i: {"source": "input" if i % 2 == 0 else "loop", "score": i * 10},
    )
    child = put_chain(shared_saver, thread, 2, checkpoint_ns="sub:1")
    ids = [c["configurable"]["checkpoint_id"] for c in root]

    listed = [t.checkpoint["id"] for t in shared_saver.list(config_of(thread))]
    assert listed == list(reversed(ids))
    everything = [
        t.config["configurable"]["checkpoint_id"]
        for t in shared_saver.list({"configurable": {"thread_id": thread}})
    ]
    assert sorted(everything, reverse=True) == everything
    assert set(everything) == set(ids) | {c["configurable"]["checkpoint_id"] for c in child}
    assert [t.metadata["step"] for t in shared_saver.list(config_of(thread), filter={"source": "input"})] == [
        4,
        2,
        0,
    ]
    assert [
        t.metadata["step"]
        for t in shared_saver.list(config_of(thread), filter={"source": "loop", "score": 30})
    ] == [3]
    assert list(shared_saver.list(config_of(thread), filter={"score": "30"})) == []
    assert [t.checkpoint["id"] for t in shared_saver.list(config_of(thread), before=root[3], limit=2)] == [
        ids[2],
        ids[1],
    ]
    assert [t.checkpoint["id"] for t in shared_saver.list(config_of(thread, checkpoint_id=ids[1]))] == [
        ids[1]
    ]
    assert len(list(shared_saver.list(config_of(thread, "sub:1")))) == 2


def test_list_pages_without_repeating_or_skipping(
    shared_saver: SQLModelSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(saver_base, "LIST_PAGE_SIZE", 3)
    thread = new_thread()
    configs = put_chain(shared_saver, thread, 8) + put_chain(shared_saver, thread, 3, checkpoint_ns="sub:x")
    shared_saver.put_writes(configs[0], [("w", "on the oldest")], "task")

    listed = list(shared_saver.list({"configurable": {"thread_id": thread}}))
    ids = [t.config["configurable"]["checkpoint_id"] for t in listed]
    assert sorted(ids, reverse=True) == ids
    assert set(ids) == {c["configurable"]["checkpoint_id"] for c in configs} and len(ids) == 11
    assert listed[-1].pending_writes == [("task", "w", "on the oldest")]
    assert len(list(shared_saver.list(config_of(thread), limit=7))) == 7


async def test_alist_pages_on_worker_threads(
    shared_saver: SQLModelSaver, shared_async_saver: AsyncSQLModelSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(saver_base, "LIST_PAGE_SIZE", 2)
    thread = new_thread()
    configs = put_chain(shared_saver, thread, 5)
    listed = [t.checkpoint["id"] async for t in shared_async_saver.alist(config_of(thread))]
    assert listed == [c["configurable"]["checkpoint_id"] for c in reversed(configs)]


def test_list_without_config_lists_every_thread(saver: SQLModelSaver) -> None:
    a, b = new_thread(), new_thread()
    put_chain(saver, a, 2)
    put_chain(saver, b, 1, metadata=lambda _: {"source": "update"})
    assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == {a, b}
    assert [t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"source": "update"})] == [
        b
    ]


def test_delete_thread_removes_every_namespace_and_nothing_else(shared_saver: SQLModelSaver) -> None:
    doomed, kept = new_thread(), new_thread()
    for thread in (doomed, kept):
        [config] = put_chain(shared_saver, thread, 1)
        shared_saver.put_writes(config, [("w", 1)], "task")
        put_chain(shared_saver, thread, 1, checkpoint_ns="sub:1")

    shared_saver.delete_thread(doomed)

    assert list(shared_saver.list({"configurable": {"thread_id": doomed}})) == []
    with shared_saver.engine.connect() as conn:
        orphans = conn.execute(
            select(checkpoint_writes_table).where(checkpoint_writes_table.c.thread_id == doomed)
        )
        assert orphans.all() == []
    assert len(list(shared_saver.list({"configurable": {"thread_id": kept}}))) == 2
    assert _pending(shared_saver, config_of(kept)) == [("task", "w", 1)]


def test_delete_for_runs_removes_those_checkpoints_and_their_writes(shared_saver: SQLModelSaver) -> None:
    thread = new_thread()
    run_a, run_b = str(uuid.uuid4()), str(uuid.uuid4())
    configs = put_chain(shared_saver, thread, 3, metadata=lambda i: {"run_id": run_a if i < 2 else run_b})
    shared_saver.put_writes(configs[1], [("w", 1)], "task")

    shared_saver.delete_for_runs([run_a])
    shared_saver.delete_for_runs([])

    assert [t.metadata["run_id"] for t in shared_saver.list(config_of(thread))] == [run_b]
    with shared_saver.engine.connect() as conn:
        left = conn.execute(
            select(checkpoint_writes_table.c.task_id).where(checkpoint_writes_table.c.thread_id == thread)
        )
        assert left.all() == []


def test_copy_thread_copies_the_whole_chain_with_writes(shared_saver: SQLModelSaver) -> None:
    source, target = new_thread(), new_thread()
    configs = put_chain(shared_saver, source, 3)
    put_chain(shared_saver, source, 1, checkpoint_ns="sub:1")
    shared_saver.put_writes(configs[-1], [("__interrupt__", ["q"]), ("w", 1)], "task", "~__pregel_pull, n")

    shared_saver.copy_thread(source, target)

    def summary(thread: str) -> list[tuple[Any, ...]]:
        return [
            (t.config["configurable"]["checkpoint_ns"], t.checkpoint["id"], t.parent_config, t.pending_writes)
            for t in shared_saver.list({"configurable": {"thread_id": thread}})
        ]

    copied = summary(target)
    assert len(copied) == 4
    assert [(ns, cid, w) for ns, cid, _, w in copied] == [(ns, cid, w) for ns, cid, _, w in summary(source)]
    latest = shared_saver.get_tuple(config_of(target))
    assert latest is not None and latest.parent_config == config_of(
        target, "", configs[1]["configurable"]["checkpoint_id"]
    )

    with pytest.raises(ValidationError, match="already has checkpoints"):
        shared_saver.copy_thread(source, target)
    with pytest.raises(ValidationError, match="two different threads"):
        shared_saver.copy_thread(source, source)


def test_prune_keep_latest_and_delete(shared_saver: SQLModelSaver) -> None:
    a, b, untouched = new_thread(), new_thread(), new_thread()
    a_configs = put_chain(shared_saver, a, 4)
    put_chain(shared_saver, a, 2, checkpoint_ns="sub:1")
    shared_saver.put_writes(a_configs[-1], [("w", 1)], "task")
    put_chain(shared_saver, b, 3)
    put_chain(shared_saver, untouched, 3)

    shared_saver.prune([a], strategy="keep_latest")
    shared_saver.prune([b], strategy="delete")
    shared_saver.prune([])

    kept = list(shared_saver.list({"configurable": {"thread_id": a}}))
    assert sorted(t.config["configurable"]["checkpoint_ns"] for t in kept) == ["", "sub:1"]
    root = shared_saver.get_tuple(config_of(a))
    assert root is not None and root.checkpoint["id"] == a_configs[-1]["configurable"]["checkpoint_id"]
    assert root.pending_writes == [("task", "w", 1)]
    assert root.parent_config is None  # its parent is gone
    assert list(shared_saver.list(config_of(b))) == []
    assert len(list(shared_saver.list(config_of(untouched)))) == 3


@pytest.mark.parametrize("strategy", ["keep_latest", "delete"])
def test_prune_keeps_checkpoints_that_own_a_pending_interrupt(
    shared_saver: SQLModelSaver, strategy: str
) -> None:
    thread = new_thread()
    c = put_chain(shared_saver, thread, 6)
    # c[0]: asked, never answered -> pending.
    shared_saver.put_writes(c[0], [("__interrupt__", ["q0"])], "asker")
    # c[1]: asked, answered and finished (an output write) -> not pending.
    shared_saver.put_writes(c[1], [("__interrupt__", ["q1"]), ("__resume__", ["a"])], "asker")
    shared_saver.put_writes(c[1], [("out", 1)], "asker")
    # c[2]: the answer is recorded, the task has not finished -> still pending.
    shared_saver.put_writes(c[2], [("__interrupt__", ["q2"]), ("__resume__", ["a"])], "asker")
    # c[3]: an interrupt written for the input pseudo-task -> not a task's question.
    shared_saver.put_writes(c[3], [("__interrupt__", ["q3"])], NULL_TASK_ID)
    # c[4]: finished with no output of its own: LangGraph records __no_writes__.
    shared_saver.put_writes(c[4], [("__interrupt__", ["q4"]), ("__no_writes__", None)], "asker")

    shared_saver.prune([thread], strategy=strategy)

    remaining = {t.checkpoint["id"] for t in shared_saver.list(config_of(thread))}
    expected = {c[0]["configurable"]["checkpoint_id"], c[2]["configurable"]["checkpoint_id"]}
    if strategy == "keep_latest":
        expected.add(c[5]["configurable"]["checkpoint_id"])
    assert remaining == expected
    survivor = shared_saver.get_tuple(c[2])
    assert survivor is not None and survivor.parent_config is None
    assert survivor.pending_writes == [("asker", "__resume__", ["a"]), ("asker", "__interrupt__", ["q2"])]


def test_prune_refuses_bad_arguments_and_delta_channel_threads(shared_saver: SQLModelSaver) -> None:
    thread = new_thread()
    put_chain(shared_saver, thread, 3, metadata=lambda i: {"counters_since_delta_snapshot": {"log": [i, i]}})
    with pytest.raises(ValidationError, match="unknown prune strategy"):
        shared_saver.prune([thread], strategy="everything")
    with pytest.raises(ValidationError, match="list of ids"):
        shared_saver.prune(thread)
    with pytest.raises(ValidationError, match="DeltaChannel"):
        shared_saver.prune([thread])
    assert len(list(shared_saver.list(config_of(thread)))) == 3
    shared_saver.prune([thread], strategy="delete")  # nothing kept, no history to cut
    assert list(shared_saver.list(config_of(thread))) == []


def test_get_next_version_is_monotonic_and_matches_langgraph(shared_saver: SQLModelSaver) -> None:
    versions = [shared_saver.get_next_version(None)]
    for _ in range(12):
        versions.append(shared_saver.get_next_version(versions[-1]))
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert versions[0].startswith("0" * 31 + "1.")
    assert shared_saver.get_next_version(41).startswith(f"{42:032}.")
    reference = InMemorySaver().get_next_version(versions[-1], None)
    assert reference.split(".")[0] == shared_saver.get_next_version(versions[-1]).split(".")[0]


def test_control_channels_are_langgraphs() -> None:
    assert CONTROL_CHANNELS == CONTROL_WRITES


def test_latest_checkpoint_lookup_is_an_index_scan(shared_saver: SQLModelSaver) -> None:
    thread = new_thread()
    put_chain(shared_saver, thread, 3)
    with shared_saver.engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            plan = conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + shared_saver._sql.read_latest.text, (thread, "", 1, 0, 0, 1)
            ).all()
            details = " ".join(str(row[-1]) for row in plan)
            assert "sqlite_autoindex_wop_checkpoints_1" in details
            assert "TEMP B-TREE" not in details.split("SCAN")[0]
        else:
            conn.execute(text("SET enable_seqscan = off"))
            plan = conn.execute(
                text(
                    "EXPLAIN SELECT checkpoint_id FROM wop_checkpoints WHERE thread_id = :t "
                    "AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"
                ),
                {"t": thread},
            ).all()
            details = " ".join(row[0] for row in plan)
            assert "Index Only Scan Backward" in details or "Index Scan Backward" in details
            assert "Sort" not in details


def test_rows_hold_opaque_serde_pairs_and_json_metadata(shared_saver: SQLModelSaver) -> None:
    thread = new_thread()
    [config] = put_chain(shared_saver, thread, 1, metadata=lambda _: {"run_id": "run-x"})
    shared_saver.put_writes(config, [("w", {"k": 1})], "task")
    with shared_saver.engine.connect() as conn:
        row = conn.execute(select(checkpoints_table).where(checkpoints_table.c.thread_id == thread)).one()
        write = conn.execute(
            select(checkpoint_writes_table).where(checkpoint_writes_table.c.thread_id == thread)
        ).one()
    assert row.type == "msgpack" and isinstance(row.checkpoint, bytes)
    assert row.metadata == {"source": "loop", "step": 0, "parents": {}, "run_id": "run-x"}
    assert row.run_id == "run-x"
    assert (write.channel, write.type, write.idx) == ("w", "msgpack", 0)


def test_a_batch_larger_than_one_statement_is_stored_whole(shared_saver: SQLModelSaver) -> None:
    [config] = put_chain(shared_saver, new_thread(), 1)
    writes = [(f"fan-out-{i}", i) for i in range(WRITES_PER_STATEMENT * 2 + 7)] + [("__interrupt__", ["q"])]
    shared_saver.put_writes(config, writes, "sender", "~__pregel_pull, fan")
    pending = _pending(shared_saver, config)
    assert len(pending) == len(writes)
    assert pending[0] == ("sender", "__interrupt__", ["q"])
    assert sorted(value for _, channel, value in pending if channel != "__interrupt__") == list(
        range(len(writes) - 1)
    )


def test_an_in_memory_database_serves_threads_through_its_one_connection() -> None:
    saver = SQLModelSaver.from_url("sqlite://")
    try:
        saver.setup()
        threads = [new_thread() for _ in range(4)]
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda t: put_chain(saver, t, 20), threads))
        assert [len(list(saver.list(config_of(t)))) for t in threads] == [20] * 4
    finally:
        saver.close()


def test_a_handed_over_checkpoint_answers_the_first_read_of_its_latest_only(
    shared_saver: SQLModelSaver,
) -> None:
    thread, other = new_thread(), new_thread()
    first = shared_saver.put(config_of(thread), make_checkpoint({"count": 1}), {"step": 0}, {})
    shared_saver.put(config_of(other), make_checkpoint({"count": 9}), {"step": 0}, {})
    saved = shared_saver.get_tuple(config_of(thread))
    assert saved is not None
    with shared_saver.handing_over(config_of(thread), saved):
        # Another thread, another namespace and an explicit id are read as usual.
        found = shared_saver.get_tuple(config_of(other))
        assert found is not None and found.checkpoint["channel_values"] == {"count": 9}
        assert shared_saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": "sub"}}) is None
        assert shared_saver.get_tuple(first) is not saved
        # Written meanwhile in the database (behind the holder's back, for the test): the first
        # read of the latest is the handed tuple, the next one reads the database.
        shared_saver.put(first, make_checkpoint({"count": 2}), {"step": 1}, {})
        assert shared_saver.get_tuple(config_of(thread)) is saved
        again = shared_saver.get_tuple(config_of(thread))
        assert again is not None and again.checkpoint["channel_values"] == {"count": 2}
    after = shared_saver.get_tuple(config_of(thread))
    assert after is not None and after is not saved


def test_a_handed_over_absence_answers_the_first_read_of_a_new_thread_with_none(
    shared_saver: SQLModelSaver,
) -> None:
    thread = new_thread()
    with shared_saver.handing_over(config_of(thread), None):
        # Written meanwhile (behind the holder's back, for the test): the first read of the
        # latest answers what was handed (nothing), the next one reads the database.
        shared_saver.put(config_of(thread), make_checkpoint({"count": 1}), {"step": 0}, {})
        assert shared_saver.get_tuple(config_of(thread)) is None
        found = shared_saver.get_tuple(config_of(thread))
        assert found is not None and found.checkpoint["channel_values"] == {"count": 1}


def test_a_read_in_a_copied_context_takes_the_handed_over_checkpoint_for_every_context(
    shared_saver: SQLModelSaver,
) -> None:
    thread = new_thread()
    shared_saver.put(config_of(thread), make_checkpoint({"count": 1}), {"step": 0}, {})
    saved = shared_saver.get_tuple(config_of(thread))
    assert saved is not None
    with shared_saver.handing_over(config_of(thread), saved):
        # asyncio.run and to_thread each copy the context (as an async graph's reads do): the
        # read on the copy takes it for this context too.
        assert asyncio.run(asyncio.to_thread(shared_saver.get_tuple, config_of(thread))) is saved
        fresh = shared_saver.get_tuple(config_of(thread))
        assert fresh is not None and fresh is not saved
