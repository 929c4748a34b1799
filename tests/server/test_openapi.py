"""``/openapi.json`` describes every route the app serves, with the closed request bodies."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi.routing import APIRoute

from wop_langgraph.server import (
    discovery,
    html,
    routes_events,
    routes_interrupts,
    routes_runs,
    routes_tokens,
)


async def spec_of(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["OpenWOP-Version"] == "2.0"
    return dict(response.json())


async def test_every_route_and_method_is_documented(client: httpx.AsyncClient) -> None:
    spec = await spec_of(client)
    # The routers create_app includes, read from their modules (FastAPI keeps included routers
    # behind a private type in app.routes).
    modules = (discovery, routes_runs, routes_tokens, routes_events, routes_interrupts, html)
    served = {
        (route.path, method.lower())
        for module in modules
        for route in module.router.routes
        if isinstance(route, APIRoute) and route.include_in_schema
        for method in route.methods
    }
    documented = {(path, method) for path, ops in spec["paths"].items() for method in ops}
    assert served == documented
    for path in ("/runs", "/runs/{runId}/interrupts/{nodeId}", "/interrupts/{token}", "/.well-known/openwop"):
        assert path in spec["paths"]


async def test_resolve_bodies_are_closed_and_require_resume_value(client: httpx.AsyncClient) -> None:
    spec = await spec_of(client)
    schemas = spec["components"]["schemas"]
    for path in ("/runs/{runId}/interrupts/{nodeId}", "/interrupts/{token}"):
        body = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        schema = schemas[body["$ref"].rsplit("/", 1)[-1]] if "$ref" in body else body
        assert schema.get("additionalProperties") is False, (path, schema)
        assert schema.get("required") == ["resumeValue"], (path, schema)
