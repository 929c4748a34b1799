"""A real uvicorn process driven by the official ``openwop_client`` SDK."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openwop_client import OpenwopClient, WopError
from openwop_client.types import CreateRunRequest, ResolveInterruptRequest

from tests.official import official_errors, validate_event
from tests.server.conftest import RESTING
from tests.server.process import poll_until, served
from wop_langgraph.protocol.ids import project_id

pytestmark = pytest.mark.slow


@pytest.fixture
def base_url(db_url: str) -> Iterator[str]:
    with served(db_url) as base:
        yield base


def settled(client: OpenwopClient, run_id: str) -> Any:
    """The run's snapshot, read with the SDK, once it waits on an interrupt or has ended."""
    return poll_until(
        lambda: client.runs_get(run_id), lambda s: s.status in RESTING, what=f"run {run_id} at rest"
    )


def refused(call: object, status: int, code: str) -> None:
    assert callable(call)
    with pytest.raises(WopError) as caught:
        call()
    assert caught.value.status == status, caught.value.raw_text
    assert caught.value.envelope is not None and caught.value.envelope.error == code
    assert (
        official_errors("error-envelope.schema.json", httpx.Response(200, text=caught.value.raw_text).json())
        == []
    )


def test_official_client_end_to_end(base_url: str) -> None:
    alice = OpenwopClient(base_url, "alice-key")
    reader = OpenwopClient(base_url, "reader-key")
    caps = alice.discovery_capabilities()
    assert caps.preferredVersion == "2.0" and caps.families["interrupt"].facets["tokenAlgs"] == ["hs256"]

    created = alice.runs_create(
        CreateRunRequest(workflowId="review", inputs={}), idempotency_key=str(uuid.uuid4())
    )
    assert created.status in ("pending", "running")  # answered at commit: a worker drives the run
    snapshot = settled(reader, created.runId)
    assert snapshot.status == "waiting-approval"
    assert snapshot.runId == created.runId and snapshot.currentNodeId == "review"
    page = reader.runs_poll_events(created.runId, timeout_seconds=1)
    assert [e.type for e in page.events][:1] == ["run.started"] and not page.isTerminal

    resolved = alice.interrupts_resolve_by_run(
        created.runId, "review", ResolveInterruptRequest(resumeValue={"action": "accept"})
    )
    assert (resolved.nodeId, resolved.status) == ("review", "running")
    assert settled(reader, created.runId).status == "waiting-input"
    refused(
        lambda: alice.interrupts_resolve_by_run(
            created.runId, "review", ResolveInterruptRequest(resumeValue={"action": "accept"})
        ),
        409,
        "interrupt_already_resolved",
    )
    refused(
        lambda: reader.interrupts_resolve_by_run(
            created.runId, "clarify", ResolveInterruptRequest(resumeValue={})
        ),
        403,
        "forbidden",
    )
    refused(
        lambda: alice.interrupts_resolve_by_run(
            created.runId, "no-such-node", ResolveInterruptRequest(resumeValue={})
        ),
        404,
        "not_found",
    )

    minted = httpx.post(
        f"{base_url}/runs/{project_id(created.runId)}/interrupts/clarify/tokens",
        json={},
        headers={"Authorization": "Bearer alice-key"},
    ).json()
    inspection = alice.interrupts_inspect_by_token(minted["token"])
    assert inspection.kind == "clarification" and inspection.data["questions"][0]["id"] == "q1"
    refused(
        lambda: alice.interrupts_resolve_by_token(
            minted["token"], ResolveInterruptRequest(resumeValue={"answers": {"q1": 3}})
        ),
        400,
        "validation_error",
    )
    done = alice.interrupts_resolve_by_token(
        minted["token"], ResolveInterruptRequest(resumeValue={"answers": {"q1": "blue"}})
    )
    assert done == {"runId": created.runId, "nodeId": "clarify", "status": "running"}
    assert settled(reader, created.runId).status == "completed"
    refused(lambda: alice.interrupts_inspect_by_token(minted["token"]), 409, "interrupt_already_resolved")
    refused(
        lambda: alice.interrupts_inspect_by_token("ow2.hs256.nokid.abc.def"), 401, "interrupt_token_invalid"
    )

    streamed = list(reader.runs_events(created.runId, stream_mode="debug", timeout_seconds=10))
    assert streamed[-1].type == "run.completed"
    assert [e.sequence for e in streamed] == list(range(len(streamed)))
    for event in streamed:
        validate_event({k: v for k, v in event.__dict__.items() if v is not None or k == "payload"})
    updates = list(reader.runs_events(created.runId, timeout_seconds=10))
    assert {e.type for e in updates} >= {"interrupt.requested", "interrupt.resolved", "run.completed"}
    assert "node.started" not in {e.type for e in updates}
    refused(lambda: alice.runs_cancel(created.runId), 409, "run_terminal")
    refused(lambda: OpenwopClient(base_url, "bob-key").runs_get(created.runId), 403, "id_tenant_mismatch")
    refused(lambda: OpenwopClient(base_url, "wrong").runs_get(created.runId), 401, "unauthenticated")
    refused(
        lambda: OpenwopClient(base_url, "alice-key", major=3).runs_get(created.runId),
        406,
        "protocol_version_unsupported",
    )
