"""wop-langgraph: the OpenWOP interrupt contract for LangGraph graphs."""

from wop_langgraph.protocol.errors import WopError

__all__ = ["WopError"]
