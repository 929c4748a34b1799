"""Requests first: in-process workers let the requests a caller waits on finish before they drive.

A process's threads share one interpreter lock, so a worker driving a graph slows every request
the same process answers. A reviewer's click must not wait for the agent's next step: while
requests that change something (resolves, creations, cancels) are being answered, a worker
about to take a queued run, or to go on to the next step of a sync graph, waits until none is
left, for at most ``defer_seconds`` each time. Reads and streams are not counted: a long-poll
or an open event stream would hold the workers back for as long as it lasts. The bound keeps
workers moving under a steady stream of requests; more throughput than that is the business
of ``worker`` processes. A request that drives its run itself (``runs/wait``) is counted only
while it changes something, not while it drives (:meth:`Foreground.counting`,
:meth:`Foreground.aside`): the workers would otherwise defer to it until its run rests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Foreground", "at_step_boundary"]

#: The deferral of the worker thread running here, if any: (foreground, seconds).
_deferral = threading.local()


class Foreground:
    """How many requests are being answered now; workers wait (bounded) for none."""

    def __init__(self) -> None:
        self._answering = 0
        self._quiet = threading.Condition()
        #: Whether the request this thread answers is counted now (see :meth:`counting`).
        self._here = threading.local()

    def enter(self) -> None:
        """A request is being answered."""
        with self._quiet:
            self._answering += 1

    def leave(self) -> None:
        """A request has been answered."""
        with self._quiet:
            self._answering -= 1
            if self._answering == 0:
                self._quiet.notify_all()

    @contextmanager
    def counting(self) -> Iterator[None]:
        """This thread answers a request: counted until it is answered, except under :meth:`aside`."""
        self.enter()
        self._here.counted = True
        try:
            yield
        finally:
            if self._here.counted:
                self._here.counted = False
                self.leave()

    @contextmanager
    def aside(self) -> Iterator[None]:
        """This thread drives a run for the request it answers: not counted while it drives."""
        if not getattr(self._here, "counted", False):
            yield
            return
        self._here.counted = False
        self.leave()
        try:
            yield
        finally:
            self.enter()
            self._here.counted = True

    @property
    def answering(self) -> int:
        """The requests being answered now."""
        return self._answering

    def wait_quiet(self, limit: float) -> bool:
        """Wait until no request is being answered, at most ``limit`` seconds; whether none is."""
        if self._answering == 0:  # read without the lock: the common case costs nothing
            return True
        deadline = time.monotonic() + limit
        with self._quiet:
            while self._answering:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._quiet.wait(left)
        return True

    @contextmanager
    def deferring(self, seconds: float) -> Iterator[None]:
        """In this (worker) thread, :func:`at_step_boundary` waits for quiet, at most ``seconds``."""
        _deferral.policy = (self, seconds)
        try:
            yield
        finally:
            _deferral.policy = None


def at_step_boundary() -> None:
    """Between two steps of a graph: a worker thread that defers waits for quiet (bounded)."""
    policy: tuple[Foreground, float] | None = getattr(_deferral, "policy", None)
    if policy is not None:
        policy[0].wait_quiet(policy[1])
