"""Workers: threads that take queued runs and drive them, woken by enqueues or a slow poll.

In one process, an enqueue by the same host wakes a worker at once. Across processes on
PostgreSQL a listener thread waits on ``LISTEN`` for the queue's notifications. For what no
wake-up announces (a missed notification, another process on SQLite, a lease that ran out)
ONE poller per pool looks every ``poll_seconds`` with a single indexed read and wakes the idle
workers only when a run is claimable: an idle process costs one read per interval, however
many workers it has. The pool also runs the timeout sweep every ``sweep_seconds``.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable

from wop_langgraph.host.execution import Executor
from wop_langgraph.host.foreground import Foreground, at_step_boundary
from wop_langgraph.store.engine import Engine
from wop_langgraph.store.run_queue import CANCEL_CHANNEL, QUEUE_CHANNEL

__all__ = ["WorkerPool"]

_log = logging.getLogger("wop_langgraph.worker")


class WorkerPool:
    """``concurrency`` worker threads over one :class:`Executor`.

    Args:
        poll_seconds: how often the pool's one poller looks for claimable runs that no wake-up
            announced (0: never; then only enqueues here and notifications wake the workers).
        sweep: the timeout sweep, run every ``sweep_seconds`` (0: never).
        foreground: the requests this process is answering; before taking a run, and between
            the steps of a sync graph, a worker waits until none is left, at most
            ``defer_seconds`` each time (see :mod:`.foreground`).
    """

    def __init__(
        self,
        executor: Executor,
        concurrency: int = 4,
        *,
        poll_seconds: float = 1.0,
        sweep: Callable[[], int] | None = None,
        sweep_seconds: float = 5.0,
        foreground: Foreground | None = None,
        defer_seconds: float = 0.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.executor = executor
        self.concurrency = concurrency
        self.poll_seconds = poll_seconds
        self._sweep = sweep
        self._sweep_seconds = sweep_seconds
        self._foreground = foreground
        self._defer_seconds = defer_seconds
        self._wake = threading.Condition()
        self._signals = 0
        self._idle = 0  # workers waiting for a signal
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def idle(self) -> int:
        """How many workers wait for work now (none of them drives a run)."""
        return self._idle

    def start(self) -> None:
        """Start the workers, the poller (and, on PostgreSQL, the notification listener)."""
        if self._threads:
            return
        self._stop.clear()
        for index in range(self.concurrency):
            self._spawn(self._work, f"wop-worker-{index}")
        if self.poll_seconds > 0:
            self._spawn(self._poll, "wop-poll")
        if self._sweep is not None and self._sweep_seconds > 0:
            self._spawn(self._sweep_loop, "wop-sweep")
        if self.executor.engine.dialect.name == "postgresql":
            self._spawn(self._listen, "wop-listen")

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the workers to stop after their current pass and wait for them."""
        self._stop.set()
        self.wake(all_workers=True)
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []

    def wake(self, *, all_workers: bool = False) -> None:
        """A run was queued: let an idle worker (or every worker) look now."""
        with self._wake:
            # A signal is one claim attempt; more than one per worker would only be wasted reads.
            self._signals = min(self._signals + (self.concurrency if all_workers else 1), self.concurrency)
            if all_workers:
                self._wake.notify_all()
            else:
                self._wake.notify()

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _work(self) -> None:
        if self._foreground is not None and self._defer_seconds > 0:
            with self._foreground.deferring(self._defer_seconds):
                self._work_loop()
        else:
            self._work_loop()

    def _work_loop(self) -> None:
        while not self._stop.is_set():
            at_step_boundary()  # before taking a run, as between its steps
            try:
                claimed = self.executor.claim_next()
            except Exception:
                _log.exception("claiming a queued run failed; retrying")
                claimed = None
                self._stop.wait(self.poll_seconds or 1.0)  # the database is away: do not spin
            if claimed is not None:
                try:
                    self.executor.drive(claimed)
                except Exception:
                    run_id = claimed.claim.run_id
                    _log.exception("driving run %s failed; another worker will retry it", run_id)
                continue
            with self._wake:
                self._idle += 1
                try:
                    # No timeout: the poller, an enqueue here or a notification wakes us.
                    while not self._signals and not self._stop.is_set():
                        self._wake.wait()
                    if self._signals:
                        self._signals -= 1
                finally:
                    self._idle -= 1

    def _poll(self) -> None:
        """The slow fallback: wake the idle workers when a run is claimable that no one announced."""
        # Jitter keeps the pollers of many processes from polling in step.
        while not self._stop.wait(self.poll_seconds * random.uniform(0.8, 1.2)):
            with self._wake:
                if not self._idle:
                    continue  # every worker is busy and looks again when its drive ends
            try:
                found = self.executor.has_claimable()
            except Exception:
                _log.warning("polling the run queue failed; retrying", exc_info=True)
                continue
            if found:
                self.wake(all_workers=True)

    def _sweep_loop(self) -> None:
        assert self._sweep is not None
        while not self._stop.wait(self._sweep_seconds):
            try:
                self._sweep()
            except Exception:
                _log.exception("the timeout sweep failed; it will run again")

    def _listen(self) -> None:
        """Wake on the queue's PostgreSQL notifications; stop drives of runs cancelled elsewhere."""
        while not self._stop.is_set():
            try:
                self._listen_once(self.executor.engine)
            except Exception:
                _log.warning("the queue listener lost its connection; reconnecting", exc_info=True)
                self._stop.wait(1.0)

    def _listen_once(self, engine: Engine) -> None:
        raw = engine.raw_connection()
        try:
            driver_conn = raw.driver_connection
            assert driver_conn is not None
            driver_conn.autocommit = True
            driver_conn.execute(f"LISTEN {QUEUE_CHANNEL}")
            driver_conn.execute(f"LISTEN {CANCEL_CHANNEL}")
            while not self._stop.is_set():
                for note in driver_conn.notifies(timeout=1.0, stop_after=64):
                    if note.channel == CANCEL_CHANNEL:
                        self.executor.cancel_local(note.payload)
                    else:
                        self.wake()
        finally:
            raw.invalidate()  # a connection that listened never goes back to the pool
