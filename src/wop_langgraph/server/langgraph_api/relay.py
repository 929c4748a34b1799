"""LangGraph's ``custom`` stream mode: what nodes write with ``get_stream_writer()``, relayed live.

The chunks are not part of a run's record (LangGraph does not checkpoint them either): the
driver hands each one to :meth:`CustomRelay.publish` as the node writes it, and streams of the
run in this process read them from a short per-run buffer, numbered so a stream shows only the
chunks written after it began (a resume's stream: none of the earlier passes'). A run driven by
another process (``wop-langgraph worker``) is not relayed here, and a reconnect with
``Last-Event-ID`` does not replay the chunks it missed. A drive relays only while a stream with
``custom`` in its modes watches the run (:meth:`CustomRelay.watch`, from before the request
starts or resumes the run): streaming that mode costs every task a thread hop in LangGraph,
which runs nobody streams do not pay. A stream that joins a run mid-drive sees its chunks from
the run's next drive on.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from typing import Any, Final

from wop_langgraph.host.driver import jsonable
from wop_langgraph.store.appended import signals_for
from wop_langgraph.store.engine import Engine

__all__ = ["CustomRelay"]

#: Chunks kept per run, and runs kept, for streams that start or wake a little late.
_PER_RUN: Final = 1000
_RUNS: Final = 256


class CustomRelay:
    """Per-run numbered buffers of ``custom`` chunks; appending wakes the run's streams."""

    def __init__(self, engine: Engine) -> None:
        self._signals = signals_for(engine)
        self._guard = threading.Lock()
        self._runs: OrderedDict[str, tuple[int, deque[tuple[int, Any]]]] = OrderedDict()
        self._watching: dict[str, int] = {}

    def watch(self, run_id: str) -> None:
        """A stream wants ``run_id``'s chunks: its drives from now on relay them (counted)."""
        with self._guard:
            self._watching[run_id] = self._watching.get(run_id, 0) + 1

    def unwatch(self, run_id: str) -> None:
        """A stream that called :meth:`watch` has ended."""
        with self._guard:
            left = self._watching.get(run_id, 0) - 1
            if left > 0:
                self._watching[run_id] = left
            else:
                self._watching.pop(run_id, None)

    def wants(self, run_id: str) -> bool:
        """Whether a drive of ``run_id`` starting now should relay its chunks."""
        return run_id in self._watching

    def publish(self, run_id: str, chunk: Any) -> None:
        """Buffer ``chunk`` of ``run_id`` (called on the driving thread) and wake its streams."""
        doc = jsonable(chunk)
        with self._guard:
            count, chunks = self._runs.pop(run_id, (0, deque(maxlen=_PER_RUN)))
            count += 1
            chunks.append((count, doc))
            self._runs[run_id] = (count, chunks)  # most recently written last
            while len(self._runs) > _RUNS:
                self._runs.popitem(last=False)
        self._signals.bump(run_id)

    def position(self, run_id: str) -> int:
        """How many chunks ``run_id`` has written so far (a stream from now on reads after it)."""
        with self._guard:
            found = self._runs.get(run_id)
        return 0 if found is None else found[0]

    def after(self, run_id: str, position: int) -> tuple[int, list[Any]]:
        """The chunks written after ``position``, and the new position."""
        with self._guard:
            found = self._runs.get(run_id)
            if found is None:
                return position, []
            count, chunks = found
            return count, [doc for number, doc in chunks if number > position]
