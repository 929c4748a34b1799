"""The in-process OpenWOP host over LangGraph graphs (no HTTP)."""

from wop_langgraph.adapters.policy import ApprovalPolicy
from wop_langgraph.host.principal import Membership, MembershipResolver, Principal
from wop_langgraph.host.results import RunNotCompleted
from wop_langgraph.host.runtime import WopHost

__all__ = ["ApprovalPolicy", "Membership", "MembershipResolver", "Principal", "RunNotCompleted", "WopHost"]
