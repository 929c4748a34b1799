"""Stream modes: which events ``updates`` and ``debug`` carry (SPEC_NOTES §6)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from wop_langgraph.protocol.errors import UnsupportedStreamMode

__all__ = ["SUPPORTED_MODES", "TERMINAL_EVENT_TYPES", "event_filter"]

SUPPORTED_MODES = ("updates", "debug")
TERMINAL_EVENT_TYPES = frozenset({"run.completed", "run.failed", "run.cancelled"})
_PATTERN = re.compile(r"^(values|(updates|messages|debug)(,(updates|messages|debug))*)$")
_UPDATE_PREFIXES = ("run.", "interrupt.", "approval.", "clarification.", "conversation.")
_UPDATE_TYPES = frozenset({"node.suspended", "node.resumed", "node.suspend-failed"})

EventFilter = Callable[[dict[str, Any]], bool]


def _is_update(event: dict[str, Any]) -> bool:
    kind = str(event.get("type", ""))
    return kind in _UPDATE_TYPES or kind.startswith(_UPDATE_PREFIXES)


def _everything(event: dict[str, Any]) -> bool:
    return True


def event_filter(stream_mode: str | None, *, default: str) -> EventFilter:
    """The predicate for ``stream_mode`` (``default`` when absent).

    Raises:
        UnsupportedStreamMode: a mode outside the grammar, or one this host does not serve.
    """
    text = default if stream_mode is None else stream_mode
    modes = set(text.split(",")) if _PATTERN.match(text) else {text}
    if not modes <= set(SUPPORTED_MODES):
        raise UnsupportedStreamMode(
            f"stream mode {text!r} is not served; use one of {', '.join(SUPPORTED_MODES)}",
            details={"supported": list(SUPPORTED_MODES)},
        )
    return _everything if "debug" in modes else _is_update
