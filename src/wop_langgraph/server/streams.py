"""How many event streams may be open at once: per API key and in total (this process).

A stream's slot is taken before its response starts, so a caller over the limit gets
``429 rate_limited`` (with ``Retry-After``) instead of a ``200`` that is cut at once:

* a long poll (a plain response) holds it with ``with limits.hold(key): ...``;
* a streamed response takes it with ``slot = limits.hold(key)`` in the route and hands it to
  :class:`SlotStreamingResponse`, which gives it back when the response ends, however it ends
  (the body's last frame, an error, the client gone), and closes the body iterator with it.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Mapping
from types import TracebackType

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from wop_langgraph.protocol.errors import RateLimited

__all__ = ["RETRY_AFTER_SECONDS", "SlotStreamingResponse", "StreamLimits", "StreamSlot"]

#: The ``Retry-After`` of a refused stream: slots come back as other streams close.
RETRY_AFTER_SECONDS = 1


class StreamLimits:
    """Counts open SSE streams and long polls; refuses one past a limit with ``429 rate_limited``."""

    def __init__(self, per_key: int, total: int) -> None:
        self.per_key = per_key
        self.total = total
        self._open: Counter[str] = Counter()
        self._count = 0
        self._guard = threading.Lock()

    def hold(self, key: str) -> StreamSlot:
        """Take one stream slot of ``key`` now; give it back with :meth:`StreamSlot.release`
        (or by leaving it as a ``with`` block).

        Raises:
            RateLimited: the key (or the server) already has as many streams open as allowed;
                nothing was taken.
        """
        with self._guard:
            if self._count >= self.total:
                raise RateLimited(
                    f"this server has {self.total} event streams open; try again shortly",
                    details={"limit": self.total, "scope": "server"},
                    retry_after=RETRY_AFTER_SECONDS,
                )
            if self._open[key] >= self.per_key:
                raise RateLimited(
                    f"this API key has {self.per_key} event streams open; close one or try again shortly",
                    details={"limit": self.per_key, "scope": "apiKey"},
                    retry_after=RETRY_AFTER_SECONDS,
                )
            self._open[key] += 1
            self._count += 1
        return StreamSlot(self, key)

    def open_streams(self, key: str | None = None) -> int:
        """Slots held now: of ``key``, or of everyone."""
        with self._guard:
            return self._count if key is None else self._open[key]

    def _give_back(self, key: str) -> None:
        with self._guard:
            self._count -= 1
            self._open[key] -= 1
            if self._open[key] <= 0:
                del self._open[key]


class StreamSlot:
    """One held stream slot; :meth:`release` gives it back, once however often it is called."""

    def __init__(self, limits: StreamLimits, key: str) -> None:
        self._limits = limits
        self._key = key
        self._held = True
        self._guard = threading.Lock()

    def release(self) -> None:
        """Give the slot back (a second call does nothing)."""
        with self._guard:
            if not self._held:
                return
            self._held = False
        self._limits._give_back(self._key)

    def __enter__(self) -> StreamSlot:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()


class SlotStreamingResponse(StreamingResponse):
    """A streamed response that holds a :class:`StreamSlot` until it ends.

    The route takes the slot (``limits.hold(key)``) before building this response, so a refusal
    is an ordinary error response; once sent, however the response ends, the slot is given
    back, ``on_close`` is called and the body iterator is closed (its ``finally`` blocks run if
    it had started; ``on_close`` runs either way, for what the route took for the stream).
    """

    def __init__(
        self,
        slot: StreamSlot,
        content: AsyncIterable[str | bytes],
        *,
        media_type: str | None = None,
        headers: Mapping[str, str] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self.slot = slot
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            try:
                if isinstance(self.body_iterator, AsyncGenerator):
                    with contextlib.suppress(RuntimeError):  # already running elsewhere: it ends itself
                        await self.body_iterator.aclose()
            finally:
                self.slot.release()
                if self.on_close is not None:
                    self.on_close()
