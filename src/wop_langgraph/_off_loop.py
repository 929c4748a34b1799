"""Threads that async code awaits blocking calls on, kept across event loops.

``asyncio.to_thread`` runs a call on its event loop's default executor, which the loop makes
on first use and ``asyncio.run`` shuts down (with one more thread) as the loop closes. A
graph with ``async def`` nodes is driven on a loop of its own per pass, so each of its
passes started two to four threads for its saves alone. :class:`OffLoop` keeps one pool for
the process instead, whose threads every pass reuses.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["OffLoop"]

_T = TypeVar("_T")


class OffLoop:
    """A lazily made thread pool to await blocking calls on, from any event loop.

    Calls run in a copy of the caller's context, as with ``asyncio.to_thread``, in the order
    they were made (the queue is first in, first out). A call may wait for a call of the same
    pool made before it (the async saver's checkpoint waits for its tasks' writes), never for
    one made after it: with every thread waiting, that one would never start.
    """

    def __init__(self, name: str, max_workers: int) -> None:
        self._name = name
        self._max_workers = max_workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    async def run(self, function: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """``function(*args, **kwargs)`` on a thread of this pool."""
        call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._threads(), call)

    def _threads(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                # Threads start as calls need them (and are kept), up to max_workers.
                self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix=self._name)
            return self._pool
