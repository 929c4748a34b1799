"""A run's result: its ``outputs`` once it completes, or why it never will.

``WopHost.result`` and ``WopHost.aresult`` wait on the run's snapshot; this module says what a
snapshot means for the waiter (the one rule both forms apply) and how each form waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final

from wop_langgraph.protocol.snapshot import RESULT_EXTENSION
from wop_langgraph.store.appended import RunWatch

__all__ = ["RunNotCompleted", "await_result", "outputs_if_ended", "wait_result"]

#: Longest wait between two reads when no wake-up comes (another process on SQLite).
_RECHECK_SECONDS: Final = 1.0


class RunNotCompleted(Exception):
    """The run ended without completing: it ``failed`` (``error`` says why) or was ``cancelled``.

    Attributes:
        run_id: the run.
        status: ``failed`` or ``cancelled``.
        error: the snapshot's ``error`` (``code``, ``message``, ``details``), if any.
    """

    def __init__(self, run_id: str, status: str, error: Mapping[str, Any] | None) -> None:
        self.run_id = run_id
        self.status = status
        self.error = dict(error) if error else None
        why = f": {self.error.get('code')}: {self.error.get('message')}" if self.error else ""
        super().__init__(f"run {run_id!r} ended {status} and has no result{why}")


def outputs_if_ended(snapshot: Mapping[str, Any]) -> dict[str, Any] | None:
    """The outputs of a completed run; ``None`` while it has not ended.

    Raises:
        RunNotCompleted: the run failed or was cancelled.
    """
    status = snapshot["status"]
    if status == "completed":
        result = (snapshot.get("extensions") or {}).get(RESULT_EXTENSION) or {}
        return dict(result.get("outputs") or {})
    if status in ("failed", "cancelled"):
        raise RunNotCompleted(snapshot["runId"], status, snapshot.get("error"))
    return None


def _timed_out(snapshot: Mapping[str, Any], timeout: float | None) -> TimeoutError:
    return TimeoutError(
        f"run {snapshot['runId']!r} is still {snapshot['status']} after {timeout} s "
        "(a waiting run needs its interrupt resolved; see WopHost.pending_interrupts)"
    )


def wait_result(
    read: Callable[[], Mapping[str, Any]],
    timeout: float | None,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Read the snapshot until the run ends (backing off from 10 ms to 250 ms between reads).

    Raises:
        RunNotCompleted: the run failed or was cancelled.
        TimeoutError: it had not ended after ``timeout`` seconds (``None``: wait for ever).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.01
    while True:
        snapshot = read()
        outputs = outputs_if_ended(snapshot)
        if outputs is not None:
            return outputs
        if deadline is not None and time.monotonic() >= deadline:
            raise _timed_out(snapshot, timeout)
        left = pause if deadline is None else max(0.0, min(pause, deadline - time.monotonic()))
        time.sleep(left)
        pause = min(pause * 2, 0.25)


async def await_result(
    read: Callable[[], Awaitable[Mapping[str, Any]]],
    watch: AbstractContextManager[RunWatch],
    timeout: float | None,
) -> dict[str, Any]:
    """Like :func:`wait_result`, woken by the run's appends instead of reading on a timer.

    The run's end is an append (``run.completed`` / ``run.failed`` / ``run.cancelled``), so the
    watch wakes the waiter at its commit; without a wake-up (another process on SQLite) it reads
    again every second.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    with watch as woken:
        while True:
            woken.arm()  # before the read: an end committed after it wakes the wait below
            snapshot = await read()
            outputs = outputs_if_ended(snapshot)
            if outputs is not None:
                return outputs
            left = _RECHECK_SECONDS if deadline is None else deadline - loop.time()
            if left <= 0:
                raise _timed_out(snapshot, timeout)
            await woken.wait(min(left, _RECHECK_SECONDS))
