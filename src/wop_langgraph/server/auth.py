"""API-key authentication and scope checks, as FastAPI dependencies.

``Authorization: Bearer <api key>`` names a :class:`~wop_langgraph.host.Principal` configured in
``WOP_API_KEYS``. A missing or unknown key is ``401 unauthenticated`` (with
``WWW-Authenticate: Bearer``); a known key without the operation's scope is ``403 forbidden``.

The dependencies are ``async``: they do no I/O (the keys are configuration, held in memory),
and FastAPI would otherwise run each of them on the thread pool, a hop per request. They are
also flat (no sub-dependencies): FastAPI solves each dependency on every request.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request

from wop_langgraph.host import Principal
from wop_langgraph.protocol.errors import Forbidden, Unauthenticated
from wop_langgraph.server.state import state_of

__all__ = ["Caller", "authenticate", "principal_of_key", "require_scopes", "scoped"]


async def authenticate(request: Request) -> Principal:
    """The principal of the request's bearer API key.

    Raises:
        Unauthenticated: no ``Authorization: Bearer`` header, or an unknown key.
    """
    return _principal(request)


def _principal(request: Request) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, credential = header.partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential:
        raise Unauthenticated("send Authorization: Bearer <api key>")
    return principal_of_key(request, credential)


def principal_of_key(request: Request, credential: str) -> Principal:
    """The principal ``credential`` (an API key, however the request carried it) names.

    Raises:
        Unauthenticated: the key is not configured.
    """
    found: Principal | None = None
    # Compare against every key so the time taken does not tell which prefix matched.
    for key, principal in state_of(request).api_keys.principals.items():
        if hmac.compare_digest(key.encode(), credential.encode()):
            found = principal
    if found is None:
        raise Unauthenticated("the API key is not known to this host")
    return found


def scoped(
    authenticated: Callable[[Request], Principal], *scopes: str
) -> Callable[[Request], Coroutine[Any, Any, Principal]]:
    """A dependency that authenticates with ``authenticated`` and demands every one of ``scopes``."""

    async def dependency(request: Request) -> Principal:
        principal = authenticated(request)
        missing = [s for s in scopes if s not in principal.scopes]
        if missing:
            raise Forbidden(
                f"the API key lacks the scope {', '.join(missing)}", details={"requiredScopes": list(scopes)}
            )
        return principal

    return dependency


def require_scopes(*scopes: str) -> Callable[[Request], Coroutine[Any, Any, Principal]]:
    """A dependency that authenticates (``Authorization: Bearer``), then demands each of ``scopes``."""
    return scoped(_principal, *scopes)


Caller = Annotated[Principal, Depends(authenticate)]
