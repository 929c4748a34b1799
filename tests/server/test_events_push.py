"""Event readers are woken by appends, not by polling: idle streams cost no queries; streams are limited."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy import event

from tests.server.conftest import ALICE, READER, assert_error, at_rest, make_settings
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app


@contextmanager
def counted_statements(host: WopHost) -> Iterator[list[str]]:
    """Every SQL statement the host's engine runs while the block is open."""
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(host.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(host.engine, "before_cursor_execute", count)


async def waiting_run(client: httpx.AsyncClient) -> str:
    created = await client.post("/runs", json={"workflowId": "approve"}, headers=ALICE)
    assert created.status_code == 201, created.text
    run_id = str(created.json()["runId"])
    assert (await at_rest(client, run_id))["status"] == "waiting-approval"
    return run_id


@pytest.fixture
def live_url(app: FastAPI) -> Iterator[str]:
    """The app served by a real uvicorn server on a free loopback port, in this process.

    In process so the test can watch the engine's statements; httpx's ASGI transport would
    buffer a whole SSE response instead of streaming it.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


async def test_an_idle_stream_runs_no_queries_and_wakes_on_append(live_url: str, host: WopHost) -> None:
    async with httpx.AsyncClient(base_url=live_url, timeout=30) as client:
        await _idle_stream_then_append(client, host)


async def _idle_stream_then_append(client: httpx.AsyncClient, host: WopHost) -> None:
    run_id = await waiting_run(client)
    wire = project_id(run_id)
    frames: list[dict[str, Any]] = []

    async def read_stream() -> None:
        async with client.stream("GET", f"/runs/{wire}/events", headers=READER) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    frames.append(json.loads(line[5:]))

    reader = asyncio.create_task(read_stream())
    await asyncio.sleep(1.0)  # the stream has sent the backlog and waits
    backlog = len(frames)
    assert backlog and frames[-1]["type"] in ("interrupt.requested", "approval.requested")
    with counted_statements(host) as statements:
        await asyncio.sleep(2.0)
    # Waiting costs nothing: no read of the log (idle workers still look at the queue).
    assert not [q for q in statements if "wop_events" in q], statements
    resolved = await client.post(
        f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
    )
    assert resolved.status_code == 200, resolved.text
    await asyncio.wait_for(reader, 15)  # woken by the appends, it reads through run.completed
    assert frames[-1]["type"] == "run.completed"
    assert [f["sequence"] for f in frames] == sorted(f["sequence"] for f in frames)


async def test_a_long_poll_wakes_on_append(client: httpx.AsyncClient) -> None:
    run_id = await waiting_run(client)
    wire = project_id(run_id)
    first = (await client.get(f"/runs/{wire}/events/poll?timeout=0", headers=READER)).json()

    async def resolve_later() -> None:
        await asyncio.sleep(0.5)
        await client.post(
            f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
        )

    task = asyncio.create_task(resolve_later())
    started = asyncio.get_running_loop().time()
    page = (
        await client.get(
            f"/runs/{wire}/events/poll?afterSequence={first['lastSequence']}&timeout=20", headers=READER
        )
    ).json()
    await task
    assert page["events"], page
    assert asyncio.get_running_loop().time() - started < 10  # woken, not timed out


@pytest.fixture
def limited_app(host: WopHost, db_url: str) -> FastAPI:
    return create_app(host, make_settings(db_url, max_streams_per_key=2, max_streams_total=50))


async def test_open_streams_are_limited_per_caller(limited_app: FastAPI) -> None:
    transport = httpx.ASGITransport(app=limited_app)
    async with (
        limited_app.router.lifespan_context(limited_app),
        httpx.AsyncClient(transport=transport, base_url="http://testserver") as client,
    ):
        run_id = await waiting_run(client)
        wire = project_id(run_id)
        polls = [
            asyncio.create_task(
                client.get(f"/runs/{wire}/events/poll?afterSequence=999&timeout=3", headers=READER)
            )
            for _ in range(2)
        ]
        await asyncio.sleep(0.5)
        third = await client.get(f"/runs/{wire}/events/poll?afterSequence=999&timeout=1", headers=READER)
        body = assert_error(third, 429, "rate_limited")
        assert int(third.headers["retry-after"]) >= 1
        assert body["details"]["scope"] == "apiKey"
        other = await client.get(f"/runs/{wire}/events/poll?timeout=0", headers=ALICE)
        assert other.status_code == 200  # another caller is not limited by rita's streams
        for poll in polls:
            assert (await poll).status_code == 200
        again = await client.get(f"/runs/{wire}/events/poll?timeout=0", headers=READER)
        assert again.status_code == 200  # the slots were given back
