"""Official OpenWOP schemas the runtime itself needs, shipped verbatim (a test compares them).

Only ``configurable.schema.json`` is needed at run time (``createRun`` validates
``configurable`` against it). Its one external reference, ``budget-policy.schema.json``, is not
published where the project could copy it from, so it resolves to an open schema here.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["configurable_schema"]

_BUDGET_POLICY_STAND_IN = {"type": "object"}


@cache
def configurable_schema() -> dict[str, Any]:
    """The official v2 ``configurable`` schema, with its budget-policy reference made local."""
    text = resources.files(__package__).joinpath("configurable.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = _inline_budget(json.loads(text))
    return schema


def _inline_budget(node: Any) -> Any:
    if isinstance(node, dict):
        if node.get("$ref") == "budget-policy.schema.json":
            return dict(_BUDGET_POLICY_STAND_IN)
        return {k: _inline_budget(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_budget(v) for v in node]
    return node
