"""Configured request limits: body size, JSON depth, string and id length, events page size."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.server.conftest import ALICE, assert_error, at_rest, make_settings
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app

LIMITS = {
    "max_body_bytes": 4096,
    "max_json_depth": 8,
    "max_string_chars": 300,
    "max_id_chars": 100,
    "events_page_size": 2,
}


@pytest.fixture
async def limited(host: WopHost, db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(host, make_settings(db_url, **LIMITS))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://testserver") as client,
    ):
        yield client


async def create(client: httpx.AsyncClient, inputs: object) -> httpx.Response:
    return await client.post("/runs", json={"workflowId": "approve", "inputs": inputs}, headers=ALICE)


async def suspended_run(client: httpx.AsyncClient) -> str:
    """A run waiting at its gate (the server answers the create before the graph ran)."""
    run_id = (await create(client, {})).json()["runId"]
    assert (await at_rest(client, run_id))["status"] == "waiting-approval"
    return project_id(run_id)


async def test_each_limit_is_enforced_at_its_edge(limited: httpx.AsyncClient) -> None:
    assert (await create(limited, {"s": "x" * 300})).status_code == 201
    body = assert_error(await create(limited, {"s": "x" * 301}), 400, "validation_error")
    assert body["details"] == {"path": "/inputs/s", "rule": "maxLength"}
    # The body object is one of the 8 levels; inputs may nest seven more.
    assert (await create(limited, [[[[[[[1]]]]]]])).status_code == 201
    body = assert_error(await create(limited, [[[[[[[[1]]]]]]]]), 400, "validation_error")
    assert body["details"]["rule"] == "depth"
    body = assert_error(await create(limited, ["x" * 250] * 20), 413, "payload_too_large")
    assert body["details"] == {"maxBodyBytes": 4096}
    long_id = "acme~2F" + "r" * 94
    assert_error(await limited.get(f"/runs/{long_id}", headers=ALICE), 400, "validation_error")
    assert_error(await limited.get(f"/runs/{long_id[:-1]}", headers=ALICE), 404, "not_found")


async def test_poll_answers_one_page_at_a_time(limited: httpx.AsyncClient) -> None:
    run = await suspended_run(limited)
    seen: list[int] = []
    after = -1
    for _ in range(20):
        page = (
            await limited.get(f"/runs/{run}/events/poll?afterSequence={after}&timeout=0", headers=ALICE)
        ).json()
        assert len(page["events"]) <= 2
        if not page["events"]:
            break
        seen += [e["sequence"] for e in page["events"]]
        after = seen[-1]
    assert seen == list(range(page["lastSequence"] + 1)) and len(seen) > 2


async def test_a_page_emptied_by_the_stream_mode_is_passed_over(limited: httpx.AsyncClient) -> None:
    run = await suspended_run(limited)
    debug = (await limited.get(f"/runs/{run}/events/poll?afterSequence=0&timeout=0", headers=ALICE)).json()
    # After run.started come node-level events (debug only): a whole page of them.
    assert [e["type"] for e in debug["events"]] == ["node.started", "node.completed"], json.dumps(debug)
    query = "afterSequence=0&streamMode=updates&timeout=2"
    page = (await limited.get(f"/runs/{run}/events/poll?{query}", headers=ALICE)).json()
    assert page["events"] and page["events"][0]["sequence"] > 2, json.dumps(page)
    assert not any(e["type"] in ("node.started", "node.completed") for e in page["events"])
