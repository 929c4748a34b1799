"""``x-api-key`` authentication for the LangGraph Server API.

LangGraph's clients send their key in ``x-api-key`` (the SDKs' ``api_key``, agent-chat-ui's and
Agent Inbox's "LangSmith API key" field). The key names the same principal, tenant and scopes as
``Authorization: Bearer`` on the OpenWOP surface (``WOP_API_KEYS``); a Bearer header is accepted
too. A missing or unknown key is ``401``; a known key without the operation's scope ``403``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request

from wop_langgraph.host import Principal
from wop_langgraph.protocol.errors import Unauthenticated
from wop_langgraph.server.auth import principal_of_key, scoped

__all__ = ["caller_key", "require"]


def _credential(request: Request) -> str:
    key = request.headers.get("x-api-key", "").strip()
    if key:
        return key
    scheme, _, credential = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and credential.strip():
        return credential.strip()
    raise Unauthenticated("send the API key in the x-api-key header")


def _principal(request: Request) -> Principal:
    return principal_of_key(request, _credential(request))


def require(*scopes: str) -> Callable[[Request], Coroutine[Any, Any, Principal]]:
    """A dependency that authenticates the request's key and demands every one of ``scopes``."""
    return scoped(_principal, *scopes)


def caller_key(principal: Principal) -> str:
    """The key an open stream is counted under (the same as the OpenWOP event streams')."""
    return f"{principal.tenant}/{principal.subject_id}"
