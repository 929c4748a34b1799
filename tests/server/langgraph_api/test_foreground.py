"""A ``runs/wait`` counts as a request being answered (which the workers let go first) only while it
changes something, not for its whole wait: the workers would otherwise defer to it until it ends."""

from __future__ import annotations

import asyncio

from tests.server.conftest import make_settings, serving
from tests.server.langgraph_api.graphs import WORKFLOWS
from wop_langgraph.host import WopHost
from wop_langgraph.server import create_app

ALICE = {"x-api-key": "alice-key"}


async def test_a_waiting_request_is_not_counted_while_it_waits(db_url: str) -> None:
    host = WopHost.from_url(db_url)
    host.register("slow", WORKFLOWS["slow"])
    try:
        app = create_app(host, make_settings(db_url, workers=1))
        async with serving(app) as client:
            thread_id = (await client.post("/langgraph/threads", json={}, headers=ALICE)).json()["thread_id"]
            waiting = asyncio.create_task(
                client.post(
                    f"/langgraph/threads/{thread_id}/runs/wait",
                    json={"assistant_id": "slow", "input": {}},
                    headers=ALICE,
                    timeout=60,
                )
            )
            for _ in range(200):
                thread = (await client.get(f"/langgraph/threads/{thread_id}", headers=ALICE)).json()
                if thread["status"] == "busy":
                    break
                await asyncio.sleep(0.05)
            assert thread["status"] == "busy"
            await asyncio.sleep(0.2)
            assert not waiting.done() and host.foreground.answering == 0
            (run,) = (await client.get(f"/langgraph/threads/{thread_id}/runs", headers=ALICE)).json()
            cancelled = await client.post(
                f"/langgraph/threads/{thread_id}/runs/{run['run_id']}/cancel", headers=ALICE
            )
            assert cancelled.status_code == 202
            answered = await asyncio.wait_for(waiting, 30)
            assert answered.status_code == 200 and "done" not in answered.json()
            assert host.foreground.answering == 0
    finally:
        host.saver.close()
