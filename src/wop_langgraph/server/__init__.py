"""The optional OpenWOP HTTP server over a :class:`~wop_langgraph.host.WopHost` (extra ``server``).

The names below load on first use, so importing the package (``wop-langgraph serve --help``, the
missing-extra message) works before FastAPI is installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wop_langgraph.server.app import create_app
    from wop_langgraph.server.settings import ConfigurationError, Settings

__all__ = ["ConfigurationError", "Settings", "create_app"]

_HOMES = {
    "create_app": "wop_langgraph.server.app",
    "ConfigurationError": "wop_langgraph.server.settings",
    "Settings": "wop_langgraph.server.settings",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
