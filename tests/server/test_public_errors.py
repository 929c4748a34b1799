"""Over HTTP, a failed run shows a code and a client message; the raw exception stays in the log."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.host.test_errors_public import SECRET_TEXT
from tests.host.test_errors_public import _graph as exploding_graph
from tests.server.conftest import ALICE, READER, make_settings, serving
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app


async def failed_snapshot(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    """The run's snapshot once it has failed (bounded wait: the engine may answer at commit)."""
    deadline = time.monotonic() + 30
    while True:
        snapshot: dict[str, Any] = (await client.get(f"/runs/{project_id(run_id)}", headers=READER)).json()
        if snapshot["status"] == "failed" or time.monotonic() > deadline:
            return snapshot
        await asyncio.sleep(0.05)


async def test_snapshot_and_events_of_a_failed_run_carry_no_raw_detail(
    host: WopHost, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    host.register("explode", exploding_graph())
    app: FastAPI = create_app(host, make_settings(db_url))
    with caplog.at_level(logging.ERROR, logger="wop_langgraph.host.errors"):
        async with serving(app, "http://t") as client:
            created = await client.post("/runs", json={"workflowId": "explode"}, headers=ALICE)
            assert created.status_code == 201, created.text
            run_id = created.json()["runId"]
            snapshot = await failed_snapshot(client, run_id)
            events = await client.get(f"/runs/{project_id(run_id)}/events/poll?timeout=0", headers=READER)
    assert snapshot["status"] == "failed"
    assert snapshot["error"]["code"] == "internal_error"
    served = repr(snapshot) + events.text
    for leak in ("hunter2", "secret_settings", "RuntimeError", "During task", "Traceback"):
        assert leak not in served
    assert snapshot["error"]["details"]["correlationId"] in caplog.text
    assert SECRET_TEXT in caplog.text
