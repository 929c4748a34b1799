"""Wake-ups for readers of the event log: "something was appended to run X" after its commit.

Readers (SSE streams, long polls) wait here instead of polling the database, so an idle
stream costs no queries. In one process the signal comes from the engine itself: every
transaction that appended events remembers the runs it touched, and once its commit is done
(the connection goes back to the pool, or begins its next transaction) their waiters wake.
Across processes on PostgreSQL, :func:`~wop_langgraph.store.events.append` also sends
``NOTIFY`` on :data:`EVENTS_CHANNEL`, which the database delivers after the commit; a
listener (see :class:`AppendSignals`) turns those into the same wake-ups. On SQLite shared by
several processes, readers fall back to a slow re-check.

No wake-up is lost between a reader's read and its wait: a reader holds a :class:`RunWatch`
for as long as it reads, and arms it *before* each read, so a commit that the read missed
has already set it (see :meth:`AppendSignals.watch`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["APPENDED_KEY", "EVENTS_CHANNEL", "AppendSignals", "RunWatch", "release_signals", "signals_for"]

#: PostgreSQL notification channel: payload is the run id.
EVENTS_CHANNEL = "wop_events"
#: ``Connection.info`` key holding the runs the current transaction appended to.
APPENDED_KEY = "wop_appended_runs"
#: ``Connection.info`` key holding the runs of a commit under way, woken once it is done.
_COMMITTED_KEY = "wop_committed_runs"

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


def release_signals(engine: Engine) -> None:
    """Stop the wake-ups of ``engine`` (its listener thread ends): call it before disposing of it."""
    with _registry_guard:
        signals = _registry.get(id(engine))
        if signals is None or signals.engine is not engine:
            return
        del _registry[id(engine)]
    signals.close()


class RunWatch:
    """One reader's interest in one run: set by every append committed after :meth:`arm`."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._flag = asyncio.Event()

    def arm(self) -> None:
        """Forget earlier wake-ups: call it just before reading the log."""
        self._flag.clear()

    async def wait(self, timeout: float) -> bool:
        """Whether an append committed since :meth:`arm` (at once if one did), else False at ``timeout``."""
        try:
            await asyncio.wait_for(self._flag.wait(), timeout)
            return True
        except TimeoutError:
            return False

    def _wake(self) -> None:
        with suppress(RuntimeError):  # the reader's loop may have closed
            self._loop.call_soon_threadsafe(self._flag.set)


class AppendSignals:
    """Per-run wake-ups for one engine's event log."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._guard = threading.Lock()
        self._watches: dict[str, set[RunWatch]] = defaultdict(set)
        self._listener: threading.Thread | None = None
        self._stop = threading.Event()
        event.listen(engine, "commit", self._on_commit)
        event.listen(engine, "rollback", self._on_rollback)
        # The commit hook runs before the database commits; wake readers only once it is done:
        # when the connection next begins a transaction or goes back to the pool.
        event.listen(engine, "begin", self._on_begin)
        event.listen(engine, "checkin", self._on_checkin)

    @property
    def cross_process(self) -> bool:
        """Whether appends by other processes wake this one's readers (PostgreSQL)."""
        return self.engine.dialect.name == "postgresql"

    def bump(self, run_id: str) -> None:
        """Wake every reader watching ``run_id``."""
        with self._guard:
            watches = list(self._watches.get(run_id, ()))
        for watch in watches:
            watch._wake()

    @contextmanager
    def watch(self, run_id: str) -> Iterator[RunWatch]:
        """Watch ``run_id`` for the block: arm, read, and wait if the read found nothing.

        Must be entered on the reader's event loop.
        """
        self.ensure_listening()
        watch = RunWatch(asyncio.get_running_loop())
        with self._guard:
            self._watches[run_id].add(watch)
        try:
            yield watch
        finally:
            with self._guard:
                watching = self._watches.get(run_id)
                if watching is not None:
                    watching.discard(watch)
                    if not watching:
                        del self._watches[run_id]

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
        if runs:
            conn.info.setdefault(_COMMITTED_KEY, set()).update(runs)

    def _on_rollback(self, conn: Any) -> None:
        conn.info.pop(APPENDED_KEY, None)

    def _on_begin(self, conn: Any) -> None:
        self._wake_committed(conn.info)

    def _on_checkin(self, dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            self._wake_committed(record.info)

    def _wake_committed(self, info: dict[str, Any]) -> None:
        for run_id in info.pop(_COMMITTED_KEY, None) or ():
            self.bump(run_id)

    def _listen(self) -> None:
        failures = 0
        while not self._stop.is_set():
            raw = None
            try:
                raw = self.engine.raw_connection()
                driver_conn = raw.driver_connection
                assert driver_conn is not None
                driver_conn.autocommit = True
                driver_conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                failures = 0
                while not self._stop.is_set():
                    for note in driver_conn.notifies(timeout=1.0, stop_after=256):
                        self.bump(note.payload)
            except Exception as exc:
                # Readers still poll slowly meanwhile; back off (1, 2, 4 ... 30 s) and give the
                # traceback once per outage, not once a second.
                failures += 1
                delay = min(30.0, 2.0 ** (failures - 1))
                _log.warning(
                    "the event listener lost its connection (%s); reconnecting in %.0f s",
                    type(exc).__name__,
                    delay,
                    exc_info=failures == 1,
                )
                self._stop.wait(delay)
            finally:
                if raw is not None:
                    raw.invalidate()  # a connection that listened never goes back to the pool
