"""``/openapi.json`` describes every route the app serves, with the closed request bodies."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from fastapi.routing import APIRoute

from tests.server.conftest import ALICE
from tests.server.graphs import WORKFLOWS
from wop_langgraph.server import (
    discovery,
    html,
    inbox_page,
    routes_events,
    routes_fork,
    routes_interrupts,
    routes_lists,
    routes_proof,
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
    modules = (
        discovery,
        routes_runs,
        routes_lists,
        routes_fork,
        routes_tokens,
        routes_events,
        routes_interrupts,
        html,
        inbox_page,
        routes_proof,
    )
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


async def test_errors_security_and_media_types_are_described(client: httpx.AsyncClient) -> None:
    spec = await spec_of(client)
    assert spec["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key from WOP_API_KEYS.",
    }
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    resolve = spec["paths"]["/runs/{runId}/interrupts/{nodeId}"]["post"]
    assert resolve["security"] == [{"apiKey": []}]
    assert {"400", "401", "403", "404", "409", "413"} <= set(resolve["responses"])
    assert "422" not in resolve["responses"]
    error = resolve["responses"]["404"]["content"]["application/json"]["schema"]
    assert error == {"$ref": "#/components/schemas/ErrorEnvelope"}
    by_token = spec["paths"]["/interrupts/{token}"]["post"]
    assert by_token["security"] == []
    events = spec["paths"]["/runs/{runId}/events"]["get"]["responses"]["200"]["content"]
    assert list(events) == ["text/event-stream"]
    params = {p["name"]: p["schema"] for p in resolve["parameters"]}
    assert params["runId"]["pattern"].startswith("^")
    assert params["Idempotency-Key"]["pattern"] == "^[A-Za-z0-9._~-]{22,128}$"
    create = spec["components"]["schemas"]["CreateRunBody"]["properties"]
    assert create["workflowId"]["enum"] == sorted(WORKFLOWS)
    assert create["mode"] == {"type": "null", "title": "Mode", "description": create["mode"]["description"]}


async def test_head_answers_every_get_route_without_a_body(client: httpx.AsyncClient) -> None:
    head = await client.head("/.well-known/openwop")
    get = await client.get("/.well-known/openwop")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["etag"] == get.headers["etag"]
    missing = await client.head("/runs/acme~2FAAAAAAAAAAAAAAAAAAAAAA", headers=ALICE)
    assert missing.status_code == 404 and missing.content == b""


async def test_options_lists_every_method_of_the_path(client: httpx.AsyncClient) -> None:
    response = await client.options("/interrupts/ow2.hs256.k1.x.y")
    assert response.status_code == 204
    assert response.headers["allow"] == "GET, HEAD, OPTIONS, POST"
    refused = await client.delete("/interrupts/ow2.hs256.k1.x.y")
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, HEAD, OPTIONS, POST"
    assert (await client.options("/runs")).headers["allow"] == "GET, HEAD, OPTIONS, POST"
    assert (await client.options("/interrupts")).headers["allow"] == "GET, HEAD, OPTIONS"


async def test_head_on_the_event_stream_ends_at_the_headers(client: httpx.AsyncClient) -> None:
    created = await client.post("/runs", json={"workflowId": "review", "inputs": {}}, headers=ALICE)
    wire = created.json()["eventsUrl"]
    # The run waits on a gate, so a GET stream would stay open; HEAD must not.
    response = await asyncio.wait_for(client.head(wire, headers=ALICE), timeout=20)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content == b""
