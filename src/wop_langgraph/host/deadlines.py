"""The host's deadline timer: a pending interrupt times out when its deadline comes, by itself.

One daemon thread per :class:`~wop_langgraph.host.WopHost`, started with it and stopped by
``close()``. It sleeps until the earliest deadline of a pending interrupt (one read of the
``(status, deadline)`` index), waking early when this process records an earlier deadline, and
at the latest every ``recheck_seconds``, so that interrupts recorded by other processes are seen
too. It never polls faster than deadlines come, and a drive that records no earlier deadline
costs it nothing.

Applying a timeout is the sweep's claim, so any number of hosts over one database may run a
timer: exactly one of them times each interrupt out. What ``fire`` does with the runs it timed
out (a host without workers drives them to rest) is the host's business.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from wop_langgraph._clock import as_utc

__all__ = ["DEFAULT_RECHECK_SECONDS", "DeadlineTimer"]

_log = logging.getLogger("wop_langgraph.deadlines")

#: How long the timer sleeps at most without a deadline in sight: interrupts that other
#: processes record (a worker that then died) are seen within this.
DEFAULT_RECHECK_SECONDS = 30.0
#: After a failure (the database is away) the timer waits this long before it looks again.
_BACKOFF_SECONDS = 1.0
#: Sleeping a hair past a deadline makes the wake-up find it due, not a microsecond early.
_PAST_DEADLINE_SECONDS = 0.005


class DeadlineTimer:
    """Calls ``fire(now)`` whenever ``next_deadline()`` is due by ``clock()``.

    Args:
        next_deadline: the earliest deadline of a pending interrupt, or ``None``.
        fire: applies every timeout due at ``now`` (and whatever follows from them); returns
            how many it applied.
        clock: the host's time source, against which deadlines are compared.
        recheck_seconds: the longest sleep (see the module docstring).
        closed: whether the store went away; the timer then ends by itself.
        periodic: other periodic work of the host, called (on the timer's thread) each time
            the timer looks, so at least every ``recheck_seconds``; its failure is logged and
            does not stop the timer. It throttles itself.
    """

    def __init__(
        self,
        *,
        next_deadline: Callable[[], datetime | None],
        fire: Callable[[datetime], int],
        clock: Callable[[], datetime],
        recheck_seconds: float = DEFAULT_RECHECK_SECONDS,
        closed: Callable[[], bool] = lambda: False,
        periodic: Callable[[], object] | None = None,
    ) -> None:
        if recheck_seconds <= 0:
            raise ValueError("recheck_seconds must be positive")
        self._next_deadline = next_deadline
        self._fire = fire
        self._clock = clock
        self._recheck = recheck_seconds
        self._closed = closed
        self._periodic = periodic
        self._poked = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: A deadline recorded here, perhaps not committed yet when the timer reads: it wakes then.
        self._hint: datetime | None = None
        #: When the timer will look next (``None``: it is looking now).
        self._target: datetime | None = None

    @property
    def running(self) -> bool:
        """Whether the timer's thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the thread (idempotent)."""
        with self._lock:
            if self.running:
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="wop-deadlines", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the thread and wait for it (a timeout being applied is finished first)."""
        with self._lock:
            thread, self._thread = self._thread, None
        self._stop.set()
        self._poked.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def poke(self) -> None:
        """Look at the deadlines again now."""
        self._poked.set()

    def consider(self, deadline: datetime | None) -> None:
        """A deadline was just recorded (its transaction may not have committed yet): wake for
        it if it comes before the timer's next look; a later one costs nothing."""
        if deadline is None:
            return
        deadline = as_utc(deadline)
        with self._lock:
            if self._hint is None or deadline < self._hint:
                self._hint = deadline
            earlier = self._target is not None and deadline < self._target
        if earlier:
            self._poked.set()

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set() and not self._closed():
            self._poked.clear()  # before the read: a poke from now on is not lost
            try:
                sleep = self._tick()
                failures = 0
            except Exception:
                # The database is away: log once, then look again less and less often.
                if not failures:
                    _log.exception("applying due timeouts failed; looking again shortly")
                sleep = min(self._recheck, _BACKOFF_SECONDS * 2**failures)
                failures = min(failures + 1, 16)
            if sleep > 0:
                self._poked.wait(sleep)

    def _tick(self) -> float:
        """Fire if a deadline is due; returns how long to sleep before looking again."""
        if self._periodic is not None:
            try:
                self._periodic()
            except Exception:
                _log.exception("the host's periodic work failed; it runs again at the next look")
        now = as_utc(self._clock())
        with self._lock:
            self._target = None
            if self._hint is not None and self._hint <= now:
                self._hint = None  # its commit is seen by the read below (or it never committed)
        due = self._next_deadline()
        if due is not None and due <= now:
            # Nothing applied means another process holds the interrupt: do not spin on it.
            return 0.0 if self._fire(now) else _BACKOFF_SECONDS
        with self._lock:
            wake = min((d for d in (due, self._hint) if d is not None), default=None)
            sleep = self._recheck
            if wake is not None:
                sleep = min(sleep, (wake - now).total_seconds() + _PAST_DEADLINE_SECONDS)
            self._target = now + timedelta(seconds=sleep)
        return sleep
