"""Adapters: the human-in-the-loop code LangGraph users already write, as first-class OpenWOP interrupts.

A node that calls LangGraph's bare ``interrupt(value)`` instead of the node API still gets the
full contract. The host asks these pure functions three things:

* :func:`payload_for` (recorder): the OpenWOP payload for a bare interrupt value;
* :func:`normalize_resume` (resolver): the OpenWOP resume value for what a resolver sent, which
  may be the OpenWOP value or the shape the node's code knows (checked here, before anything is
  written);
* :func:`to_node_value` (runtime): what the node's ``interrupt()`` returns, exactly what
  ``Command(resume=...)`` would have given it.

The shapes, tried in order: :mod:`.agent_inbox` (``[HumanInterrupt]``), :mod:`.hitl_middleware`
(LangChain's ``HumanInTheLoopMiddleware``), :mod:`.plain` (a question, else ``custom``). The
Functional API (``@entrypoint`` / ``@task``): :mod:`.functional`.
"""

from __future__ import annotations

from typing import Any, Final

from wop_langgraph.adapters._shape import Classified, Shape
from wop_langgraph.adapters.agent_inbox import AgentInboxInterrupt
from wop_langgraph.adapters.hitl_middleware import HitlMiddlewareInterrupt
from wop_langgraph.adapters.plain import PlainInterrupt

__all__ = [
    "SHAPES",
    "Classified",
    "Shape",
    "classify",
    "is_bare",
    "normalize_resume",
    "payload_for",
    "to_node_value",
]

_PLAIN: Final = PlainInterrupt()
#: Every shape, most specific first; the plain shape takes whatever the others leave.
SHAPES: Final[tuple[Shape, ...]] = (AgentInboxInterrupt(), HitlMiddlewareInterrupt(), _PLAIN)


def classify(value: Any, response_schema: Any = None) -> Classified:
    """The OpenWOP kind, data and ``resumeSchema`` of a bare ``interrupt(value, response_schema=...)``."""
    for shape in SHAPES:
        found = shape.classify(value, response_schema)
        if found is not None:
            return found
    return _PLAIN.classify(value, response_schema)  # unreachable: the plain shape takes everything


def payload_for(value: Any, response_schema: Any = None) -> dict[str, Any]:
    """The interrupt payload (without its key) for a bare interrupt value."""
    return classify(value, response_schema).payload()


def is_bare(payload: dict[str, Any]) -> bool:
    """Whether ``payload`` was built for a bare ``interrupt()`` (the node gets the native value)."""
    return _shape_of(payload) is not None


def normalize_resume(payload: dict[str, Any], value: Any) -> Any:
    """The OpenWOP resume value for ``value``; unchanged for interrupts of the node API.

    Raises:
        ValidationError: the value does not answer this interrupt (the shape's own rules;
            the host still applies the kind's rules and ``resumeSchema`` afterwards).
    """
    shape = _shape_of(payload)
    return value if shape is None else shape.normalize(payload, value)


def to_node_value(payload: dict[str, Any], resolution: dict[str, Any], resume_value: Any) -> Any:
    """What a bare ``interrupt()`` returns for this resolution (only for :func:`is_bare` payloads)."""
    shape = _shape_of(payload)
    if shape is None:
        raise ValueError("not a bare interrupt: the node API receives a Delivery")
    return shape.node_value(payload, resolution, resume_value)


def _shape_of(payload: dict[str, Any]) -> Shape | None:
    return next((shape for shape in SHAPES if shape.owns(payload)), None)
