"""``GET /info``, ``GET /ok`` and the assistants: every registered graph is its own default assistant."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from wop_langgraph.host import Principal
from wop_langgraph.protocol.errors import NotFound, ValidationError
from wop_langgraph.server.langgraph_api.auth import require
from wop_langgraph.server.langgraph_api.bodies import json_body, service_of
from wop_langgraph.server.langgraph_api.shapes import assistant_doc

__all__ = ["router"]

router = APIRouter()
Reader = Annotated[Principal, Depends(require("runs:read"))]


def _version() -> str:
    try:
        return version("wop-langgraph")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        return "0"


@router.get("/info")
async def info() -> dict[str, Any]:
    """The server's description (unauthenticated, like LangGraph's: agent-chat-ui's health check)."""
    return {
        "version": _version(),
        "flags": {"assistants": True, "crons": False, "langsmith": False, "strict_resume": True},
        "host": {"kind": "self-hosted", "project_id": None, "revision_id": None, "tenant_id": None},
    }


@router.get("/ok")
async def ok() -> dict[str, bool]:
    return {"ok": True}


@router.post("/assistants/search")
async def search_assistants(request: Request, principal: Reader) -> list[dict[str, Any]]:
    """The registered graphs as assistants, filtered by ``graph_id`` / ``name``, paged."""
    body = await json_body(request)
    service = service_of(request)
    wanted = body.get("graph_id") or body.get("name")
    limit, offset = body.get("limit", 10), body.get("offset", 0)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise ValidationError("limit must be an integer from 1 to 1000", details={"field": "limit"})
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValidationError("offset must be an integer >= 0", details={"field": "offset"})
    docs = [assistant_doc(g, service.started_at) for g in service.graph_ids() if wanted in (None, g)]
    metadata = body.get("metadata") or {}
    docs = [d for d in docs if all(d["metadata"].get(k) == v for k, v in metadata.items())]
    return docs[offset : offset + limit]


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str, request: Request, principal: Reader) -> dict[str, Any]:
    """One assistant, by graph name or by its stable UUID."""
    service = service_of(request)
    return assistant_doc(service.graph_id(assistant_id), service.started_at)


@router.get("/assistants/{assistant_id}/schemas")
async def assistant_schemas(assistant_id: str, request: Request, principal: Reader) -> dict[str, Any]:
    """The graph's input, output and state JSON Schemas (``config_schema`` / ``context_schema`` empty)."""
    service = service_of(request)
    graph_id = service.graph_id(assistant_id)
    graph = service.host.registry.get(graph_id).graph
    try:
        return {
            "graph_id": graph_id,
            "input_schema": graph.get_input_jsonschema(),
            "output_schema": graph.get_output_jsonschema(),
            "state_schema": graph.get_output_jsonschema(),
            "config_schema": None,
            "context_schema": None,
        }
    except Exception as exc:  # a state type pydantic cannot describe
        raise NotFound(f"graph {graph_id!r} has no JSON Schema: {exc}") from None


@router.get("/assistants/{assistant_id}/graph")
async def assistant_graph(assistant_id: str, request: Request, principal: Reader) -> dict[str, Any]:
    """The graph's nodes and edges (``{nodes, edges}``, as LangGraph Studio draws them)."""
    service = service_of(request)
    graph = service.host.registry.get(service.graph_id(assistant_id)).graph
    drawn: dict[str, Any] = graph.get_graph().to_json()
    return drawn
