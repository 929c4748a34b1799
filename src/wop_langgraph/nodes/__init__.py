"""What graph authors call inside a LangGraph node to suspend it as an OpenWOP interrupt."""

from wop_langgraph.nodes.approval import ApprovalDecision, request_approval
from wop_langgraph.nodes.conversation import close_conversation, exchange, start_conversation
from wop_langgraph.nodes.escalation import escalate_on_low_confidence
from wop_langgraph.nodes.questions import ask, custom_interrupt, request_credential, wait_for_event

__all__ = [
    "ApprovalDecision",
    "ask",
    "close_conversation",
    "custom_interrupt",
    "escalate_on_low_confidence",
    "exchange",
    "request_approval",
    "request_credential",
    "start_conversation",
    "wait_for_event",
]
