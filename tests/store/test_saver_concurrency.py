"""Many writers at once: threads on one saver, savers on one file, OS processes on one file.

SQLite allows one writer at a time; the saver must turn contention into waiting, never into
"database is locked". PostgreSQL must take concurrent upserts of one slot without errors.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from tests.store.conftest import config_of, make_checkpoint, new_thread, put_chain

from wop_langgraph.store import AsyncSQLModelSaver, SQLModelSaver
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table, checkpoints_table

THREADS = 8
PUTS = 50


def _hammer(saver: SQLModelSaver, thread: str, puts: int) -> int:
    """``puts`` checkpoints with a write each on ``thread``, reading back as it goes."""
    config = config_of(thread)
    for step in range(puts):
        config = saver.put(config, make_checkpoint({"step": step}), {"source": "loop", "step": step}, {})
        saver.put_writes(config, [("w", step), ("__interrupt__", [step])], f"task-{step % 3}")
        latest = saver.get_tuple(config_of(thread))
        assert latest is not None and latest.checkpoint["channel_values"] == {"step": step}
    return puts


def _count(saver: SQLModelSaver, prefix: str) -> tuple[int, int]:
    with saver.engine.connect() as conn:
        return (
            conn.execute(
                select(func.count()).where(checkpoints_table.c.thread_id.startswith(prefix))
            ).scalar_one(),
            conn.execute(
                select(func.count()).where(checkpoint_writes_table.c.thread_id.startswith(prefix))
            ).scalar_one(),
        )


def test_eight_threads_writing_through_one_saver(shared_saver: SQLModelSaver) -> None:
    prefix = f"mt-{uuid.uuid4()}"
    with ThreadPoolExecutor(THREADS) as pool:
        done = list(pool.map(lambda i: _hammer(shared_saver, f"{prefix}-{i}", PUTS), range(THREADS)))
    assert done == [PUTS] * THREADS
    assert _count(shared_saver, prefix) == (THREADS * PUTS, THREADS * PUTS * 2)


def test_eight_savers_with_their_own_engines_on_one_database(
    shared_saver: SQLModelSaver, module_db_url: str
) -> None:
    prefix = f"me-{uuid.uuid4()}"
    savers = [SQLModelSaver.from_url(module_db_url) for _ in range(THREADS)]
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            done = list(pool.map(lambda i: _hammer(savers[i], f"{prefix}-{i}", 20), range(THREADS)))
    finally:
        for saver in savers:
            saver.close()
    assert done == [20] * THREADS
    assert _count(shared_saver, prefix) == (THREADS * 20, THREADS * 20 * 2)


def test_concurrent_upserts_of_one_slot_settle_on_one_value(shared_saver: SQLModelSaver) -> None:
    [config] = put_chain(shared_saver, new_thread(), 1)

    def answer(n: int) -> None:
        for round_ in range(10):
            shared_saver.put_writes(config, [("__resume__", [n, round_]), ("out", n)], "same-task")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(answer, range(4)))
    found = shared_saver.get_tuple(config)
    assert found is not None and found.pending_writes is not None
    [resume, out] = found.pending_writes
    assert resume[1] == "__resume__" and resume[2][1] == 9
    assert out[1] == "out" and out[2] in range(4)


async def test_many_concurrent_async_writers(shared_async_saver: AsyncSQLModelSaver) -> None:
    prefix = f"as-{uuid.uuid4()}"

    async def one(i: int) -> None:
        config = await shared_async_saver.aput(config_of(f"{prefix}-{i}"), make_checkpoint({"i": i}), {}, {})
        await shared_async_saver.aput_writes(config, [("w", i)], "task")

    await asyncio.gather(*(one(i) for i in range(40)))
    for i in range(40):
        found = await shared_async_saver.aget_tuple(config_of(f"{prefix}-{i}"))
        assert found is not None and found.pending_writes == [("task", "w", i)]


def _process_main(url: str, prefix: str, threads: int, puts: int, start: Any) -> None:
    saver = SQLModelSaver.from_url(url)
    start.wait(timeout=60)  # both processes write at the same time, not one after the other
    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda i: _hammer(saver, f"{prefix}-{i}", puts), range(threads)))
    finally:
        saver.close()


@pytest.mark.slow
def test_two_processes_hammering_one_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    saver = SQLModelSaver.from_url(url)
    saver.setup()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    workers = [context.Process(target=_process_main, args=(url, f"proc{n}", 2, 40, start)) for n in range(2)]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        # A "database is locked" (or any) error would have ended a worker with a non-zero code.
        assert [w.exitcode for w in workers] == [0, 0]
        assert _count(saver, "proc") == (2 * 2 * 40, 2 * 2 * 40 * 2)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()
        saver.close()
