"""How many event streams may be open at once: per API key and in total (this process)."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator

from wop_langgraph.protocol.errors import RateLimited

__all__ = ["StreamLimits"]


class StreamLimits:
    """Counts open SSE streams and long polls; refuses one past a limit with ``429 rate_limited``."""

    def __init__(self, per_key: int, total: int) -> None:
        self.per_key = per_key
        self.total = total
        self._open: Counter[str] = Counter()
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """Count one open stream of ``key`` while the block runs.

        Raises:
            RateLimited: the key (or the server) already has as many streams open as allowed.
        """
        with self._guard:
            if sum(self._open.values()) >= self.total:
                raise RateLimited(
                    f"this server has {self.total} event streams open; try again shortly",
                    details={"limit": self.total, "scope": "server"},
                )
            if self._open[key] >= self.per_key:
                raise RateLimited(
                    f"this API key has {self.per_key} event streams open; close one or try again shortly",
                    details={"limit": self.per_key, "scope": "apiKey"},
                )
            self._open[key] += 1
        try:
            yield
        finally:
            with self._guard:
                self._open[key] -= 1
                if self._open[key] <= 0:
                    del self._open[key]
