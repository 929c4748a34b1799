"""The reviewer page's forms, one :class:`~.base.GatePage` per kind of gate (or adapter shape).

This registry is the one place a kind is added: :func:`page_for` picks a gate's page by its
shape first (an approval built by an adapter: Agent Inbox, ``HumanInTheLoopMiddleware``), then
by its ``kind``; a kind with no page of its own gets :class:`~.answers.AnswerPage` (inputs from
its ``resumeSchema``). :mod:`wop_langgraph.server.html` renders whatever page it gets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from wop_langgraph.adapters.agent_inbox import AgentInboxInterrupt
from wop_langgraph.adapters.hitl_middleware import HitlMiddlewareInterrupt
from wop_langgraph.server.review.answers import AnswerPage, ConversationPage
from wop_langgraph.server.review.approval import ApprovalPage
from wop_langgraph.server.review.base import Answered, GatePage, Options
from wop_langgraph.server.review.inbox import AgentInboxPage
from wop_langgraph.server.review.low_confidence import LowConfidencePage
from wop_langgraph.server.review.questions import ClarificationPage
from wop_langgraph.server.review.tool_calls import ToolCallsPage
from wop_langgraph.server.review.waiting import CredentialPage, ExternalEventPage

__all__ = ["KINDS", "SHAPES", "Answered", "GatePage", "Options", "page_for"]

_CONVERSATION: Final = ConversationPage()
#: A gate's page by its ``kind``.
KINDS: Final[Mapping[str, GatePage]] = {
    "approval": ApprovalPage(),
    "clarification": ClarificationPage(),
    "low-confidence": LowConfidencePage(),
    "external-event": ExternalEventPage(),
    "credential": CredentialPage(),
    "conversation.start": _CONVERSATION,
    "conversation.exchange": _CONVERSATION,
    "conversation.close": _CONVERSATION,
    "custom": AnswerPage(),
}
#: Pages of payloads an adapter built, tried before :data:`KINDS` (the payload says which owns it).
SHAPES: Final[tuple[tuple[Callable[[dict[str, Any]], bool], GatePage], ...]] = (
    (AgentInboxInterrupt().owns, AgentInboxPage()),
    (HitlMiddlewareInterrupt().owns, ToolCallsPage()),
)
_FALLBACK: Final = AnswerPage()


def page_for(payload: Mapping[str, Any]) -> GatePage:
    """The page that renders and reads the forms of ``payload``."""
    for owns, page in SHAPES:
        if owns(dict(payload)):
            return page
    return KINDS.get(str(payload.get("kind")), _FALLBACK)
