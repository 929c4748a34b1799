"""``GET /runs/{runId}/receipts`` and ``GET /.well-known/wop-receipt-keys``: a reviewer's
decision over HTTP comes back as a bundle the offline verifier accepts with the published keys
alone, and refuses once the log is edited in SQL."""

from __future__ import annotations

import asyncio
import base64
import json
import re

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from tests.server.conftest import ALICE, BOB, assert_error, at_rest, make_settings, serving, started_run
from wop_langgraph.host import WopHost
from wop_langgraph.proof.keys import PublicKeys, generate_seed
from wop_langgraph.proof.verify import verify_bundle
from wop_langgraph.server import create_app
from wop_langgraph.server.paths import project_id
from wop_langgraph.store.run_tables import events_table


@pytest.fixture
def app(host: WopHost, db_url: str) -> FastAPI:
    return create_app(host, make_settings(db_url, receipt_keys=f"r1={generate_seed()}"))


async def test_a_decision_exports_a_bundle_that_verifies_offline(app: FastAPI, host: WopHost) -> None:
    async with serving(app) as client:
        run_id, _ = await started_run(client)
        wire = project_id(run_id)
        answered = await client.post(
            f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
        )
        assert answered.status_code == 200, answered.text
        assert (await at_rest(client, run_id))["status"] == "waiting-input"  # the review's next gate
        keys = await client.get("/.well-known/wop-receipt-keys")
        assert keys.status_code == 200 and "etag" in keys.headers
        assert [k["kid"] for k in keys.json()["keys"]] == ["r1"]
        trusted = PublicKeys.from_jwks(keys.json())
        for _ in range(200):  # the drive's end signs its checkpoint just after the run rests
            bundle = (await client.get(f"/runs/{wire}/receipts", headers=ALICE)).json()
            report = verify_bundle(bundle, trusted)
            if report.covered_to == report.events - 1:
                break
            await asyncio.sleep(0.02)
        assert report.ok, report.to_json()
        assert report.receipts == 1 and report.covered_to == report.events - 1

        decided = next(e["sequence"] for e in bundle["events"] if e["type"] == "interrupt.resolved")
        edited = {**bundle["events"][decided]["payload"], "action": "reject"}
        with host.engine.begin() as conn:
            conn.execute(
                update(events_table)
                .where(events_table.c.run_id == run_id, events_table.c.sequence == decided)
                .values(payload=edited)
            )
        tampered = (await client.get(f"/runs/{wire}/receipts", headers=ALICE)).json()
        assert verify_bundle(tampered, trusted).first_broken == decided


async def test_receipts_of_another_tenants_run_are_refused(app: FastAPI) -> None:
    async with serving(app) as client:
        run_id, _ = await started_run(client)
        response = await client.get(f"/runs/{project_id(run_id)}/receipts", headers=BOB)
        assert response.status_code in (403, 404), response.text
        assert_error(response, response.status_code, response.json()["error"])
        missing = await client.get("/runs/acme~2Fno-such-run-0000000000/receipts", headers=ALICE)
        assert_error(missing, 404, "not_found")


async def test_unauthenticated_receipts_are_refused(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/runs/acme~2Fno-such-run-0000000000/receipts"), 401, "unauthenticated")


async def test_the_reviewer_page_shows_the_digest_the_receipt_binds(app: FastAPI) -> None:
    async with serving(app) as client:
        run_id, _ = await started_run(client)
        wire = project_id(run_id)
        minted = await client.post(f"/runs/{wire}/interrupts/review/tokens", json={}, headers=ALICE)
        token = minted.json()["token"]
        page = await client.get(f"/interrupts/{token}", headers={"Accept": "text/html"})
        shown = re.search(r"sha256:([0-9a-f]{64})", page.text)
        assert shown is not None, page.text
        sent = await client.post(
            f"/interrupts/{token}/form",
            content=b"action=accept",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert sent.status_code == 200, sent.text
        bundle = (await client.get(f"/runs/{wire}/receipts", headers=ALICE)).json()
        (decision,) = [r for r in bundle["receipts"] if r["kind"] == "decision"]
        statement = json.loads(base64.b64decode(decision["envelope"]["payload"]))
        assert statement["subject"][0]["digest"]["sha256"] == shown[1]
