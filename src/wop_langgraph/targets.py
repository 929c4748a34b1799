"""``MODULE:ATTR`` targets of the command line: where the graphs to serve or work on come from."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from langgraph.pregel import Pregel

__all__ = ["load_workflows"]


def load_workflows(target: str, command: str = "serve") -> dict[str, Pregel[Any, Any, Any, Any]]:
    """Import ``MODULE:ATTR`` and return ``{workflowId: graph}``.

    ``ATTR`` is a compiled graph (registered under the name ``ATTR``), a ``{workflowId: graph}``
    dict, or a function without arguments returning either.

    Raises:
        SystemExit: a malformed target, a missing module or attribute, or something not a graph.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"{command}: expected MODULE:ATTR, got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SystemExit(f"{command}: cannot import {module_name!r}: {exc}") from None
    value = getattr(module, attr, None)
    if value is None:
        raise SystemExit(f"{command}: {module_name!r} has no attribute {attr!r}")
    if callable(value) and not isinstance(value, Pregel):
        value = value()  # a factory: build the graphs now, not when the module is imported
    if isinstance(value, Pregel):
        return {attr: value}
    if isinstance(value, Mapping) and value and all(isinstance(g, Pregel) for g in value.values()):
        return {str(k): g for k, g in value.items()}
    raise SystemExit(f"{command}: {target!r} is neither a compiled graph nor a {{workflowId: graph}} dict")
