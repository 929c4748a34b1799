"""The interrupt kinds in force, by name: the one place the host and the reviewer page look a
kind up (a dict get), instead of branching on kind names.

The nine kinds OpenWOP specifies are registered here; :func:`register` adds a new kind (one
that rides ``custom`` under its own ``customKind``). A ``custom`` interrupt whose ``customKind``
is not registered is the generic :data:`~wop_langgraph.kinds.custom.CUSTOM`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from wop_langgraph.adapters.agent_inbox import AgentInboxInterrupt
from wop_langgraph.adapters.hitl_middleware import HitlMiddlewareInterrupt
from wop_langgraph.kinds.approval import APPROVAL
from wop_langgraph.kinds.base import InterruptKind
from wop_langgraph.kinds.clarification import CLARIFICATION
from wop_langgraph.kinds.conversation import CONVERSATION_CLOSE, CONVERSATION_EXCHANGE, CONVERSATION_START
from wop_langgraph.kinds.credential import CREDENTIAL
from wop_langgraph.kinds.custom import CUSTOM
from wop_langgraph.kinds.external_event import EXTERNAL_EVENT
from wop_langgraph.kinds.low_confidence import LOW_CONFIDENCE
from wop_langgraph.kinds.review.base import GatePage
from wop_langgraph.kinds.review.inbox import AgentInboxPage
from wop_langgraph.kinds.review.tool_calls import ToolCallsPage
from wop_langgraph.protocol.payloads import INTERRUPT_KINDS

__all__ = [
    "SPECIFIED",
    "custom_statuses",
    "get_kind",
    "kind_of",
    "page_for",
    "register",
    "registered",
    "unregister",
]

SPECIFIED: Final[Mapping[str, InterruptKind]] = {
    kind.name: kind
    for kind in (
        APPROVAL,
        CLARIFICATION,
        EXTERNAL_EVENT,
        CUSTOM,
        CONVERSATION_START,
        CONVERSATION_EXCHANGE,
        CONVERSATION_CLOSE,
        LOW_CONFIDENCE,
        CREDENTIAL,
    )
}
"""The kinds OpenWOP specifies, by wire ``kind`` (its enum is closed: exactly these)."""
assert set(SPECIFIED) == set(INTERRUPT_KINDS), "every wire kind is declared once"

#: New kinds, by ``customKind``.
_ADDED: dict[str, InterruptKind] = {}
#: :func:`custom_statuses`, recomputed when a kind is added or removed.
_custom_statuses: tuple[tuple[str, str], ...] = ()

#: Pages of payloads an adapter built (Agent Inbox, ``HumanInTheLoopMiddleware``): an approval
#: in OpenWOP terms with a form of its own; tried before the kind's page.
_SHAPES: Final[tuple[tuple[Callable[[dict[str, Any]], bool], GatePage], ...]] = (
    (AgentInboxInterrupt().owns, AgentInboxPage()),
    (HitlMiddlewareInterrupt().owns, ToolCallsPage()),
)


def register(kind: InterruptKind) -> InterruptKind:
    """Add a new kind (``wire_kind="custom"``, ``name`` its ``customKind``); returns it.

    Raises:
        ValueError: the kind is not carried by ``custom``, or its name is taken.
    """
    global _custom_statuses
    if kind.wire_kind != "custom":
        raise ValueError(f"{kind.name!r}: OpenWOP's kinds are closed; a new kind rides 'custom'")
    if kind.quorum:
        raise ValueError(f"{kind.name!r}: only an approval carries a quorum's members")
    if kind.name in SPECIFIED or kind.name in _ADDED:
        raise ValueError(f"interrupt kind {kind.name!r} is already registered")
    _ADDED[kind.name] = kind
    _custom_statuses = _statuses()
    return kind


def unregister(name: str) -> None:
    """Remove the new kind ``name`` (its interrupts become generic ``custom`` ones)."""
    global _custom_statuses
    _ADDED.pop(name, None)
    _custom_statuses = _statuses()


def registered() -> Mapping[str, InterruptKind]:
    """Every kind in force by name: the specified ones, then the added ones."""
    return {**SPECIFIED, **_ADDED}


def get_kind(name: str) -> InterruptKind:
    """The kind called ``name`` (a wire ``kind`` or an added ``customKind``).

    Raises:
        KeyError: no such kind.
    """
    return SPECIFIED.get(name) or _ADDED[name]


def kind_of(payload: Mapping[str, Any]) -> InterruptKind:
    """The kind of an interrupt payload (a stored, hence valid, one).

    Raises:
        KeyError: the payload's ``kind`` is not an OpenWOP kind.
    """
    wire = payload["kind"]
    if wire == "custom" and _ADDED:
        return _ADDED.get(payload["data"]["customKind"], CUSTOM)
    return SPECIFIED[wire]


def page_for(payload: Mapping[str, Any]) -> GatePage:
    """The reviewer page of ``payload``: an adapter's shape first, else its kind's."""
    for owns, page in _SHAPES:
        if owns(dict(payload)):
            return page
    return kind_of(payload).review


def custom_statuses() -> tuple[tuple[str, str], ...]:
    """``(customKind, status)`` of each added kind whose waiting status is not ``custom``'s
    (for the store, which reads a waiting run's status from its oldest interrupt)."""
    return _custom_statuses


def _statuses() -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            (k.name, k.waiting_status) for k in _ADDED.values() if k.waiting_status != CUSTOM.waiting_status
        )
    )
