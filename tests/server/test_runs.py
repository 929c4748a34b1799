"""The run surface over httpx: create, snapshot (ETag), cancel, resolve by run, ids and auth."""

from __future__ import annotations

import json

import httpx
import pytest
from jsonschema import Draft202012Validator

from tests.official import official_errors, openwop_dir
from tests.server.conftest import ALICE, BOB, READER, V2, assert_error, at_rest
from wop_langgraph.protocol.ids import project_id


async def create(client: httpx.AsyncClient, workflow: str = "review", **body: object) -> dict[str, object]:
    response = await client.post("/runs", json={"workflowId": workflow, "inputs": {}, **body}, headers=ALICE)
    assert response.status_code == 201, response.text
    created = dict(response.json())
    created["status"] = (await at_rest(client, str(created["runId"])))["status"]
    return created


async def test_create_run_answers_201_with_links(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/runs", json={"workflowId": "review", "inputs": {}}, headers={**ALICE, **V2}
    )
    assert response.status_code == 201
    assert response.headers["openwop-version"] == "2.0"
    body = response.json()
    assert set(body) == {"runId", "status", "eventsUrl", "statusUrl"}
    assert body["status"] in ("pending", "running")  # answered at commit: a worker drives it
    assert (await at_rest(client, body["runId"]))["status"] == "waiting-approval"
    assert body["runId"].startswith("acme/")
    wire = project_id(body["runId"])
    assert body["eventsUrl"] == f"/runs/{wire}/events"
    assert body["statusUrl"] == f"/runs/{wire}"
    poll = await client.get(f"/runs/{wire}/events/poll?timeout=0", headers=ALICE)
    assert poll.status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"workflowId": "review", "surprise": 1}, "surprise"),
        ({"workflowId": "review", "configurable": {"version": 1, "run": {"nope": 1}}}, None),
        ({"workflowId": "review", "tags": ["x" * 257]}, None),
        ({"inputs": {}}, None),
    ],
)
async def test_create_run_refuses_a_bad_body(
    client: httpx.AsyncClient, body: dict[str, object], field: str | None
) -> None:
    assert_error(await client.post("/runs", json=body, headers=ALICE), 400, "validation_error")


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/openwop-callback-probe",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::ffff:7f00:1]/openwop-callback-probe",
        "http://example.com/hook",
    ],
)
async def test_create_run_refuses_a_private_callback_url(client: httpx.AsyncClient, url: str) -> None:
    response = await client.post("/runs", json={"workflowId": "review", "callbackUrl": url}, headers=ALICE)
    body = assert_error(response, 400, "validation_error")
    assert body["details"]["field"] == "callbackUrl"


async def test_unknown_workflow_is_not_found(client: httpx.AsyncClient) -> None:
    assert_error(await client.post("/runs", json={"workflowId": "nope"}, headers=ALICE), 404, "not_found")


async def test_auth_errors(client: httpx.AsyncClient) -> None:
    response = await client.post("/runs", json={"workflowId": "review"})
    assert_error(response, 401, "unauthenticated")
    assert response.headers["www-authenticate"].startswith("Bearer")
    bad = await client.post("/runs", json={"workflowId": "review"}, headers={"Authorization": "Bearer nope"})
    assert_error(bad, 401, "unauthenticated")
    low = await client.post("/runs", json={"workflowId": "review"}, headers=READER)
    assert_error(low, 403, "forbidden")


async def test_snapshot_etag_and_304(client: httpx.AsyncClient) -> None:
    run = await create(client)
    wire = project_id(str(run["runId"]))
    first = await client.get(f"/runs/{wire}", headers=READER)
    assert first.status_code == 200
    assert first.json()["status"] == "waiting-approval"
    etag = first.headers["etag"]
    again = await client.get(f"/runs/{wire}", headers={**READER, "If-None-Match": etag})
    assert again.status_code == 304
    assert again.headers["openwop-version"] == "2.0"
    assert again.content == b""


async def test_run_id_projection(client: httpx.AsyncClient) -> None:
    run = await create(client)
    run_id = str(run["runId"])
    tenant, opaque = run_id.split("/")
    for spelling in (f"{tenant}~2F{opaque}", f"{tenant}%2F{opaque}", f"{tenant}%2f{opaque}"):
        response = await client.get(f"/runs/{spelling}", headers=READER)
        assert response.status_code == 200, (spelling, response.text)
        assert response.json()["runId"] == run_id
    assert_error(await client.get(f"/runs/{tenant}~ZZ{opaque}", headers=READER), 400, "validation_error")
    assert_error(await client.get(f"/runs/{opaque}", headers=READER), 400, "validation_error")
    assert_error(await client.get(f"/runs/{project_id(run_id)}", headers=BOB), 403, "id_tenant_mismatch")
    unknown = project_id("acme/" + "z" * 24)
    assert_error(await client.get(f"/runs/{unknown}", headers=READER), 404, "not_found")


async def test_resolve_by_run_then_conflicts(client: httpx.AsyncClient) -> None:
    run = await create(client)
    wire = project_id(str(run["runId"]))
    scoped = await client.post(
        f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=READER
    )
    assert_error(scoped, 403, "forbidden")
    missing = await client.post(
        f"/runs/{wire}/interrupts/no-such-node", json={"resumeValue": {}}, headers=ALICE
    )
    assert_error(missing, 404, "not_found")
    bad_action = await client.post(
        f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "launch"}}, headers=ALICE
    )
    assert_error(bad_action, 400, "validation_error")
    closed = await client.post(
        f"/runs/{wire}/interrupts/review",
        json={"resumeValue": {"action": "accept"}, "extra": 1},
        headers=ALICE,
    )
    assert_error(closed, 400, "validation_error")
    ok = await client.post(
        f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
    )
    assert ok.status_code == 200, ok.text
    assert ok.json() == {"runId": run["runId"], "nodeId": "review", "status": "running"}
    assert (await at_rest(client, str(run["runId"])))["status"] == "waiting-input"
    again = await client.post(
        f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
    )
    assert_error(again, 409, "interrupt_already_resolved")
    answer = await client.post(
        f"/runs/{wire}/interrupts/clarify", json={"resumeValue": {"answers": {"q1": "blue"}}}, headers=ALICE
    )
    assert answer.json()["status"] == "running"
    snapshot = await at_rest(client, str(run["runId"]), READER)
    assert snapshot["status"] == "completed"


async def test_cancel(client: httpx.AsyncClient) -> None:
    run = await create(client)
    wire = project_id(str(run["runId"]))
    assert_error(await client.post(f"/runs/{wire}/cancel", json={}, headers=READER), 403, "forbidden")
    ok = await client.post(f"/runs/{wire}/cancel", json={"reason": "changed my mind"}, headers=ALICE)
    assert ok.status_code == 200
    assert ok.json() == {"runId": run["runId"], "status": "cancelled"}
    assert_error(await client.post(f"/runs/{wire}/cancel", headers=ALICE), 409, "run_terminal")
    late = await client.post(
        f"/runs/{wire}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
    )
    assert_error(late, 409, "interrupt_already_resolved")


async def test_version_negotiation(client: httpx.AsyncClient) -> None:
    for value in ("2", "2.0", "2.7"):
        ok = await client.get("/.well-known/openwop", headers={"OpenWOP-Version": value})
        assert ok.status_code == 200
    for value in ("1", "3.0"):
        refused = await client.get("/.well-known/openwop", headers={"OpenWOP-Version": value})
        body = assert_error(refused, 406, "protocol_version_unsupported")
        assert body["details"]["protocolVersions"] == ["2.0"]
    assert_error(await client.get("/runs/x", headers={"OpenWOP-Version": "two"}), 400, "validation_error")


async def test_discovery(client: httpx.AsyncClient) -> None:
    response = await client.get("/.well-known/openwop", headers=V2)
    doc = response.json()
    assert doc["protocolVersions"] == ["2.0"]
    assert doc["preferredVersion"] == "2.0"
    interrupt = doc["interrupt"]
    assert interrupt["tokenAlgs"] == ["hs256"]
    assert interrupt["callbackDelivery"] is True
    facet = json.loads((openwop_dir() / "spec/v2/facets/interrupt.schema.json").read_text())
    assert list(Draft202012Validator(facet).iter_errors(interrupt)) == []
    assert {"status", "since", "until", "witness"} <= set(interrupt)
    cached = await client.get(
        "/.well-known/openwop", headers={**V2, "If-None-Match": response.headers["etag"]}
    )
    assert cached.status_code == 304
    assert cached.headers["openwop-version"] == "2.0"


async def test_framework_errors_are_envelopes(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/nowhere"), 404, "not_found")
    response = await client.delete("/runs")
    assert response.status_code == 405
    assert official_errors("error-envelope.schema.json", response.json()) == []
    not_json = await client.post("/runs", content=b"{", headers={**ALICE, "Content-Type": "application/json"})
    assert_error(not_json, 400, "validation_error")
