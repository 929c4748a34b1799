"""Worker functions run in child processes (``spawn``) by the store's concurrency tests.

They live in an importable module, not in a test file, because a spawned process re-imports the
target by name. Each worker runs several threads, each with its own connection and one
transaction per operation, and reports through a multiprocessing queue: one message per process,
``(tag, results, errors)``, where ``errors`` are the ``repr`` of anything a thread raised.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.events import NewEvent, append
from wop_langgraph.store.interrupts import claim

#: How long any participant waits at a start barrier before the test is declared broken.
BARRIER_TIMEOUT_S = 60.0

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _run_threads(count: int, target: Any) -> list[str]:
    errors: list[str] = []
    lock = threading.Lock()

    def guarded(index: int) -> None:
        try:
            target(index)
        except BaseException as exc:  # every failure, "database is locked" included, is reported
            with lock:
                errors.append(repr(exc))

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def append_worker(
    url: str, run_id: str, tag: str, threads: int, per_thread: int, barrier: Any, queue: Any
) -> None:
    """Append ``threads * per_thread`` single-event transactions to ``run_id``.

    Reports ``(tag, [(thread, i, sequence), ...], errors)``.
    """
    engine = make_engine(url, pool_size=threads, max_overflow=0)
    results: list[tuple[int, int, int]] = []
    lock = threading.Lock()

    def appender(index: int) -> None:
        barrier.wait(BARRIER_TIMEOUT_S)
        for i in range(per_thread):
            event = NewEvent(type="log.appended", payload={"writer": tag, "thread": index, "i": i})
            with engine.begin() as conn:
                (stored,) = append(conn, run_id, [event], now=NOW).events
            with lock:
                results.append((index, i, stored.sequence))

    try:
        errors = _run_threads(threads, appender)
    finally:
        engine.dispose()
    queue.put((tag, results, errors))


def claim_worker(url: str, interrupt_id: str, tag: str, threads: int, barrier: Any, queue: Any) -> None:
    """Race ``threads`` claimers for one interrupt, each resuming with its own name.

    Reports ``(tag, [(name, won), ...], errors)``.
    """
    engine = make_engine(url, pool_size=threads, max_overflow=0)
    results: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def claimer(index: int) -> None:
        name = f"{tag}-{index}"
        with engine.connect() as conn:
            barrier.wait(BARRIER_TIMEOUT_S)
            with conn.begin():
                won = claim(
                    conn,
                    interrupt_id,
                    status="resolved",
                    now=NOW,
                    resume_value={"by": name},
                    resolved_by={"claimer": name},
                )
        with lock:
            results.append((name, won))

    try:
        errors = _run_threads(threads, claimer)
    finally:
        engine.dispose()
    queue.put((tag, results, errors))


def run_in_processes(
    target: Callable[..., None],
    args: Callable[[int, Any, Any], tuple[Any, ...]],
    processes: int,
    threads: int,
) -> list[tuple[str, list[Any], list[str]]]:
    """Start ``processes`` spawned workers sharing one start barrier, and collect their reports.

    ``args(p, barrier, queue)`` gives process ``p``'s arguments. Every worker must exit 0.
    """
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes * threads)
    queue = ctx.Queue()
    workers = [ctx.Process(target=target, args=args(p, barrier, queue)) for p in range(processes)]
    for worker in workers:
        worker.start()
    try:
        reports = [queue.get(timeout=120) for _ in workers]
    finally:
        for worker in workers:
            worker.join(timeout=30)
        queue.close()
        queue.join_thread()
    assert [w.exitcode for w in workers] == [0] * processes
    return reports
