"""What graph authors call inside a LangGraph node to suspend it as an OpenWOP interrupt.

Under :class:`~wop_langgraph.host.WopHost` every call gets the whole contract (keys, event log,
eligibility, quorum, timeouts, tokens). Under plain LangGraph (``graph.invoke``, LangGraph
Studio, ``langgraph dev``) the same calls suspend with LangGraph's ``interrupt()`` carrying the
OpenWOP payload, take the plain resume value from ``Command(resume=...)``, check it as the host
does and return the same results; what only the host can enforce is refused at the call or
documented as not enforced (see each function).
"""

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
