"""Interrupt kinds, each declared in one place: its payload model, the waiting status it puts a
run in, its resume rules, the node call that raises it and its reviewer form.

The host and the server look kinds up here (:func:`kind_of`, :func:`page_for`) rather than
branching on kind names. To add a kind, declare an :class:`InterruptKind` riding ``custom``
in one module and :func:`register` it (docs/interrupts.md, "Add an interrupt kind").
"""

from wop_langgraph.kinds.base import InterruptKind, ResumeRule
from wop_langgraph.kinds.registry import (
    SPECIFIED,
    custom_statuses,
    get_kind,
    kind_of,
    page_for,
    register,
    registered,
    unregister,
)
from wop_langgraph.kinds.review.base import Answered, GatePage, Options

__all__ = [
    "SPECIFIED",
    "Answered",
    "GatePage",
    "InterruptKind",
    "Options",
    "ResumeRule",
    "custom_statuses",
    "get_kind",
    "kind_of",
    "page_for",
    "register",
    "registered",
    "unregister",
]
