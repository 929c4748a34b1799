"""Idempotency-Key on POST /runs, cancel and both resolve surfaces."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import httpx

from tests.host._graphs import approval_graph
from tests.server.conftest import ALICE, assert_error, at_rest, make_settings, serving, started_run
from wop_langgraph._clock import utcnow
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app
from wop_langgraph.server.idempotency import REPLAY_HEADER


def key() -> str:
    return str(uuid.uuid4())


async def test_create_run_replay_and_mismatch(client: httpx.AsyncClient) -> None:
    assert_error(
        await client.post(
            "/runs", json={"workflowId": "review"}, headers={**ALICE, "Idempotency-Key": "short"}
        ),
        400,
        "idempotency_key_invalid",
    )
    k = key()
    first = await client.post("/runs", json={"workflowId": "review"}, headers={**ALICE, "Idempotency-Key": k})
    second = await client.post(
        "/runs", json={"workflowId": "review"}, headers={**ALICE, "Idempotency-Key": k}
    )
    assert first.status_code == second.status_code == 201
    assert second.json()["runId"] == first.json()["runId"]
    assert second.headers[REPLAY_HEADER] == "true" and REPLAY_HEADER.lower() not in first.headers
    other = await client.post(
        "/runs", json={"workflowId": "approve"}, headers={**ALICE, "Idempotency-Key": k}
    )
    body = assert_error(other, 409, "idempotency_key_mismatch")
    assert "runId" not in body and "runId" not in body.get("details", {})


async def test_validation_errors_are_not_cached(client: httpx.AsyncClient) -> None:
    k = key()
    bad = await client.post(
        "/runs", json={"workflowId": "review", "x": 1}, headers={**ALICE, "Idempotency-Key": k}
    )
    assert_error(bad, 400, "validation_error")
    good = await client.post("/runs", json={"workflowId": "review"}, headers={**ALICE, "Idempotency-Key": k})
    assert good.status_code == 201


async def test_resolve_replay_on_both_surfaces(client: httpx.AsyncClient) -> None:
    run_id, _ = await started_run(client, "review")
    wire = project_id(run_id)
    k = key()
    body = {"resumeValue": {"action": "accept"}}
    first = await client.post(
        f"/runs/{wire}/interrupts/review", json=body, headers={**ALICE, "Idempotency-Key": k}
    )
    replay = await client.post(
        f"/runs/{wire}/interrupts/review", json=body, headers={**ALICE, "Idempotency-Key": k}
    )
    assert first.status_code == replay.status_code == 200
    assert replay.json() == first.json() and replay.headers[REPLAY_HEADER] == "true"
    assert first.json()["status"] == "running"  # answered at commit; the replay repeats it
    other = await client.post(
        f"/runs/{wire}/interrupts/review",
        json={"resumeValue": {"action": "reject"}},
        headers={**ALICE, "Idempotency-Key": k},
    )
    assert_error(other, 409, "idempotency_key_mismatch")
    fresh = await client.post(
        f"/runs/{wire}/interrupts/review", json=body, headers={**ALICE, "Idempotency-Key": key()}
    )
    assert_error(fresh, 409, "interrupt_already_resolved")
    assert (await at_rest(client, run_id))["status"] == "waiting-input"

    token = (await client.post(f"/runs/{wire}/interrupts/clarify/tokens", json={}, headers=ALICE)).json()[
        "token"
    ]
    t = key()
    answer = {"resumeValue": {"answers": {"q1": "blue"}}}
    assert_error(
        await client.post(f"/interrupts/{token}", json=answer, headers={"Idempotency-Key": "short"}),
        400,
        "idempotency_key_invalid",
    )
    one = await client.post(f"/interrupts/{token}", json=answer, headers={"Idempotency-Key": t})
    two = await client.post(f"/interrupts/{token}", json=answer, headers={"Idempotency-Key": t})
    assert one.status_code == two.status_code == 200
    assert two.json() == one.json() == {"runId": run_id, "nodeId": "clarify", "status": "running"}
    assert two.headers[REPLAY_HEADER] == "true"
    assert (await at_rest(client, run_id))["status"] == "completed"


async def test_cancel_replay(client: httpx.AsyncClient) -> None:
    run_id = str((await client.post("/runs", json={"workflowId": "review"}, headers=ALICE)).json()["runId"])
    wire = project_id(run_id)
    k = key()
    first = await client.post(f"/runs/{wire}/cancel", json={}, headers={**ALICE, "Idempotency-Key": k})
    again = await client.post(f"/runs/{wire}/cancel", json={}, headers={**ALICE, "Idempotency-Key": k})
    assert first.status_code == again.status_code == 200 and again.headers[REPLAY_HEADER] == "true"
    assert_error(await client.post(f"/runs/{wire}/cancel", json={}, headers=ALICE), 409, "run_terminal")


async def test_a_replay_after_the_token_expired_answers_the_recorded_response(db_url: str) -> None:
    """A same-key replay of a token resolve answers what was recorded while the token was valid,
    even once the token has expired; the MAC is still checked, and a new key is judged on expiry."""
    offset = timedelta()

    def clock() -> datetime:
        return utcnow() + offset

    host = WopHost.from_url(db_url, clock=clock)
    host.register("approve", approval_graph())
    app = create_app(host, make_settings(db_url))
    try:
        async with serving(app) as client:
            run_id, snapshot = await started_run(client, "approve")
            assert snapshot["status"] == "waiting-approval"
            minted = await client.post(
                f"/runs/{project_id(run_id)}/interrupts/review/tokens", json={"ttlSeconds": 60}, headers=ALICE
            )
            assert minted.status_code == 201, minted.text
            token = minted.json()["token"]
            k = key()
            vote = {"resumeValue": {"action": "accept"}}
            first = await client.post(f"/interrupts/{token}", json=vote, headers={"Idempotency-Key": k})
            assert first.status_code == 200, first.text
            assert (await at_rest(client, run_id))["status"] == "completed"
            offset = timedelta(seconds=61)  # the token has expired
            again = await client.post(f"/interrupts/{token}", json=vote, headers={"Idempotency-Key": k})
            assert again.status_code == 200, again.text
            assert again.json() == first.json()
            assert again.headers[REPLAY_HEADER] == "true"
            # A new request with the expired token is judged on expiry, and a forged token
            # under the recorded key gets nothing: the MAC is checked before any replay.
            assert_error(
                await client.post(f"/interrupts/{token}", json=vote, headers={"Idempotency-Key": key()}),
                410,
                "interrupt_expired",
            )
            forged = token[:-1] + ("A" if token[-1] != "A" else "B")
            assert_error(
                await client.post(f"/interrupts/{forged}", json=vote, headers={"Idempotency-Key": k}),
                401,
                "interrupt_token_invalid",
            )
    finally:
        host.saver.close()
