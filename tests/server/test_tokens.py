"""The token surface: mint, inspect, resolve by token, and every refusal; the reviewer page."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import httpx
from fastapi import FastAPI

from tests.official import official_errors
from tests.server.conftest import ALICE, READER, assert_error, at_rest, started_run
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server.state import ServerState
from wop_langgraph.tokens import mint, verify


async def suspended(client: httpx.AsyncClient, workflow: str = "review") -> str:
    run_id, snapshot = await started_run(client, workflow)
    assert snapshot["status"] == "waiting-approval"
    return run_id


async def token_for(
    client: httpx.AsyncClient, run_id: str, node: str = "review", **body: object
) -> dict[str, str]:
    response = await client.post(
        f"/runs/{project_id(run_id)}/interrupts/{node}/tokens", json=body, headers=ALICE
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


async def test_mint_inspect_resolve(client: httpx.AsyncClient, app: FastAPI) -> None:
    run_id = await suspended(client)
    minted = await token_for(client, run_id)
    assert minted["url"].endswith(f"/interrupts/{minted['token']}")
    state: ServerState = app.state.wop
    claims = verify(state.signing_keys, minted["token"], now=state.host.clock())
    assert claims.kid == "k2"
    assert claims.interrupt_id == state.host.pending_interrupts(run_id)[0].key
    inspected = await client.get(f"/interrupts/{minted['token']}")
    assert inspected.status_code == 200
    payload = inspected.json()
    assert payload["kind"] == "approval"
    assert official_errors("suspend-request.schema.json", payload) == []
    resolved = await client.post(f"/interrupts/{minted['token']}", json={"resumeValue": {"action": "accept"}})
    assert resolved.status_code == 200, resolved.text
    assert resolved.json() == {"runId": run_id, "nodeId": "review", "status": "running"}
    assert (await at_rest(client, run_id))["status"] == "waiting-input"
    again = await client.post(f"/interrupts/{minted['token']}", json={"resumeValue": {"action": "accept"}})
    assert_error(again, 409, "interrupt_already_resolved")
    assert_error(await client.get(f"/interrupts/{minted['token']}"), 409, "interrupt_already_resolved")
    events = (await client.get(f"/runs/{project_id(run_id)}/events/poll?timeout=0", headers=READER)).json()
    resolved_event = next(e for e in events["events"] if e["type"] == "interrupt.resolved")
    # The holder of this link, not of the signing key: two links are two voters.
    digest = hashlib.sha256(minted["token"].encode()).hexdigest()[:24]
    assert resolved_event["payload"]["resolvedBy"]["subjectId"] == f"token:{digest}"


async def test_two_links_are_two_voters_toward_a_quorum(client: httpx.AsyncClient) -> None:
    run_id = await suspended(client, "quorum")
    first, second = await token_for(client, run_id), await token_for(client, run_id)
    vote = {"resumeValue": {"action": "accept"}}
    undecided = await client.post(f"/interrupts/{first['token']}", json=vote)
    assert undecided.json()["status"] == "waiting-approval"
    repeat = await client.post(f"/interrupts/{first['token']}", json=vote)
    assert repeat.json()["status"] == "waiting-approval"  # the same link is the same voter
    decided = await client.post(f"/interrupts/{second['token']}", json=vote)
    assert decided.status_code == 200, decided.text
    assert decided.json()["status"] == "running"
    assert (await at_rest(client, run_id))["status"] == "completed"


async def test_token_refusals(client: httpx.AsyncClient, app: FastAPI) -> None:
    run_id = await suspended(client)
    inspect_only = await token_for(client, run_id, intent="inspect")
    assert (await client.get(f"/interrupts/{inspect_only['token']}")).status_code == 200
    refused = await client.post(
        f"/interrupts/{inspect_only['token']}", json={"resumeValue": {"action": "accept"}}
    )
    assert_error(refused, 403, "forbidden")
    for bad in (
        "b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef",
        "ow2.hs256.nokid.b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef",
    ):
        assert_error(await client.get(f"/interrupts/{bad}"), 401, "interrupt_token_invalid")
        assert_error(
            await client.post(f"/interrupts/{bad}", json={"resumeValue": {}}), 401, "interrupt_token_invalid"
        )
    state: ServerState = app.state.wop
    record = state.host.pending_interrupts(run_id)[0]
    old = mint(
        state.signing_keys,
        run_id=run_id,
        node_id="review",
        interrupt_id=record.key,
        now=state.host.clock() - timedelta(hours=1),
    )
    assert_error(await client.get(f"/interrupts/{old.token}"), 410, "interrupt_expired")
    assert_error(
        await client.post(f"/interrupts/{old.token}", json={"resumeValue": {"action": "accept"}}),
        410,
        "interrupt_expired",
    )
    live = await token_for(client, run_id)
    bad_value = await client.post(f"/interrupts/{live['token']}", json={"resumeValue": {"action": "launch"}})
    assert_error(bad_value, 400, "validation_error")
    await client.post(f"/runs/{project_id(run_id)}/cancel", json={}, headers=ALICE)
    after_cancel = await client.post(
        f"/interrupts/{live['token']}", json={"resumeValue": {"action": "accept"}}
    )
    assert_error(after_cancel, 409, "interrupt_already_resolved")


async def test_mint_refusals(client: httpx.AsyncClient) -> None:
    run_id = await suspended(client)
    wire = project_id(run_id)
    assert_error(
        await client.post(f"/runs/{wire}/interrupts/review/tokens", json={}, headers=READER), 403, "forbidden"
    )
    assert_error(
        await client.post(f"/runs/{wire}/interrupts/nope/tokens", json={}, headers=ALICE), 404, "not_found"
    )
    assert_error(
        await client.post(f"/runs/{wire}/interrupts/review/tokens", json={"intent": "admin"}, headers=ALICE),
        400,
        "validation_error",
    )


async def test_token_expiry_is_capped_by_the_deadline(client: httpx.AsyncClient, app: FastAPI) -> None:
    run_id = await suspended(client, "timed")
    minted = await token_for(client, run_id, ttlSeconds=3600)
    state: ServerState = app.state.wop
    claims = verify(state.signing_keys, minted["token"], now=state.host.clock())
    deadline = state.host.pending_interrupts(run_id)[0].deadline
    assert deadline is not None
    assert claims.expires_at <= deadline.replace(tzinfo=claims.expires_at.tzinfo)


async def test_reviewer_page(client: httpx.AsyncClient) -> None:
    run_id = await suspended(client)
    minted = await token_for(client, run_id)
    page = await client.get(f"/interrupts/{minted['token']}", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "openwop-version" not in page.headers
    assert "Publish the draft?" in page.text and "<script" not in page.text
    assert f'action="/interrupts/{minted["token"]}/form#answer-accept"' in page.text
    done = await client.post(
        f"/interrupts/{minted['token']}/form",
        content=b"action=accept&feedback=looks+good",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert done.status_code == 200
    assert "Decision recorded: <strong>Accepted</strong>" in done.text
    assert (await at_rest(client, run_id))["status"] == "waiting-input"
    used = await client.get(f"/interrupts/{minted['token']}", headers={"Accept": "text/html"})
    assert used.status_code == 409
    assert "already answered" in used.text and "Traceback" not in used.text
    invalid = await client.get("/interrupts/not-a-token", headers={"Accept": "text/html"})
    assert invalid.status_code == 401 and "not valid" in invalid.text
    clarify = await token_for(client, run_id, node="clarify")
    form = await client.get(f"/interrupts/{clarify['token']}", headers={"Accept": "text/html"})
    assert "Which colour?" in form.text
    answered = await client.post(
        f"/interrupts/{clarify['token']}/form",
        content=b"answer.q1=blue",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answered.status_code == 200 and "<dt>Which colour?</dt><dd>blue</dd>" in answered.text
