"""Request bodies and the sub-app's service, for the LangGraph API routes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from anyio import CapacityLimiter, to_thread
from fastapi import Request

from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.server.langgraph_api.service import LangGraphService
from wop_langgraph.server.limits import parsed_body

__all__ = ["changing", "json_body", "service_of"]

T = TypeVar("T")


async def changing(
    request: Request, operation: Callable[..., T], *args: Any, limiter: CapacityLimiter | None = None
) -> T:
    """Run a host operation that changes something on the thread pool, counted as a request being
    answered (``host.foreground``: the workers let it go first) only while it runs; a request that
    then waits for the run (``runs/wait``, ``runs/stream``) is not counted for its wait, nor while
    the operation drives the run itself (``Foreground.aside``). ``limiter``: the threads to run
    it on, when not the request threads (a ``runs/wait`` that drives its run)."""
    foreground = service_of(request).host.foreground

    def counted() -> T:
        with foreground.counting():
            return operation(*args)

    return await to_thread.run_sync(counted, limiter=limiter)


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object body (``{}`` when empty): the document the request limits
    parsed and checked already, when they did.

    Raises:
        ValidationError: not JSON, or not an object.
    """
    parsed, body = parsed_body(request.scope)
    if not parsed:
        raw = await request.body()
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except ValueError:
            raise ValidationError("the body is not JSON") from None
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object")
    return body


def service_of(request: Request) -> LangGraphService:
    """The sub-app's :class:`LangGraphService`."""
    service = request.app.state.langgraph
    assert isinstance(service, LangGraphService)
    return service
