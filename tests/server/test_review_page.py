"""The reviewer page's form handling over HTTP, on every backend: a refused form changes nothing."""

from __future__ import annotations

import httpx

from tests.server.conftest import ALICE, READER, started_run
from wop_langgraph.protocol.ids import project_id

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
HTML = {"Accept": "text/html"}


async def waiting_link(client: httpx.AsyncClient) -> tuple[str, str]:
    """A run of ``review`` suspended at its approval (accept, reject), and a resolve link for it."""
    run_id, snapshot = await started_run(client, "review")
    assert snapshot["status"] == "waiting-approval"
    minted = await client.post(f"/runs/{project_id(run_id)}/interrupts/review/tokens", json={}, headers=ALICE)
    return run_id, str(minted.json()["token"])


async def status(client: httpx.AsyncClient, run_id: str) -> str:
    return str((await client.get(f"/runs/{project_id(run_id)}", headers=READER)).json()["status"])


async def test_an_action_the_gate_does_not_offer_is_refused_in_the_form(client: httpx.AsyncClient) -> None:
    run_id, token = await waiting_link(client)
    page = await client.get(f"/interrupts/{token}", headers=HTML)
    assert 'value="edit-accept"' not in page.text and 'value="accept"' in page.text
    forged = await client.post(
        f"/interrupts/{token}/form", content=b"action=edit-accept&edited=x", headers=FORM
    )
    assert forged.status_code == 400 and "answered only with: Accept, Reject." in forged.text
    assert "openwop-version" not in forged.headers
    too_big = await client.post(
        f"/interrupts/{token}/form", content=b"feedback=" + b"x" * 70_000, headers=FORM
    )
    assert too_big.status_code == 413 and "too long" in too_big.text
    assert await status(client, run_id) == "waiting-approval"
    events = (await client.get(f"/runs/{project_id(run_id)}/events/poll?timeout=0", headers=READER)).json()
    assert not [e for e in events["events"] if e["type"] == "interrupt.resolved"]


async def test_an_inspect_link_shows_the_request_but_cannot_answer(client: httpx.AsyncClient) -> None:
    run_id, _ = await waiting_link(client)
    viewer = await client.post(
        f"/runs/{project_id(run_id)}/interrupts/review/tokens", json={"intent": "inspect"}, headers=ALICE
    )
    token = viewer.json()["token"]
    page = await client.get(f"/interrupts/{token}", headers=HTML)
    assert page.status_code == 200 and "<form" not in page.text and "Publish the draft?" in page.text
    refused = await client.post(f"/interrupts/{token}/form", content=b"action=accept", headers=FORM)
    assert refused.status_code == 403 and "view the request, not answer it" in refused.text
    assert await status(client, run_id) == "waiting-approval"
