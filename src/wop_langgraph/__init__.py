"""wop-langgraph: the OpenWOP interrupt contract for LangGraph graphs."""

# First, before anything imports jsonschema (see the module).
import wop_langgraph._deferred_imports  # noqa: F401
from wop_langgraph.host import ApprovalPolicy, Membership, Principal, WopHost
from wop_langgraph.nodes import (
    ApprovalDecision,
    ask,
    close_conversation,
    custom_interrupt,
    escalate_on_low_confidence,
    exchange,
    request_approval,
    request_credential,
    start_conversation,
    wait_for_event,
)
from wop_langgraph.protocol.errors import ApprovalRejected, WopError
from wop_langgraph.store.saver import AsyncSQLModelSaver, SQLModelSaver

__all__ = [
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRejected",
    "AsyncSQLModelSaver",
    "Membership",
    "Principal",
    "SQLModelSaver",
    "WopError",
    "WopHost",
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
