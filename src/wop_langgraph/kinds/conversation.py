"""``conversation.start`` / ``.exchange`` / ``.close``: a multi-turn conversation with a person."""

from __future__ import annotations

from typing import Final

from wop_langgraph.kinds.base import InterruptKind
from wop_langgraph.kinds.review.answers import ConversationPage
from wop_langgraph.nodes.conversation import close_conversation, exchange, start_conversation
from wop_langgraph.protocol.payloads import (
    ConversationCloseInterrupt,
    ConversationExchangeInterrupt,
    ConversationStartInterrupt,
)
from wop_langgraph.protocol.resume_check import check_conversation_turn, check_exchange
from wop_langgraph.protocol.snapshot import waiting_status_for

__all__ = ["CONVERSATION_CLOSE", "CONVERSATION_EXCHANGE", "CONVERSATION_START"]

_PAGE: Final = ConversationPage()

# Their status is the spec's table (protocol.snapshot): waiting-approval, the v1 "reuse" rule.
CONVERSATION_START: Final = InterruptKind(
    name="conversation.start",
    wire_kind="conversation.start",
    payload_model=ConversationStartInterrupt,
    waiting_status=waiting_status_for("conversation.start"),
    review=_PAGE,
    node_call=start_conversation,
    resume_rule=check_conversation_turn,
)
CONVERSATION_EXCHANGE: Final = InterruptKind(
    name="conversation.exchange",
    wire_kind="conversation.exchange",
    payload_model=ConversationExchangeInterrupt,
    waiting_status=waiting_status_for("conversation.exchange"),
    review=_PAGE,
    node_call=exchange,
    resume_rule=check_exchange,
    suspend_reason="conversation-input",
)
CONVERSATION_CLOSE: Final = InterruptKind(
    name="conversation.close",
    wire_kind="conversation.close",
    payload_model=ConversationCloseInterrupt,
    waiting_status=waiting_status_for("conversation.close"),
    review=_PAGE,
    node_call=close_conversation,
    resume_rule=check_conversation_turn,
)
