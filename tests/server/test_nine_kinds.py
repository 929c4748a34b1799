"""Over HTTP, against a real served process: all nine interrupt kinds are raised and resolved;
``conversation.start`` and ``conversation.close`` through a signed review link, the others by
run. Every event, payload and resume value is judged by the official schemas."""

from __future__ import annotations

from typing import Any

import httpx

from tests.host.nine_kinds import STEPS
from tests.official import validate_event, validate_official
from tests.server.conftest import ALICE
from tests.server.process import poll_until, rested, served
from wop_langgraph.protocol.ids import project_id

BY_LINK = frozenset({"conversation.start", "conversation.close"})


def events(client: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 0})
    assert response.status_code == 200, response.text
    docs: list[dict[str, Any]] = response.json()["events"]
    return docs


def test_all_nine_kinds_over_http(db_url: str) -> None:
    with (
        served(
            db_url, target="tests.host.nine_kinds:WORKFLOWS", extra_args=["--conversations", "--credentials"]
        ) as base,
        httpx.Client(base_url=base, headers=ALICE, timeout=30) as client,
    ):
        created = client.post("/runs", json={"workflowId": "nine"})
        assert created.status_code == 201, created.text
        run_id = str(created.json()["runId"])
        wire = project_id(run_id)
        for index, (node_id, kind, value) in enumerate(STEPS):

            def asked(index: int = index) -> list[dict[str, Any]]:
                return [d for d in events(client, run_id) if d["type"] == "interrupt.requested"][index:]

            (requested,) = poll_until(asked, bool, what=f"{kind} requested")
            payload = requested["payload"]
            assert (requested["nodeId"], payload["kind"]) == (node_id, kind)
            validate_official("suspend-request.schema.json", payload)
            snapshot = rested(client, run_id)
            assert snapshot["currentNodeId"] == node_id
            if kind in BY_LINK:
                assert snapshot["status"] == "waiting-approval"
                validate_official("conversation-turn.schema.json", value)
                link = client.post(f"/runs/{wire}/interrupts/{node_id}/tokens", json={})
                assert link.status_code == 201, link.text
                shown = client.get(f"/interrupts/{link.json()['token']}", headers={})
                assert shown.status_code == 200 and shown.json()["kind"] == kind
                answer = client.post(
                    f"/interrupts/{link.json()['token']}", json={"resumeValue": value}, headers={}
                )
            else:
                answer = client.post(f"/runs/{wire}/interrupts/{node_id}", json={"resumeValue": value})
            assert answer.status_code == 200, answer.text
        assert rested(client, run_id)["status"] == "completed"
        docs = events(client, run_id)
    for doc in docs:
        validate_event(doc)
    resolved = [d["payload"] for d in docs if d["type"] == "interrupt.resolved"]
    assert [(r["nodeId"], r["kind"]) for r in resolved] == [(n, k) for n, k, _ in STEPS]
    for recorded, (_, kind, value) in zip(resolved, STEPS, strict=True):
        if kind in BY_LINK:
            assert recorded["resumeValue"] == value
            validate_official("conversation-turn.schema.json", recorded["resumeValue"])
    conversation = [d["type"] for d in docs if d["type"].startswith("conversation.")]
    assert conversation == ["conversation.opened", "conversation.exchanged", "conversation.closed"]
