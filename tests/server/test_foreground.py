"""The server counts its requests that change something, so its in-process workers let them go first.

See :mod:`wop_langgraph.host.foreground`. Reads are not counted: an event stream or a long-poll
would otherwise hold the workers back for as long as it stays open.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.server.conftest import ALICE, at_rest, make_settings, serving
from wop_langgraph.host import WopHost
from wop_langgraph.server import create_app


async def test_a_request_that_changes_something_is_counted_until_answered(host: WopHost, db_url: str) -> None:
    app = create_app(host, make_settings(db_url, workers=0))
    seen: dict[str, int] = {}
    create, snapshot = host.create_run, host.snapshot

    def counted_create(*args: Any, **kwargs: Any) -> Any:
        seen["POST /runs"] = host.foreground.answering
        return create(*args, **kwargs)

    def counted_snapshot(*args: Any, **kwargs: Any) -> Any:
        seen["GET /runs/{id}"] = host.foreground.answering
        return snapshot(*args, **kwargs)

    host.create_run = counted_create  # type: ignore[method-assign]
    host.snapshot = counted_snapshot  # type: ignore[method-assign]
    async with serving(app) as client:
        response = await client.post("/runs", json={"workflowId": "review"}, headers=ALICE)
        assert response.status_code == 201, response.text
        run_id = response.json()["runId"]
        assert (await client.get("/runs/" + run_id.replace("/", "~2F"), headers=ALICE)).status_code == 200
    assert seen == {"POST /runs": 1, "GET /runs/{id}": 0}
    assert host.foreground.answering == 0


async def test_the_servers_workers_defer_to_requests_being_answered(host: WopHost, db_url: str) -> None:
    app = create_app(host, make_settings(db_url, workers=2, worker_defer_seconds=30))
    async with serving(app) as client:
        pool = host.start_workers()  # the server's, started already
        deadline = time.monotonic() + 15
        while pool.idle < pool.concurrency:  # each worker past its first look at the queue
            assert time.monotonic() < deadline, "the workers did not settle"
            await asyncio.sleep(0.01)
        host.foreground.enter()  # a request being answered, as long as the test wants
        try:
            response = await client.post("/runs", json={"workflowId": "review"}, headers=ALICE)
            assert response.status_code == 201, response.text
            run_id = response.json()["runId"]
            await asyncio.sleep(0.5)
            assert (await client.get("/runs/" + run_id.replace("/", "~2F"), headers=ALICE)).json()[
                "status"
            ] == "pending"
        finally:
            host.foreground.leave()
        assert (await at_rest(client, run_id))["status"] == "waiting-approval"
