"""What a drive has not written yet: its node starts, and its passes' saves, stored with what
comes next.

Storing each save as it is made costs a transaction each, and on PostgreSQL a WAL flush: a
checkpoint per step, a task's writes with its end, a start per task. They are held here
instead, in the order they were made, each event with the time it happened, and stored first
by the next transaction that records anything of the run: for a pass of brief nodes, the one
that records its interrupt or its end. What has been held for :data:`FLUSH_AFTER_S` (a node
that runs longer) is stored on its own, so a reader following the log sees a node's start, and
the end of the one before, while it still runs.

Order is kept: whatever records something of the run during the drive stores what is held
before it, so an execution's start precedes its end, its interrupts and what its node emits,
and a checkpoint follows the writes it supersedes. Each event keeps its stable id, so an event
appended twice (a retried pass, a crash before the commit) is logged once. What only ever lived
here (the process died first) is lost as if the process had died before making it: the run
goes on from its last stored checkpoint and makes it again. Nothing is appended after the
run's terminal event: a closed log drops the held events.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime

from wop_langgraph.store.engine import Connection, Engine
from wop_langgraph.store.events import NewEvent, NextAppend
from wop_langgraph.store.held import HeldWrite, stored_ahead

__all__ = ["FLUSH_AFTER_S", "HeldWrites", "Taken"]

#: How long what is held waits for a transaction to ride in before it is stored on its own.
FLUSH_AFTER_S = 0.05
#: How long a transaction waits for another that took what was held (one that rolled back unseen).
_SETTLE_TIMEOUT_S = 5.0
#: When what a transaction that rolled back took is stored on its own again (if nothing took
#: it first): later than a first try, so that a database that is away is not asked in a loop.
_RETRY_AFTER_S = 1.0

_log = logging.getLogger("wop_langgraph.driver")


class HeldWrites:
    """What one run's drive has not written yet (thread-safe).

    A transaction that takes what is held stores it before anything else; until it settles
    (commits, or rolls back and holds it again) a transaction that comes to take the held
    waits, so that nothing it writes (a node's end, say) can commit ahead of them. It waits
    before it writes anything, so it holds nothing the first one needs.
    """

    def __init__(self, engine: Engine, run_id: str) -> None:
        self._engine = engine
        self._run_id = run_id
        self._guard = threading.Condition()
        self._held: list[_Held] = []
        self._in_flight = 0  # transactions that took what was held and have not settled
        self._closed = False

    def hold(self, event: NewEvent, at: datetime) -> None:
        """Keep ``event`` (a node's start, with its stable id) to append later, timestamped ``at``."""
        self._keep(_Held(event, at, None))

    def hold_write(self, write: HeldWrite, event: NewEvent | None = None, at: datetime | None = None) -> bool:
        """Keep ``write`` (and ``event``, timestamped ``at``, that tells of it) to store later, in
        order with the rest; ``False`` (nothing kept) once the drive is over."""
        return self._keep(_Held(event, at, write))

    def _keep(self, held: _Held) -> bool:
        with self._guard:
            if self._closed:
                return False
            first = not self._held
            self._held.append(held)
        if first:  # the oldest held decides when the held are stored on their own
            _later(FLUSH_AFTER_S, self.flush)
        return True

    def waiting(self) -> bool:
        """Whether anything waits to be taken (not counting what a transaction is storing)."""
        with self._guard:
            return bool(self._held)

    def holding(self) -> bool:
        """Whether anything waits to be stored, or is being stored."""
        with self._guard:
            return bool(self._held) or self._in_flight > 0

    @contextmanager
    def first_in(self, conn: Connection, ahead: NextAppend) -> Iterator[Taken]:
        """Within the block, what is held goes first into ``conn``'s transaction: its saves
        before anything else (on PostgreSQL in the pipeline of the block's first statement),
        its events ahead of the block's first append to the run's log given ``ahead`` (which
        carries them), in its statement, or on their own as the block ends. If the block
        raises, none of them is appended (the caller rolls back). Pass what it yields to
        :meth:`settled` once the transaction ends."""
        with self._guard:
            if not self._guard.wait_for(lambda: self._in_flight == 0, _SETTLE_TIMEOUT_S):
                _log.warning("run %s: a transaction storing what was held did not settle", self._run_id)
            taken, self._held = self._held, []
            if taken:
                self._in_flight += 1
        writes = [held.write for held in taken if held.write is not None]
        events = [(held.event, held.at) for held in taken if held.event is not None and held.at is not None]
        with ExitStack() as stack:
            try:
                # The saves go out with the block's first statement (on PostgreSQL in its
                # pipeline), the events in its first append to the run's log.
                stack.enter_context(stored_ahead(conn, writes))
            except BaseException:
                self.settled(Taken(taken), committed=False)
                raise
            ahead.first.extend(events)
            try:
                yield Taken(taken)
            except BaseException:
                ahead.first.clear()
                raise
            ahead.append_left(conn)

    def settled(self, taken: Taken, *, committed: bool) -> None:
        """The transaction of :meth:`first_in` ended; if it did not commit, hold what it took again."""
        if not taken.held:
            return
        with self._guard:
            self._in_flight -= 1
            again = not committed and not self._closed
            if again:
                self._held[:0] = taken.held
            self._guard.notify_all()
        if again:
            _later(_RETRY_AFTER_S, self.flush)

    @contextmanager
    def logging(self) -> Iterator[tuple[Connection, NextAppend]]:
        """A write transaction that stores what is held first (see :meth:`first_in`): its
        connection, and what goes ahead of its first append to the run's log (to pass it)."""
        taken = Taken([])
        ahead = NextAppend(self._run_id)
        try:
            with self._engine.begin() as conn, self.first_in(conn, ahead) as taken:
                yield conn, ahead
        except BaseException:
            self.settled(taken, committed=False)
            raise
        self.settled(taken, committed=True)

    def flush(self) -> None:
        """Store what is held in a transaction of its own (nothing to do if nothing is)."""
        with self._guard:
            if not self._held:
                return
        try:
            with self.logging():
                pass
        except Exception:
            _log.warning("run %s: could not store what its drive holds yet", self._run_id, exc_info=True)

    def close(self) -> None:
        """The drive is over: drop what is held (its run was stopped or its log closed)."""
        with self._guard:
            self._closed = True
            self._held = []


@dataclass(frozen=True, slots=True)
class _Held:
    """A node's start, or a save with the event that tells of it (if any), kept for later."""

    event: NewEvent | None
    at: datetime | None
    write: HeldWrite | None


@dataclass(frozen=True)
class Taken:
    """What one transaction took of the held (see :meth:`HeldWrites.first_in`)."""

    held: list[_Held]


# -- one timer thread per process, for what is held while a node runs longer -----------------

_due: list[tuple[float, int, Callable[[], None]]] = []
_due_guard = threading.Condition()
_order = itertools.count()
_timer: threading.Thread | None = None


def _later(delay: float, action: Callable[[], None]) -> None:
    """Call ``action`` on the timer thread in ``delay`` seconds (started on first use)."""
    global _timer
    with _due_guard:
        entry = (time.monotonic() + delay, next(_order), action)
        heapq.heappush(_due, entry)
        if _timer is None or not _timer.is_alive():
            _timer = threading.Thread(target=_run_due, name="wop-held-writes", daemon=True)
            _timer.start()
        elif _due[0] is entry:  # due before all the others: the timer sleeps until a later one
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
            _log.exception("storing what a drive holds failed")
