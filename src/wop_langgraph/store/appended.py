"""Wake-ups for readers of the event log: "something was appended to run X" after its commit.

Readers (SSE streams, long polls) wait here instead of polling the database, so an idle
stream costs no queries. In one process the signal comes from the engine itself: every
transaction that appended events remembers the runs it touched, and its commit wakes their
waiters. Across processes on PostgreSQL, :func:`~wop_langgraph.store.events.append_events`
also sends ``NOTIFY`` on :data:`EVENTS_CHANNEL`; a listener (see :class:`AppendSignals`)
turns those into the same wake-ups. On SQLite shared by several processes, readers fall back
to a slow re-check (``fallback_seconds``).

A wake-up may come a moment before the commit is visible to a new read (the engine's commit
hook runs just before the database commits): readers re-read once after a short pause when a
wake-up found nothing, see :meth:`AppendSignals.wait_async`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import defaultdict
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["APPENDED_KEY", "EVENTS_CHANNEL", "AppendSignals", "signals_for"]

#: PostgreSQL notification channel: payload is the run id.
EVENTS_CHANNEL = "wop_events"
#: ``Connection.info`` key holding the runs the current transaction appended to.
APPENDED_KEY = "wop_appended_runs"

_log = logging.getLogger("wop_langgraph.events")
_registry: dict[int, AppendSignals] = {}
_registry_guard = threading.Lock()


def signals_for(engine: Engine) -> AppendSignals:
    """The (one) :class:`AppendSignals` of ``engine``, created and hooked in on first use."""
    with _registry_guard:
        signals = _registry.get(id(engine))
        if signals is None or signals.engine is not engine:
            signals = AppendSignals(engine)
            _registry[id(engine)] = signals
        return signals


class AppendSignals:
    """Per-run wake-ups for one engine's event log."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._guard = threading.Lock()
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = defaultdict(set)
        self._listener: threading.Thread | None = None
        self._stop = threading.Event()
        event.listen(engine, "commit", self._on_commit)
        event.listen(engine, "rollback", self._on_rollback)

    @property
    def cross_process(self) -> bool:
        """Whether appends by other processes wake this one's readers (PostgreSQL)."""
        return self.engine.dialect.name == "postgresql"

    def bump(self, run_id: str) -> None:
        """Wake every reader waiting on ``run_id``."""
        with self._guard:
            waiters = list(self._waiters.get(run_id, ()))
        for loop, flag in waiters:
            try:
                loop.call_soon_threadsafe(flag.set)
            except RuntimeError:  # that reader's loop has closed
                continue

    async def wait_async(self, run_id: str, timeout: float) -> bool:
        """Wait until something is appended to ``run_id`` (True) or ``timeout`` passes (False)."""
        self.ensure_listening()
        flag = asyncio.Event()
        waiter = (asyncio.get_running_loop(), flag)
        with self._guard:
            self._waiters[run_id].add(waiter)
        try:
            await asyncio.wait_for(flag.wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            with self._guard:
                waiting = self._waiters.get(run_id)
                if waiting is not None:
                    waiting.discard(waiter)
                    if not waiting:
                        del self._waiters[run_id]

    def ensure_listening(self) -> None:
        """On PostgreSQL, start the one listener thread of this engine (idempotent)."""
        if not self.cross_process:
            return
        with self._guard:
            if self._listener is None or not self._listener.is_alive():
                self._listener = threading.Thread(target=self._listen, name="wop-events-listen", daemon=True)
                self._listener.start()

    def close(self) -> None:
        self._stop.set()

    # -- engine hooks ------------------------------------------------------------------------

    def _on_commit(self, conn: Any) -> None:
        runs = conn.info.pop(APPENDED_KEY, None)
        for run_id in runs or ():
            self.bump(run_id)

    def _on_rollback(self, conn: Any) -> None:
        conn.info.pop(APPENDED_KEY, None)

    def _listen(self) -> None:
        while not self._stop.is_set():
            raw = None
            try:
                raw = self.engine.raw_connection()
                driver_conn = raw.driver_connection
                assert driver_conn is not None
                driver_conn.autocommit = True
                driver_conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                while not self._stop.is_set():
                    for note in driver_conn.notifies(timeout=1.0, stop_after=256):
                        self.bump(note.payload)
            except Exception:
                _log.warning("the event listener lost its connection; reconnecting", exc_info=True)
                self._stop.wait(1.0)
            finally:
                if raw is not None:
                    raw.invalidate()  # a connection that listened never goes back to the pool
