"""What every adapter shape provides, and the helpers they share (pure: no I/O, no host).

A *shape* is one way LangGraph users already ask a human something with a bare
``interrupt(value)``. It recognises its values (:meth:`Shape.classify`), marks the OpenWOP
payload it builds so the payload alone says which shape owns it (:meth:`Shape.owns`), turns
what a resolver sends into the OpenWOP resume value the host validates and records
(:meth:`Shape.normalize`), and turns the recorded resolution back into exactly the value the
node's code expects from ``interrupt()`` (:meth:`Shape.node_value`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.jsonschema_check import check_schema

__all__ = ["Classified", "Shape", "invalid", "readable", "usable_schema"]


@dataclass(frozen=True)
class Classified:
    """The OpenWOP side of a bare interrupt value: ``kind``, ``data`` and an optional ``resumeSchema``."""

    kind: str
    data: dict[str, Any]
    resume_schema: dict[str, Any] | None = None

    def payload(self) -> dict[str, Any]:
        """The interrupt payload without its key (the store derives the key)."""
        payload: dict[str, Any] = {"kind": self.kind, "data": self.data}
        if self.resume_schema is not None:
            payload["resumeSchema"] = self.resume_schema
        return payload


class Shape(Protocol):
    """One human-in-the-loop convention mapped onto OpenWOP."""

    def classify(self, value: Any, response_schema: Any = None) -> Classified | None:
        """The OpenWOP kind and data for ``value``, or ``None`` when it is not this shape."""

    def owns(self, payload: dict[str, Any]) -> bool:
        """Whether ``payload`` was built by :meth:`classify` of this shape."""

    def normalize(self, payload: dict[str, Any], value: Any) -> Any:
        """The OpenWOP resume value for ``value`` (either spelling); raises ``ValidationError``."""

    def node_value(self, payload: dict[str, Any], resolution: dict[str, Any], resume_value: Any) -> Any:
        """What the node's ``interrupt()`` returns for this resolution."""


def readable(value: Any) -> Any:
    """``value`` as plain JSON: pydantic models dumped, dataclass-like objects by ``vars``, else ``str``."""

    def default(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            return dump(mode="json")
        if isinstance(obj, (set, frozenset, tuple)):
            return list(obj)
        if hasattr(obj, "__dict__"):
            return {k: v for k, v in vars(obj).items() if not k.startswith("_")}
        return str(obj)

    return json.loads(json.dumps(value, default=default, allow_nan=False))


def usable_schema(schema: Any) -> dict[str, Any] | None:
    """A JSON Schema object the host can validate with, or ``None`` (a type, or an invalid schema)."""
    if not isinstance(schema, dict):
        return None
    try:
        check_schema(schema, what="response_schema")
    except ValidationError:
        return None
    return schema


def invalid(message: str, path: str) -> ValidationError:
    """A ``validation_error`` naming the failing member of the resume value."""
    return ValidationError(message, details={"path": "/resumeValue" + path})
