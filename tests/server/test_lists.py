"""``GET /runs`` and ``GET /interrupts`` on a real served process, on each backend.

Tenancy (another tenant's runs and interrupts never appear), eligibility (an approval naming
bob is not in alice's list; a quorum gate leaves the list of whoever voted), filters, and
pagination (pages in a stable order that add up to the whole list, with nothing repeated even
when runs are created between pages). Also ``GET /runs/{id}`` with a completed run's outputs
and ``/docs``, a page that needs nothing but the server.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.server.conftest import ACME_BOB, ALICE, BOB, READER
from tests.server.process import poll_until, rested, served
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.protocol.snapshot import RESULT_EXTENSION

pytestmark = pytest.mark.slow


def _create(client: httpx.Client, workflow_id: str, headers: dict[str, str], **body: Any) -> str:
    response = client.post("/runs", json={"workflowId": workflow_id, "inputs": {}, **body}, headers=headers)
    assert response.status_code == 201, response.text
    run_id = str(response.json()["runId"])
    with httpx.Client(base_url=str(client.base_url), headers=headers, timeout=30) as reader:
        rested(reader, run_id)
    return run_id


def _pages(client: httpx.Client, path: str, member: str, headers: dict[str, str], **params: Any) -> list[Any]:
    """Every item of a paged list, following nextCursor; checks each page's size."""
    items: list[Any] = []
    cursor = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        response = client.get(path, params=query, headers=headers)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) <= {member, "nextCursor"}
        items += body[member]
        cursor = body.get("nextCursor")
        if cursor is None:
            return items
        assert len(body[member]) == params.get("limit", 50)


def test_list_runs(db_url: str) -> None:
    with served(db_url) as base, httpx.Client(base_url=base, timeout=30) as client:
        before = datetime.now(UTC) - timedelta(seconds=1)
        plain = [_create(client, "plain", ALICE, tags=["batch-1", "x"]) for _ in range(3)]
        waiting = [_create(client, "approve", ALICE, tags=["batch-1"]) for _ in range(2)]
        theirs = _create(client, "plain", BOB, tags=["batch-1"])
        everything = _pages(client, "/runs", "runs", READER)  # a reader of acme sees acme's runs
        ids = [run["runId"] for run in everything]
        assert sorted(ids) == sorted(plain + waiting) and theirs not in ids  # tenant-scoped
        assert ids == list(reversed(plain + waiting))  # newest first
        stamps = [run["startedAt"] for run in everything]
        assert stamps == sorted(stamps, reverse=True)
        done = everything[-1]
        assert done["status"] == "completed"
        assert done["extensions"][RESULT_EXTENSION]["outputs"]["draft"] == "hello"
        one = client.get(f"/runs/{project_id(done['runId'])}", headers=ALICE).json()
        assert one == done  # GET /runs/{runId} carries the outputs the same way
        assert "extensions" not in everything[0]  # waiting: no result yet

        # Pages of 2 add up to the whole list, in the same order, with a run created meanwhile
        # (newer than the cursor) neither repeated nor breaking the order.
        first = client.get("/runs", params={"limit": 2}, headers=ALICE).json()
        assert [r["runId"] for r in first["runs"]] == ids[:2]
        _create(client, "plain", ALICE)
        rest = _pages(client, "/runs", "runs", ALICE, limit=2, cursor=first["nextCursor"])
        assert [r["runId"] for r in rest] == ids[2:]

        # Filters: status, workflow, tags (all of them), created range.
        by_status = _pages(client, "/runs", "runs", ALICE, status="waiting-approval")
        assert sorted(r["runId"] for r in by_status) == sorted(waiting)
        by_workflow = _pages(client, "/runs", "runs", ALICE, workflowId="approve")
        assert sorted(r["runId"] for r in by_workflow) == sorted(waiting)
        both_tags = _pages(client, "/runs", "runs", ALICE, tag=["batch-1", "x"])
        assert sorted(r["runId"] for r in both_tags) == sorted(plain)
        assert _pages(client, "/runs", "runs", ALICE, tag=["batch-1"], workflowId="approve") == by_workflow
        assert _pages(client, "/runs", "runs", ALICE, tag="nobody") == []
        later = _pages(client, "/runs", "runs", ALICE, createdAfter=datetime.now(UTC).isoformat())
        assert later == []
        window = _pages(client, "/runs", "runs", ALICE, createdAfter=before.isoformat(), limit=3)
        assert len(window) == 6
        earlier = _pages(client, "/runs", "runs", ALICE, createdBefore=before.isoformat())
        assert earlier == []

        # Refusals: the OpenWOP envelope, 400 for bad input, 401/403 for the caller.
        for params in (
            {"cursor": "not-a-cursor"},
            {"limit": 0},
            {"status": "sleeping"},
            {"createdAfter": "noon"},
        ):
            refused = client.get("/runs", params=params, headers=ALICE)
            assert refused.status_code == 400, (params, refused.text)
            assert refused.json()["error"] == "validation_error"
        assert client.get("/runs").status_code == 401
        assert client.get("/runs", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_list_interrupts_applies_eligibility_and_tenancy(db_url: str) -> None:
    with served(db_url) as base, httpx.Client(base_url=base, timeout=30) as client:
        open_gates = [_create(client, "approve", ALICE) for _ in range(3)]
        bob_only = _create(client, "bob-only", ALICE)
        quorum = _create(client, "quorum", ALICE)
        _create(client, "approve", BOB)  # globex: never in acme's lists

        alice = _pages(client, "/interrupts", "interrupts", ALICE)
        assert [i["runId"] for i in alice] == [*open_gates, quorum]  # oldest first; not bob's gate
        item = alice[0]
        assert item["workflowId"] == "approve" and item["nodeId"] == "review" and item["kind"] == "approval"
        assert item["payload"]["kind"] == "approval" and item["payload"]["key"] == item["key"]
        assert item["resolveUrl"] == f"/runs/{project_id(open_gates[0])}/interrupts/review"
        assert datetime.fromisoformat(item["createdAt"]) <= datetime.now(UTC)

        acme_bob = _pages(client, "/interrupts", "interrupts", ACME_BOB)
        assert [i["runId"] for i in acme_bob] == [*open_gates, bob_only, quorum]

        # A vote on the quorum gate takes it off the voter's list only.
        accept = {"resumeValue": {"action": "accept"}}
        voted = client.post(f"/runs/{project_id(quorum)}/interrupts/review", json=accept, headers=ALICE)
        assert voted.status_code == 200, voted.text
        assert [i["runId"] for i in _pages(client, "/interrupts", "interrupts", ALICE)] == open_gates
        assert quorum in [i["runId"] for i in _pages(client, "/interrupts", "interrupts", ACME_BOB)]

        # Answering one through its resolveUrl takes it off every list.
        answered = client.post(item["resolveUrl"], json=accept, headers=ALICE)
        assert answered.status_code == 200, answered.text
        poll_until(
            lambda: [i["runId"] for i in _pages(client, "/interrupts", "interrupts", ACME_BOB)],
            lambda ids: open_gates[0] not in ids,
        )

        # Pages, filters and refusals.
        paged = _pages(client, "/interrupts", "interrupts", ACME_BOB, limit=1)
        assert [i["runId"] for i in paged] == [*open_gates[1:], bob_only, quorum]
        assert [
            i["runId"] for i in _pages(client, "/interrupts", "interrupts", ACME_BOB, workflowId="bob-only")
        ] == [bob_only]
        assert _pages(client, "/interrupts", "interrupts", ACME_BOB, kind="clarification") == []
        assert len(_pages(client, "/interrupts", "interrupts", ACME_BOB, kind="approval")) == 4
        future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        assert len(_pages(client, "/interrupts", "interrupts", ACME_BOB, createdBefore=future)) == 4
        assert _pages(client, "/interrupts", "interrupts", ACME_BOB, createdAfter=future) == []
        assert [i["runId"] for i in _pages(client, "/interrupts", "interrupts", BOB)] != []  # globex's own
        assert all(i["runId"].startswith("globex/") for i in _pages(client, "/interrupts", "interrupts", BOB))
        assert client.get("/interrupts", headers=READER).status_code == 403  # no approvals:respond
        assert client.get("/interrupts", params={"kind": "nope"}, headers=ALICE).status_code == 400


def test_docs_page_is_self_contained_and_lists_the_lists(db_url: str) -> None:
    with served(db_url) as base, httpx.Client(base_url=base, timeout=30) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        text = page.text
        assert "<script" not in text.lower()
        assert not re.search(r"""(src|href)=['"]https?://""", text)  # nothing from a CDN
        for path in ("/runs", "/interrupts", "/runs/{runId}", "/openapi.json"):
            assert f">{path}<" in text or f"'{path}'" in text, path
        spec = client.get("/openapi.json").json()
        assert spec["paths"]["/runs"]["get"]["security"] == [{"apiKey": []}]
        assert "/docs" not in spec["paths"]
