"""The in-process OpenWOP host over LangGraph graphs (no HTTP)."""

from wop_langgraph.adapters.policy import ApprovalPolicy
from wop_langgraph.host.results import RunNotCompleted
from wop_langgraph.host.runtime import WopHost
from wop_langgraph.protocol.principal import Membership, MembershipResolver, Principal

__all__ = ["ApprovalPolicy", "Membership", "MembershipResolver", "Principal", "RunNotCompleted", "WopHost"]
