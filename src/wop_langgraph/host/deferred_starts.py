"""Executions a drive opened (``node.started`` / ``node.resumed``), logged with what comes next.

Appending each start at once costs a transaction per task, and on PostgreSQL a WAL flush: a
third of the commits the host adds to LangGraph's own. A start is held here instead, with the
time it happened, and appended first by the next transaction that logs anything of the run:
for a node that runs briefly, the one that stores its writes and its end (or its interrupt).
A node that runs longer gets its start appended on its own after :data:`FLUSH_AFTER_S`, so a
reader following the log sees it while the node still runs.

Order is kept: whatever logs an event of the run during the drive appends the held starts
before it, so an execution's start always precedes its end, its interrupts and what its node
emits. Each start keeps its stable event id, so a start appended twice (a retried pass, a
crash before the commit) is logged once. A start that only ever lived here (the process died
first) is appended again when the task runs again. Nothing is appended after the run's
terminal event: a closed log drops the held starts.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine

from wop_langgraph.store.events import NewEvent, appended_first

__all__ = ["FLUSH_AFTER_S", "DeferredStarts", "Taken"]

#: How long a start waits for a transaction to ride in before it is appended on its own.
FLUSH_AFTER_S = 0.05
#: How long a transaction waits for another that took starts (one that rolled back unseen).
_SETTLE_TIMEOUT_S = 5.0

_log = logging.getLogger("wop_langgraph.driver")


class DeferredStarts:
    """The starts of one run's drive not appended yet (thread-safe).

    A transaction that takes held starts appends them before anything else; until it settles
    (commits, or rolls back and holds them again) a transaction that comes to take starts
    waits, so that nothing it appends (a node's end, say) can commit ahead of them. It waits
    before it appends anything, so it holds nothing the first one needs.
    """

    def __init__(self, engine: Engine, run_id: str) -> None:
        self._engine = engine
        self._run_id = run_id
        self._guard = threading.Condition()
        self._held: list[tuple[NewEvent, datetime]] = []
        self._in_flight = 0  # transactions that took starts and have not settled
        self._closed = False

    def hold(self, event: NewEvent, at: datetime) -> None:
        """Keep ``event`` (with its stable id) to append later, timestamped ``at``."""
        with self._guard:
            if self._closed:
                return
            self._held.append((event, at))
        _later(FLUSH_AFTER_S, self.flush)

    def holding(self) -> bool:
        """Whether any start waits to be appended, or is being appended."""
        with self._guard:
            return bool(self._held) or self._in_flight > 0

    @contextmanager
    def first_in(self, conn: Connection) -> Iterator[Taken]:
        """Within the block, the held starts go first into ``conn``'s transaction: ahead of the
        block's first append to the run's log, in its statement (or on their own as the block
        ends). Pass what it yields to :meth:`settled` once the transaction ends."""
        with self._guard:
            if not self._guard.wait_for(lambda: self._in_flight == 0, _SETTLE_TIMEOUT_S):
                _log.warning("run %s: a transaction logging node starts did not settle", self._run_id)
            taken, self._held = self._held, []
            if taken:
                self._in_flight += 1
        with appended_first(conn, self._run_id, taken):
            yield Taken(taken)

    def settled(self, taken: Taken, *, committed: bool) -> None:
        """The transaction of :meth:`first_in` ended; if it did not commit, hold its starts again."""
        if not taken.starts:
            return
        with self._guard:
            self._in_flight -= 1
            if not committed and not self._closed:
                self._held[:0] = taken.starts
            self._guard.notify_all()

    @contextmanager
    def logging(self) -> Iterator[Connection]:
        """A write transaction that appends the held starts first (see :meth:`first_in`)."""
        taken = Taken([])
        try:
            with self._engine.begin() as conn, self.first_in(conn) as taken:
                yield conn
        except BaseException:
            self.settled(taken, committed=False)
            raise
        self.settled(taken, committed=True)

    def flush(self) -> None:
        """Append the held starts in a transaction of their own (nothing to do if none)."""
        with self._guard:
            if not self._held:
                return
        try:
            with self.logging():
                pass
        except Exception:
            _log.warning("run %s: could not log a node's start yet", self._run_id, exc_info=True)

    def close(self) -> None:
        """The drive is over: drop what is held (its run was stopped or its log closed)."""
        with self._guard:
            self._closed = True
            self._held = []


@dataclass(frozen=True)
class Taken:
    """The starts one transaction took (see :meth:`DeferredStarts.first_in`)."""

    starts: list[tuple[NewEvent, datetime]]


# -- one timer thread per process, for the starts of nodes that run longer --------------------

_due: list[tuple[float, int, Callable[[], None]]] = []
_due_guard = threading.Condition()
_order = itertools.count()
_timer: threading.Thread | None = None


def _later(delay: float, action: Callable[[], None]) -> None:
    """Call ``action`` on the timer thread in ``delay`` seconds (started on first use)."""
    global _timer
    with _due_guard:
        idle = not _due
        heapq.heappush(_due, (time.monotonic() + delay, next(_order), action))
        if _timer is None or not _timer.is_alive():
            _timer = threading.Thread(target=_run_due, name="wop-deferred-starts", daemon=True)
            _timer.start()
        elif idle:  # otherwise the timer already wakes no later than this (delays are equal)
            _due_guard.notify()


def _run_due() -> None:
    while True:
        with _due_guard:
            while not _due or _due[0][0] > time.monotonic():
                _due_guard.wait(None if not _due else _due[0][0] - time.monotonic())
            _, _, action = heapq.heappop(_due)
        try:
            action()
        except Exception:  # keep the timer alive for the other runs
            _log.exception("deferred start flush failed")
