"""The optional OpenWOP HTTP server over a :class:`~wop_langgraph.host.WopHost` (extra ``server``)."""

from wop_langgraph.server.app import create_app
from wop_langgraph.server.settings import ConfigurationError, Settings

__all__ = ["ConfigurationError", "Settings", "create_app"]
