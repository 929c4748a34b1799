"""Work the server does on its own: recovery at start-up, then a periodic timeout sweep.

The sweep resolves expired interrupts (safe from several replicas at once: each interrupt is
claimed by exactly one) and asks the callback worker to look for undelivered suspensions. Neither
is what makes deadlines fire: the host's own deadline timer applies each timeout when it is due,
and the process that drives a run delivers its callbacks (``wop-langgraph worker`` too); the
sweep is the safety net for what a dead process left behind.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from wop_langgraph.server.state import ServerState
from wop_langgraph.store.engine import pool_size

__all__ = ["Sweeper", "lifespan"]

_log = logging.getLogger("wop_langgraph.server")
#: anyio's own default, kept where the pool has no fixed size.
_DEFAULT_REQUEST_THREADS = 40


def request_threads(state: ServerState) -> int:
    """How many threads run blocking request handlers: the setting, else the database pool's size.

    More threads than pooled connections buys nothing but churn: a burst of requests beyond
    the pool opens connections only to close them when they come back (a new PostgreSQL
    session costs ~1 ms CPU and ~4 ms wall, a pooled one 0.1-0.5 ms), while the extra
    requests would queue for the pool anyway. Queued for a thread, they cost nothing.
    """
    if state.settings.request_threads is not None:
        return state.settings.request_threads
    size = pool_size(state.host.engine)
    return size if size is not None else _DEFAULT_REQUEST_THREADS


class Sweeper:
    """A daemon thread running ``host.sweep()`` and a callback scan every ``interval`` seconds."""

    def __init__(self, state: ServerState, interval: float) -> None:
        self._state = state
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._interval <= 0:
            return
        self._thread = threading.Thread(target=self._loop, name="wop-sweep", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def run_once(self) -> int:
        """One sweep and one callback scan; returns how many interrupts timed out."""
        swept = self._state.host.sweep(wait=False)
        self._state.delivery.scan()
        return swept

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.run_once()
            except Exception:
                _log.exception("the timeout sweep failed; it will run again")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Recover, start the workers, the callback worker and the sweep; stop them on shutdown."""
    state: ServerState = app.state.wop
    to_thread.current_default_thread_limiter().total_tokens = request_threads(state)
    recovered = await run_in_threadpool(functools.partial(state.host.recover, wait=False))
    if recovered:
        _log.info("queued %d unfinished run(s) found at start-up", recovered)
    if state.settings.workers > 0:
        # The workers' own sweep is off: the sweeper below runs it with the callback scan.
        state.host.start_workers(
            state.settings.workers, sweep_seconds=0, defer_seconds=state.settings.worker_defer_seconds
        )
    else:
        # Worker processes drive the runs (and deliver their callbacks): the host's deadline
        # timer here only applies timeouts and queues the runs for them.
        state.host.drive_timeouts = False
    state.delivery.start()
    sweeper = Sweeper(state, state.settings.sweep_interval_seconds)
    sweeper.start()
    state.delivery.scan()
    try:
        yield
    finally:
        sweeper.stop()
        state.delivery.stop()
        await run_in_threadpool(state.host.close)
