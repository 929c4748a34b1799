"""Log a warning once per process for a given key (a node, a feature), however often it recurs."""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable

__all__ = ["warn_once"]

_warned: set[Hashable] = set()
_lock = threading.Lock()


def warn_once(logger: logging.Logger, key: Hashable, message: str, *args: object) -> None:
    """``logger.warning(message, *args)`` unless a warning with ``key`` was logged already."""
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    logger.warning(message, *args)
