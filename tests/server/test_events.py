"""Events over HTTP: long-poll and SSE, stream modes, Last-Event-ID."""

from __future__ import annotations

import asyncio
import json
import time

import httpx

from tests.official import event_errors
from tests.server.conftest import ALICE, READER, assert_error, started_run
from wop_langgraph.protocol.ids import project_id


async def waiting_run(client: httpx.AsyncClient) -> str:
    """An ``approve`` run, once it waits on its gate."""
    run_id, snapshot = await started_run(client, "approve")
    assert snapshot["status"] == "waiting-approval"
    return run_id


async def test_poll(client: httpx.AsyncClient) -> None:
    run_id = await waiting_run(client)
    wire = project_id(run_id)
    page = (await client.get(f"/runs/{wire}/events/poll?timeout=1", headers=READER)).json()
    assert set(page) == {"runId", "events", "lastSequence", "status", "isTerminal"}
    assert page["status"] == "waiting-approval" and page["isTerminal"] is False
    sequences = [e["sequence"] for e in page["events"]]
    assert sequences == list(range(len(sequences))) and page["lastSequence"] == sequences[-1]
    for event in page["events"]:
        assert event_errors(event) == [], event
    assert "interrupt.requested" in {e["type"] for e in page["events"]}
    started = time.monotonic()
    empty = (
        await client.get(
            f"/runs/{wire}/events/poll?afterSequence={page['lastSequence']}&timeout=1", headers=READER
        )
    ).json()
    assert empty["events"] == [] and time.monotonic() - started >= 0.9
    assert empty["lastSequence"] == page["lastSequence"]
    past = (await client.get(f"/runs/{wire}/events/poll?afterSequence=9999&timeout=0", headers=READER)).json()
    assert past["events"] == [] and past["lastSequence"] == page["lastSequence"]

    async def resolve_later() -> None:
        await asyncio.sleep(0.3)
        await client.post(
            f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
        )

    task = asyncio.create_task(resolve_later())
    waited = (
        await client.get(
            f"/runs/{wire}/events/poll?afterSequence={page['lastSequence']}&timeout=10", headers=READER
        )
    ).json()
    await task
    assert waited["events"] and waited["events"][0]["sequence"] == page["lastSequence"] + 1
    assert_error(
        await client.get(f"/runs/{wire}/events/poll?timeout=99", headers=READER), 400, "validation_error"
    )
    assert_error(
        await client.get(f"/runs/{wire}/events/poll?streamMode=values", headers=READER),
        400,
        "unsupported_stream_mode",
    )


def parse_sse(text: str) -> list[dict[str, str]]:
    frames = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        if "data" in fields:
            frames.append(fields)
    return frames


async def test_sse_modes_and_resume(client: httpx.AsyncClient) -> None:
    run_id = await waiting_run(client)
    wire = project_id(run_id)
    resolved = await client.post(
        f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
    )
    assert resolved.status_code == 200 and resolved.json()["status"] == "running", resolved.text
    # The stream follows the run as a worker drives it, through its terminal event.
    response = await client.get(f"/runs/{wire}/events", headers=READER)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["openwop-version"] == "2.0"
    updates = parse_sse(response.text)
    types = [f["event"] for f in updates]
    assert types[-1] == "run.completed"
    assert "interrupt.requested" in types and "node.started" not in types
    for frame in updates:
        doc = json.loads(frame["data"])
        assert str(doc["sequence"]) == frame["id"] and doc["type"] == frame["event"]
    debug = parse_sse((await client.get(f"/runs/{wire}/events?streamMode=debug", headers=READER)).text)
    assert "node.started" in [f["event"] for f in debug]
    assert [int(f["id"]) for f in debug] == list(range(len(debug)))
    resumed = parse_sse(
        (
            await client.get(
                f"/runs/{wire}/events?streamMode=debug", headers={**READER, "Last-Event-ID": "3"}
            )
        ).text
    )
    assert int(resumed[0]["id"]) == 4
    bad = await client.get(f"/runs/{wire}/events?streamMode=values", headers=READER)
    body = assert_error(bad, 400, "unsupported_stream_mode")
    assert body["details"]["supported"] == ["updates", "debug"]
    assert_error(
        await client.get(f"/runs/{wire}/events?streamMode=nonsense", headers=READER),
        400,
        "unsupported_stream_mode",
    )
