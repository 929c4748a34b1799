"""Request bodies and the sub-app's service, for the LangGraph API routes."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request

from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.server.langgraph_api.service import LangGraphService

__all__ = ["json_body", "service_of"]


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object body (``{}`` when empty).

    Raises:
        ValidationError: not JSON, or not an object.
    """
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
