"""``POST /runs/{runId}:fork`` and ``GET /host/effect-seams`` over httpx, on SQLite and PostgreSQL.

The app is served with its lifespan, so its workers drive the fork as in production; every
event of a fork is judged by the official schemas.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.official import validate_event
from tests.server.conftest import ALICE, BOB, READER, V2, assert_error, at_rest, started_run
from wop_langgraph.protocol.ids import project_id


def _path(run_id: str) -> str:
    return f"/runs/{project_id(run_id)}"


async def events(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"{_path(run_id)}/events/poll?timeout=0", headers=ALICE)
    assert response.status_code == 200, response.text
    docs: list[dict[str, Any]] = response.json()["events"]
    for doc in docs:
        validate_event(doc)
    assert [d["sequence"] for d in docs] == list(range(len(docs)))
    return docs


async def rejected(client: httpx.AsyncClient) -> tuple[str, list[dict[str, Any]]]:
    run_id, snapshot = await started_run(client, "approve")
    assert snapshot["status"] == "waiting-approval"
    answer = await client.post(
        f"{_path(run_id)}/interrupts/review", json={"resumeValue": {"action": "reject"}}, headers=ALICE
    )
    assert answer.status_code == 200, answer.text
    assert (await at_rest(client, run_id))["status"] == "failed"
    return run_id, await events(client, run_id)


async def fork(
    client: httpx.AsyncClient, run_id: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    return await client.post(f"{_path(run_id)}:fork", json=body, headers=headers or ALICE)


def seq(docs: list[dict[str, Any]], event_type: str) -> int:
    return int(next(d["sequence"] for d in docs if d["type"] == event_type))


async def test_replay_fork_answers_201_and_derives_the_rejection(client: httpx.AsyncClient) -> None:
    source_id, source = await rejected(client)
    from_seq = seq(source, "interrupt.resolved")
    response = await fork(client, source_id, {"mode": "replay", "fromSeq": from_seq}, {**ALICE, **V2})
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"runId", "sourceRunId", "fromSeq", "mode", "status", "eventsUrl"}
    assert (body["sourceRunId"], body["fromSeq"], body["mode"]) == (source_id, from_seq, "replay")
    assert body["status"] in ("pending", "running")
    assert body["eventsUrl"] == f"{_path(body['runId'])}/events"
    snapshot = await at_rest(client, body["runId"])
    assert (snapshot["status"], snapshot["error"]["code"]) == ("failed", "approval_rejected")
    assert snapshot["owner"] == (await client.get(_path(source_id), headers=ALICE)).json()["owner"]
    docs = await events(client, body["runId"])
    assert not [d for d in docs[from_seq:] if d["type"] in ("interrupt.requested", "approval.requested")]
    (resolved,) = [d["payload"] for d in docs if d["type"] == "interrupt.resolved"]
    (recorded,) = [d["payload"] for d in source if d["type"] == "interrupt.resolved"]
    assert [resolved.get(k) for k in ("action", "decision", "reason")] == [
        recorded.get(k) for k in ("action", "decision", "reason")
    ]
    (failed,) = [d["payload"] for d in docs if d["type"] == "node.failed"]
    assert (failed["nodeId"], failed["error"]["code"], failed["error"]["retryable"]) == (
        "review",
        "approval_rejected",
        False,
    )
    again = await client.post(
        f"{_path(body['runId'])}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
    )
    assert_error(again, 409, "interrupt_already_resolved")


async def test_branch_fork_asks_again(client: httpx.AsyncClient) -> None:
    source_id, source = await rejected(client)
    body = {
        "mode": "branch",
        "fromSeq": seq(source, "interrupt.resolved"),
        "runOptionsOverlay": {"tags": ["b"]},
    }
    response = await fork(client, source_id, body)
    assert response.status_code == 201, response.text
    fork_id = response.json()["runId"]
    snapshot = await at_rest(client, fork_id)
    assert (snapshot["status"], snapshot["currentNodeId"], snapshot["tags"]) == (
        "waiting-approval",
        "review",
        ["b"],
    )
    answer = await client.post(
        f"{_path(fork_id)}/interrupts/review", json={"resumeValue": {"action": "accept"}}, headers=ALICE
    )
    assert answer.status_code == 200, answer.text
    assert (await at_rest(client, fork_id))["status"] == "completed"
    await events(client, fork_id)


async def test_fork_refusals(client: httpx.AsyncClient) -> None:
    source_id, source = await rejected(client)
    terminal = seq(source, "run.failed")
    assert_error(
        await fork(client, source_id, {"mode": "replay", "fromSeq": terminal + 1}), 422, "fork_point_invalid"
    )
    assert_error(
        await fork(client, source_id, {"mode": "branch", "fromSeq": 10**6}), 422, "fork_point_invalid"
    )
    overlay = {"mode": "replay", "fromSeq": 1, "runOptionsOverlay": {"tags": ["x"]}}
    assert_error(await fork(client, source_id, overlay), 400, "validation_error")
    assert_error(await fork(client, source_id, {"mode": "branch"}), 400, "validation_error")
    assert_error(await fork(client, source_id, {"mode": "rerun", "fromSeq": 1}), 400, "validation_error")
    assert_error(await fork(client, source_id, {"mode": "replay", "fromSeq": -1}), 400, "validation_error")
    assert_error(await fork(client, source_id, {"mode": "replay", "extra": 1}), 400, "validation_error")
    assert_error(await fork(client, source_id, {"mode": "replay"}, READER), 403, "forbidden")
    unknown = source_id.rsplit("/", 1)[0] + "/" + uuid.uuid4().hex
    assert_error(await fork(client, unknown, {"mode": "replay"}), 404, "not_found")
    # Another tenant's run answers as the other run routes do (existence is not disclosed).
    other = await client.get(_path(source_id), headers=BOB)
    assert_error(
        await fork(client, source_id, {"mode": "replay"}, BOB), other.status_code, other.json()["error"]
    )


async def test_fork_honours_idempotency_key(client: httpx.AsyncClient) -> None:
    source_id, _ = await rejected(client)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = await fork(client, source_id, {"mode": "replay"}, {**ALICE, **key})
    again = await fork(client, source_id, {"mode": "replay"}, {**ALICE, **key})
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers.get("openwop-idempotent-replay") == "true"
    other = await fork(client, source_id, {"mode": "branch", "fromSeq": 1}, {**ALICE, **key})
    body = assert_error(other, 409, "idempotency_key_mismatch")
    assert "runId" not in body
    await at_rest(client, first.json()["runId"])


async def test_discovery_advertises_replay_and_the_effect_seams(client: httpx.AsyncClient) -> None:
    document = (await client.get("/.well-known/openwop", headers=V2)).json()
    replay = document["replay"]
    assert replay["modes"] == ["replay", "branch"]
    assert replay["effectSeamsManifest"] == "/host/effect-seams"
    assert {"status", "since", "until", "witness"} <= set(replay)
    seams = (await client.get("/host/effect-seams", headers=V2)).json()
    assert seams["manifestVersion"] == "1"
    assert {"name", "build"} <= set(seams["host"])
    kinds = {"http", "smtp", "queue", "storage", "provider-sdk", "webhook-fanout", "other"}
    for seam in seams["seams"]:
        assert seam["guarded"] is True and seam["kind"] in kinds and seam["guardedBy"]
        assert seam["kind"] != "other" or seam.get("note")
