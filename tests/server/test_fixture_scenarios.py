"""Each loaded official fixture, driven over HTTP as its description says: a real uvicorn process
started with ``serve --definitions``, the official ``openwop-client``, events judged by the official
schemas. The server answers ``POST /runs`` at commit or after driving the run (either is allowed),
so every test waits for the state it expects, with a bounded timeout.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client import OpenwopClient, WopError
from openwop_client.types import CreateRunRequest, ForkRunRequest, ResolveInterruptRequest
from sqlalchemy import create_engine, select

from tests.conftest import create_postgres_database, drop_postgres_database
from tests.official import official_errors, validate_event
from tests.server.conftest import SIGNING_KEYS
from tests.server.process import served
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.store.run_tables import runs_table
from wop_langgraph.tokens import SigningKeys, mint, verify

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[2] / "third_party" / "openwop" / "conformance" / "fixtures"
ALICE = {"Authorization": "Bearer alice-key"}
TIMEOUT = 20.0


class Server:
    """A served host and the official client over it."""

    def __init__(self, base: str, db_url: str) -> None:
        self.base = base
        self.db_url = db_url
        self.alice = OpenwopClient(base, "alice-key")
        self.reader = OpenwopClient(base, "reader-key")

    def create(self, workflow_id: str, inputs: dict[str, Any] | None = None, **body: Any) -> str:
        created = self.alice.runs_create(
            CreateRunRequest(workflowId=workflow_id, inputs=inputs or {}, **body),
            idempotency_key=str(uuid.uuid4()),
        )
        return created.runId

    def wait(self, run_id: str, *statuses: str) -> dict[str, Any]:
        """Poll the snapshot until its status is one of ``statuses`` (bounded)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            snapshot = httpx.get(f"{self.base}/runs/{project_id(run_id)}", headers=ALICE, timeout=10).json()
            if snapshot["status"] in statuses:
                return dict(snapshot)
            assert time.monotonic() < deadline, f"{run_id} stayed {snapshot['status']}, expected {statuses}"
            time.sleep(0.1)

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """Every event of the run, each valid against the official schemas."""
        url = f"{self.base}/runs/{project_id(run_id)}/events/poll"
        page = httpx.get(url, params={"timeout": 0}, headers=ALICE, timeout=10).json()
        docs: list[dict[str, Any]] = page["events"]
        for doc in docs:
            validate_event(doc)
        assert [d["sequence"] for d in docs] == list(range(len(docs)))
        return docs

    def resolve(self, run_id: str, node_id: str, value: Any, client: OpenwopClient | None = None) -> str:
        done = (client or self.alice).interrupts_resolve_by_run(
            run_id, node_id, ResolveInterruptRequest(resumeValue=value), idempotency_key=str(uuid.uuid4())
        )
        return done.status


def types(docs: list[dict[str, Any]], node_id: str | None = None) -> list[str]:
    return [d["type"] for d in docs if node_id is None or d.get("nodeId") == node_id]


def payloads(docs: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    return [d["payload"] for d in docs if d["type"] == event_type]


def refused(call: Callable[[], object], status: int, code: str) -> dict[str, Any]:
    with pytest.raises(WopError) as caught:
        call()
    assert caught.value.status == status, caught.value.raw_text
    body = httpx.Response(200, text=caught.value.raw_text).json()
    assert official_errors("error-envelope.schema.json", body) == [] and body["error"] == code, body
    return dict(body)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with the fixtures loaded, over a new SQLite file or a new PostgreSQL database."""
    if request.param == "sqlite":
        db_url = f"sqlite:///{tmp_path_factory.mktemp('fixtures') / 'wop.db'}"
    else:
        db_url = create_postgres_database()
    try:
        with served(db_url, sweep=0.3, extra_args=["--definitions", str(FIXTURES)]) as base:
            yield Server(base, db_url)
    finally:
        if request.param == "postgres":
            drop_postgres_database(db_url)


@pytest.fixture(scope="module")
def talking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db_url = f"sqlite:///{tmp_path_factory.mktemp('talking') / 'wop.db'}"
    with served(db_url, extra_args=["--definitions", str(FIXTURES), "--conversations"]) as base:
        yield Server(base, db_url)


def test_discovery_lists_the_loaded_fixtures(server: Server, talking: Server) -> None:
    caps = server.alice.discovery_capabilities()
    listed = caps.raw["fixtures"]
    assert "conformance-approval" in listed and "conformance-noop" in listed
    assert "conformance-orchestrator-low-confidence" in listed  # supervisor/dispatch are run
    assert "conformance-phase4-replay-divergence" not in listed  # refused: no AI model nodes
    assert len(listed) == 23
    assert "conversationPrimitive" not in caps.raw
    record = talking.alice.discovery_capabilities().families["conversationPrimitive"]
    assert (record.status, record.witness) == ("experimental", "claims-check")


def test_noop_completes(server: Server) -> None:
    run_id = server.create("conformance-noop")
    server.wait(run_id, "completed")
    assert types(server.events(run_id)) == [
        "run.started",
        "node.started",
        "node.completed",
        "run.completed",
    ]


def test_idempotent_replays_the_first_response(server: Server) -> None:
    key = str(uuid.uuid4())
    body = {"workflowId": "conformance-idempotent", "inputs": {"nonce": "n-1"}}
    first = httpx.post(
        f"{server.base}/runs", json=body, headers={**ALICE, "Idempotency-Key": key}, timeout=30
    )
    again = httpx.post(
        f"{server.base}/runs", json=body, headers={**ALICE, "Idempotency-Key": key}, timeout=30
    )
    assert first.status_code == again.status_code == 201
    assert again.json()["runId"] == first.json()["runId"]
    assert again.headers.get("openwop-idempotent-replay") == "true"
    server.wait(first.json()["runId"], "completed")


def test_cancellable_is_cancelled_mid_delay(server: Server) -> None:
    # POST /runs may drive the delay before answering: create it beside the test, and find the run
    # in the store while its delay node sleeps.
    created: list[str] = []
    creator = threading.Thread(
        target=lambda: created.append(server.create("conformance-cancellable", {"delayMs": 3000}))
    )
    creator.start()
    engine = create_engine(server.db_url)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            with engine.connect() as conn:
                row = conn.execute(
                    select(runs_table.c.run_id).where(runs_table.c.workflow_id == "conformance-cancellable")
                ).first()
            if row is not None:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        engine.dispose()
    run_id = row.run_id
    started = time.monotonic()
    assert server.alice.runs_cancel(run_id).status in ("cancelled", "cancelling")
    server.wait(run_id, "cancelled")
    assert time.monotonic() - started < 5
    creator.join(TIMEOUT)
    assert created == [run_id]
    assert server.wait(run_id, "cancelled", "completed")["status"] == "cancelled"  # the delay ended later
    docs = server.events(run_id)
    assert "run.cancelled" in types(docs) and "run.completed" not in types(docs)


def test_approval_accept_completes(server: Server) -> None:
    run_id = server.create("conformance-approval")
    assert server.wait(run_id, "waiting-approval")["currentNodeId"] == "gate"
    assert server.resolve(run_id, "gate", {"action": "accept"}) in ("completed", "running", "pending")
    server.wait(run_id, "completed")
    (requested,) = payloads(server.events(run_id), "interrupt.requested")
    assert requested["kind"] == "approval" and requested["data"]["actions"] == ["accept", "reject"]


def test_approval_reject_fails_the_run(server: Server) -> None:
    run_id = server.create("conformance-approval")
    server.wait(run_id, "waiting-approval")
    server.resolve(run_id, "gate", {"action": "reject"})
    snapshot = server.wait(run_id, "failed")
    assert snapshot["error"]["code"] == "approval_rejected"
    (failed,) = payloads(server.events(run_id), "run.failed")
    assert failed["failedNodeId"] == "gate"


def test_reject_routed_takes_the_any_failed_edge(server: Server) -> None:
    run_id = server.create("conformance-approval-reject-routed")
    server.wait(run_id, "waiting-approval")
    server.resolve(run_id, "gate", {"action": "reject"})
    server.wait(run_id, "completed")
    docs = server.events(run_id)
    (failed,) = payloads(docs, "node.failed")
    assert failed["nodeId"] == "gate" and failed["error"]["code"] == "approval_rejected"
    assert failed["error"]["retryable"] is False
    assert types(docs, "on-reject") == ["node.started", "node.completed"]
    assert types(docs, "on-accept") == ["node.skipped"]


def test_reject_loopback_asks_again_with_a_new_key(server: Server) -> None:
    run_id = server.create(
        "conformance-approval-reject-loopback", configurable={"version": 1, "run": {"recursionLimit": 20}}
    )
    server.wait(run_id, "waiting-approval")
    server.resolve(run_id, "gate", {"action": "reject"})
    deadline = time.monotonic() + TIMEOUT
    while len(payloads(server.events(run_id), "interrupt.requested")) < 2:
        assert time.monotonic() < deadline, "the gate was not asked again"
        time.sleep(0.1)
    server.wait(run_id, "waiting-approval")
    first, second = payloads(server.events(run_id), "interrupt.requested")
    assert first["key"] != second["key"]
    server.resolve(run_id, "gate", {"action": "accept"})
    server.wait(run_id, "completed")
    docs = server.events(run_id)
    assert [p["action"] for p in payloads(docs, "interrupt.resolved")] == ["reject", "accept"]
    assert types(docs, "revise").count("node.started") == 1


@pytest.mark.parametrize(
    "workflow_id", ["conformance-approval-timeout", "conformance-approval-timeout-approve"]
)
def test_approval_timeout_rejects_and_fails(server: Server, workflow_id: str) -> None:
    run_id = server.create(workflow_id)
    server.wait(run_id, "waiting-approval")
    snapshot = server.wait(run_id, "failed")  # 1500 ms timeout, swept every 0.3 s
    assert snapshot["error"]["code"] == "approval_rejected"
    docs = server.events(run_id)
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert (resolved["action"], resolved["decision"], resolved["reason"]) == (
        "timeout",
        "rejected",
        "timeout",
    )
    (failed,) = payloads(docs, "run.failed")
    assert failed["failedNodeId"] == "gate"
    assert "approval.granted" not in types(docs)


def test_clarification_answers_complete(server: Server) -> None:
    run_id = server.create("conformance-clarification")
    assert server.wait(run_id, "waiting-input")["currentNodeId"] == "ask"
    refused(lambda: server.resolve(run_id, "ask", {"answers": {"q1": 3}}), 400, "validation_error")
    server.resolve(run_id, "ask", {"answers": {"q1": "blue"}})
    server.wait(run_id, "completed")
    assert payloads(server.events(run_id), "interrupt.resolved")[0]["resumeValue"] == {
        "answers": {"q1": "blue"}
    }


def test_conversation_workflow_is_refused_at_create_run_without_the_capability(server: Server) -> None:
    body = refused(
        lambda: server.create("conformance-conversation-capability-negotiation"), 422, "capability_required"
    )
    assert body["details"] == {
        "requiredCapability": "conversationPrimitive",
        "offendingTypeId": "core.conversationGate",
        "nodeId": "convo",
    }


@pytest.mark.parametrize(
    ("workflow_id", "turns"),
    [
        ("conformance-conversation-lifecycle", 1),
        ("conformance-conversation-vs-clarification", 1),
        ("conformance-conversation-replay", 3),
    ],
)
def test_conversation_lifecycle_with_the_conformance_mock(
    talking: Server, workflow_id: str, turns: int
) -> None:
    run_id = talking.create(workflow_id)
    talking.wait(run_id, "completed")
    docs = talking.events(run_id)
    conversation = [d for d in docs if d["type"].startswith("conversation.")]
    assert [d["type"] for d in conversation] == (
        ["conversation.opened"] + ["conversation.exchanged"] * turns + ["conversation.closed"]
    )
    assert len({d["payload"]["conversationId"] for d in conversation}) == 1
    assert [p["turnIndex"] for p in payloads(docs, "conversation.exchanged")] == list(range(turns))
    assert not [t for t in types(docs) if t.startswith("clarification.")]


def test_auth_required_resolves_with_a_scoped_bearer_only(server: Server) -> None:
    run_id = server.create("conformance-interrupt-auth-required")
    server.wait(run_id, "waiting-approval")
    refused(lambda: server.resolve(run_id, "gate", {"action": "accept"}, server.reader), 403, "forbidden")
    assert server.wait(run_id, "waiting-approval")["status"] == "waiting-approval"
    server.resolve(run_id, "gate", {"action": "accept"})
    server.wait(run_id, "completed")


def test_auth_required_refuses_every_signed_token_resolve(server: Server) -> None:
    # Leg (a) of the fixture: under openwop-interrupt-auth-required a signed token may inspect
    # the gate but never resolve it, by JSON or by the reviewer page; the gate stays pending.
    run_id = server.create("conformance-interrupt-auth-required")
    server.wait(run_id, "waiting-approval")
    tokens_url = f"{server.base}/runs/{project_id(run_id)}/interrupts/gate/tokens"
    no_link = httpx.post(tokens_url, json={}, headers=ALICE, timeout=10)
    assert no_link.status_code == 403 and no_link.json()["error"] == "forbidden", no_link.text
    assert official_errors("error-envelope.schema.json", no_link.json()) == []
    viewer = httpx.post(tokens_url, json={"intent": "inspect"}, headers=ALICE, timeout=10)
    assert viewer.status_code == 201, viewer.text
    assert server.alice.interrupts_inspect_by_token(viewer.json()["token"]).kind == "approval"
    # A resolve token signed with the server's own key, as a link minted elsewhere would be.
    keys = SigningKeys.parse(SIGNING_KEYS)
    claims = verify(keys, viewer.json()["token"], now=datetime.now(UTC))
    token = mint(
        keys,
        run_id=claims.run_id,
        node_id=claims.node_id,
        interrupt_id=claims.interrupt_id,
        intent="resolve",
        now=datetime.now(UTC),
    ).token
    accept = ResolveInterruptRequest(resumeValue={"action": "accept"})
    body = refused(lambda: server.alice.interrupts_resolve_by_token(token, accept), 403, "forbidden")
    assert body["details"]["profile"] == "openwop-interrupt-auth-required"
    page = httpx.get(f"{server.base}/interrupts/{token}", headers={"Accept": "text/html"}, timeout=10)
    assert page.status_code == 200 and "signed-in reviewer" in page.text
    assert "<form" not in page.text and "Conformance auth-required approval" in page.text
    posted = httpx.post(f"{server.base}/interrupts/{token}/form", data={"action": "accept"}, timeout=10)
    assert posted.status_code == 403 and "signed-in reviewer" in posted.text and "<form" not in posted.text
    assert server.wait(run_id, "waiting-approval")["currentNodeId"] == "gate"
    assert "interrupt.resolved" not in types(server.events(run_id))
    assert server.resolve(run_id, "gate", {"action": "accept"}) in ("running", "completed")
    server.wait(run_id, "completed")
    assert payloads(server.events(run_id), "interrupt.resolved")[0]["resumeValue"]["action"] == "accept"


def test_external_event_resumes_on_a_matching_callback(server: Server) -> None:
    run_id = server.create("conformance-interrupt-external-event")
    assert server.wait(run_id, "waiting-external")["currentNodeId"] == "wait-for-external"
    minted = httpx.post(
        f"{server.base}/runs/{project_id(run_id)}/interrupts/wait-for-external/tokens", json={}, headers=ALICE
    ).json()
    token = minted["token"]
    inspected = server.alice.interrupts_inspect_by_token(token)
    assert inspected.kind == "external-event" and inspected.timeoutMs == 60000
    wrong = {"orderId": "fixture-order-1", "status": "pending"}
    # The fixture's prose says 422; this host answers the registered 400 validation_error (the
    # resume value fails the correlation), and the run does not resume.
    refused(
        lambda: server.alice.interrupts_resolve_by_token(token, ResolveInterruptRequest(resumeValue=wrong)),
        400,
        "validation_error",
    )
    assert server.wait(run_id, "waiting-external")["status"] == "waiting-external"
    event = {"orderId": "fixture-order-1", "status": "completed", "shippedAt": "2026-12-02"}
    server.alice.interrupts_resolve_by_token(token, ResolveInterruptRequest(resumeValue=event))
    server.wait(run_id, "completed")
    assert payloads(server.events(run_id), "interrupt.resolved")[0]["resumeValue"] == event


def test_parent_child_cancel_child_standalone_is_an_approval(server: Server) -> None:
    run_id = server.create("conformance-interrupt-parent-child-cancel-child")
    assert server.wait(run_id, "waiting-approval")["currentNodeId"] == "child-gate"
    server.resolve(run_id, "child-gate", {"action": "accept"})
    server.wait(run_id, "completed")


def test_quorum_needs_three_accepts_and_majority_reject_fails(server: Server) -> None:
    """Driven as the official suite drives it: one bearer casts every vote, naming the voter
    (``resumeValue.voter``). The bearer is an operator key holding ``approvals:delegate``
    (mailer-key), so each named voter counts once."""
    operator = OpenwopClient(server.base, "mailer-key")
    run_id = server.create("conformance-interrupt-quorum")
    server.wait(run_id, "waiting-approval")
    for voter in ("approver-1", "approver-2", "approver-2"):  # the same voter again: the same vote
        assert server.resolve(run_id, "gate", {"action": "accept", "voter": voter}, operator) == (
            "waiting-approval"
        )
    assert not payloads(server.events(run_id), "interrupt.resolved")
    assert server.resolve(run_id, "gate", {"action": "accept", "voter": "approver-3"}, operator) == "running"
    server.wait(run_id, "completed")
    (resolved,) = payloads(server.events(run_id), "interrupt.resolved")
    assert (resolved["decision"], resolved["resolvedBy"]["subjectId"]) == ("granted", "mailer")
    assert [v["voter"] for v in resolved["x-votes"]] == ["approver-1", "approver-2", "approver-3"]

    rejected = server.create("conformance-interrupt-quorum")
    server.wait(rejected, "waiting-approval")
    # Without the scope a resume value's ``voter`` confers no identity: both are alice's one vote.
    for voter in ("approver-1", "approver-2"):
        assert server.resolve(rejected, "gate", {"action": "accept", "voter": voter}) == "waiting-approval"
    for voter, status in (("approver-1", "waiting-approval"), ("approver-2", "running")):
        assert server.resolve(rejected, "gate", {"action": "reject", "voter": voter}, operator) == status
    assert server.wait(rejected, "failed")["error"]["code"] == "approval_rejected"
    (rejection,) = payloads(server.events(rejected), "interrupt.resolved")
    assert (rejection["decision"], rejection["reason"]) == ("rejected", "quorum-reject")
    assert [v["voter"] for v in rejection["x-votes"]] == ["alice", "approver-1", "approver-2"]


def test_mock_agent_low_confidence_suspends(server: Server) -> None:
    run_id = server.create("conformance-agent-low-confidence")
    server.wait(run_id, "waiting-approval")
    docs = server.events(run_id)
    (decided,) = payloads(docs, "agent.decided")
    assert decided == {
        "agentId": "core.conformance.low-conf-decider",
        "decision": {"kind": "stub-low-conf"},
        "confidence": 0.5,
    }
    (suspended,) = payloads(docs, "node.suspended")
    assert suspended["reason"] == "low-confidence"
    (requested,) = payloads(docs, "interrupt.requested")
    assert (requested["data"]["threshold"], requested["data"]["observed"]) == (0.7, 0.5)


def test_supervisor_suspends_before_dispatch_then_dispatches_once_ratified(server: Server) -> None:
    # Served with workers: the worker's child run is driven by them and handed back to the dispatch.
    run_id = server.create("conformance-orchestrator-low-confidence")
    server.wait(run_id, "waiting-approval")
    docs = server.events(run_id)
    assert "orchestrator.decided" not in types(docs) and "workflow-chain.event" not in types(docs)
    assert payloads(docs, "node.suspended")[0]["reason"] == "low-confidence"
    server.resolve(run_id, "supervisor", {"ratify": True})
    server.wait(run_id, "completed")
    chain = payloads(server.events(run_id), "workflow-chain.event")
    assert [(c["phase"], c["workerId"]) for c in chain] == [
        ("dispatch.began", "conformance-noop"),
        ("child.completed", "conformance-noop"),
    ]
    child = server.wait(chain[1]["childRunId"], "completed")
    assert child["workflowId"] == "conformance-noop"


def test_multi_agent_escalation_precedes_any_dispatch(server: Server) -> None:
    run_id = server.create("conformance-multi-agent-confidence-escalation")
    server.wait(run_id, "waiting-approval")
    docs = server.events(run_id)
    (escalated,) = payloads(docs, "workflow-chain.confidence-escalated")
    assert (escalated["confidence"], escalated["floor"]) == (0.3, 0.5)
    assert escalated["escalationKind"] == "escalate"
    assert "workflow-chain.event" not in types(docs)
    assert types(docs).index("workflow-chain.confidence-escalated") < types(docs).index("node.suspended")


def test_replay_ordinal_loop_runs_the_effect_twice(server: Server) -> None:
    run_id = server.create("conformance-replay-ordinal-loop", {"delayMs": 20})
    server.wait(run_id, "completed")
    docs = server.events(run_id)
    assert types(docs, "effect").count("node.started") == 2
    assert types(docs, "wait").count("node.completed") == 2


def test_replay_ordinal_loop_recursion_limit_7_breaches_the_node_execution_cap(server: Server) -> None:
    guard = {"version": 1, "run": {"recursionLimit": 7}}
    run_id = server.create("conformance-replay-ordinal-loop", {"delayMs": 10}, configurable=guard)
    assert server.wait(run_id, "failed")["error"]["code"] == "recursion_limit_exceeded"
    docs = server.events(run_id)
    assert types(docs).count("node.started") == 7
    assert payloads(docs, "cap.breached") == [{"kind": "node-executions", "limit": 7, "observed": 8}]


def test_replay_side_effect_holds_then_runs_the_effect(server: Server) -> None:
    run_id = server.create("conformance-replay-side-effect", {"delayMs": 20})
    server.wait(run_id, "completed")
    started = [p["nodeId"] for p in payloads(server.events(run_id), "node.started")]
    assert started == ["wait", "effect"]


def test_parent_cancel_cascades_to_the_child(server: Server) -> None:
    parent = server.create("conformance-interrupt-parent-child-cancel")
    server.wait(parent, "waiting-input")
    (requested,) = payloads(server.events(parent), "interrupt.requested")
    assert requested["data"]["customKind"] == "openwop.subWorkflow"
    child = requested["data"]["payload"]["childRunId"]
    snapshot = server.wait(child, "waiting-approval")
    assert snapshot["metadata"]["parent"]["runId"] == parent
    assert server.alice.runs_cancel(parent).status in ("cancelled", "cancelling")
    server.wait(parent, "cancelled")
    server.wait(child, "cancelled")
    (cancelled,) = payloads(server.events(child), "run.cancelled")
    assert (cancelled["reason"], cancelled["parentRunId"]) == ("parent-cancelled", parent)
    # errors.md: one code per state; the v1-era fixture prose says 410 Gone.
    refused(
        lambda: server.resolve(child, "child-gate", {"action": "accept"}), 409, "interrupt_already_resolved"
    )


def test_child_completion_resumes_the_parent(server: Server) -> None:
    parent = server.create("conformance-interrupt-parent-child-cancel")
    server.wait(parent, "waiting-input")
    child = payloads(server.events(parent), "interrupt.requested")[0]["data"]["payload"]["childRunId"]
    server.wait(child, "waiting-approval")
    server.resolve(child, "child-gate", {"action": "accept"})
    server.wait(child, "completed")
    server.wait(parent, "completed")
    (completed,) = [
        p for p in payloads(server.events(parent), "node.completed") if p["nodeId"] == "spawn-child"
    ]
    assert completed["outputs"] == {"childRunId": child, "childStatus": "completed"}


# -- fork and replay (replay.md, runs.md §Fork) ---------------------------------------------------


def fork(server: Server, run_id: str, mode: str, from_seq: int) -> str:
    """Fork with the official client; the fork's id (answered at commit)."""
    forked = server.alice.runs_fork(
        run_id,
        ForkRunRequest(fromSeq=from_seq, mode=mode),
        idempotency_key=str(uuid.uuid4()),  # type: ignore[arg-type]
    )
    assert (forked.sourceRunId, forked.mode, forked.fromSeq) == (run_id, mode, from_seq)
    return forked.runId


def seq_of(docs: list[dict[str, Any]], event_type: str, node_id: str | None = None) -> int:
    return int(
        next(d["sequence"] for d in docs if d["type"] == event_type and node_id in (None, d.get("nodeId")))
    )


def wait_for_event(server: Server, run_id: str, event_type: str, node_id: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not any(d["type"] == event_type and d.get("nodeId") == node_id for d in server.events(run_id)):
        assert time.monotonic() < deadline, f"{run_id} never logged {event_type} of {node_id}"
        time.sleep(0.05)


_ASKED = ("interrupt.requested", "approval.requested")


@pytest.mark.parametrize("workflow_id", ["conformance-approval", "conformance-approval-timeout"])
def test_replay_derives_rejection_and_timeout_from_the_record(server: Server, workflow_id: str) -> None:
    run_id = server.create(workflow_id)
    server.wait(run_id, "waiting-approval")
    if workflow_id == "conformance-approval":
        server.resolve(run_id, "gate", {"action": "reject"})
    server.wait(run_id, "failed")  # the timeout fixture is rejected by the sweep
    source = server.events(run_id)
    from_seq = seq_of(source, "interrupt.resolved")
    fork_id = fork(server, run_id, "replay", from_seq)
    snapshot = server.wait(fork_id, "failed")
    assert snapshot["error"]["code"] == "approval_rejected"
    docs = server.events(fork_id)
    assert not [d for d in docs[from_seq:] if d["type"] in _ASKED and d.get("nodeId") == "gate"]
    (resolved,) = payloads(docs, "interrupt.resolved")
    (recorded,) = payloads(source, "interrupt.resolved")
    for field in ("decision", "action", "reason", "resolvedBy"):
        assert resolved.get(field) == recorded.get(field), field
    (node_failed,) = payloads(docs, "node.failed")
    assert (node_failed["nodeId"], node_failed["error"]["code"]) == ("gate", "approval_rejected")
    assert node_failed["error"]["retryable"] is False
    (run_failed,) = payloads(docs, "run.failed")
    assert run_failed["failedNodeId"] == "gate"
    refused(lambda: server.resolve(fork_id, "gate", {"action": "accept"}), 409, "interrupt_already_resolved")


def test_branch_fork_asks_the_gate_again(server: Server) -> None:
    run_id = server.create("conformance-approval")
    server.wait(run_id, "waiting-approval")
    server.resolve(run_id, "gate", {"action": "reject"})
    server.wait(run_id, "failed")
    fork_id = fork(server, run_id, "branch", seq_of(server.events(run_id), "interrupt.resolved"))
    assert server.wait(fork_id, "waiting-approval")["currentNodeId"] == "gate"
    server.resolve(fork_id, "gate", {"action": "accept"})
    server.wait(fork_id, "completed")
    assert [p["action"] for p in payloads(server.events(fork_id), "interrupt.resolved")] == ["accept"]


def test_replay_side_effect_fails_closed_after_a_cancel_mid_hold(server: Server) -> None:
    run_id = server.create("conformance-replay-side-effect", {"delayMs": 1500})
    wait_for_event(server, run_id, "node.started", "wait")
    server.alice.runs_cancel(run_id)
    server.wait(run_id, "cancelled")
    assert "effect" not in [p["nodeId"] for p in payloads(server.events(run_id), "node.started")]
    fork_id = fork(server, run_id, "replay", 0)
    snapshot = server.wait(fork_id, "failed")
    assert snapshot["error"]["code"] == "replay_source_missing"
    docs = server.events(fork_id)
    # Pure: re-executed live; its outcome is one the cancelled source never recorded.
    assert [t for t in types(docs, "wait") if t.startswith("node.")] == ["node.started", "node.completed"]
    (diverged,) = payloads(docs, "replay.diverged")
    assert (diverged["sourceRunId"], diverged["divergenceKind"]) == (run_id, "extra")
    (failed,) = payloads(docs, "node.failed")
    assert (failed["nodeId"], failed["error"]["code"]) == ("effect", "replay_source_missing")
    assert "node.completed" not in types(docs, "effect")


def test_replay_ordinal_loop_resolves_each_execution_by_its_ordinal(server: Server) -> None:
    # The suite's construction: cancel inside `wait` after effect's first execution, fork at its
    # first node.started. In the fork effect n = 1 resolves from the record, `wait` (core.delay, a
    # timer: re-executed live) runs again, and effect n = 2, never recorded, fails closed.
    run_id = server.create("conformance-replay-ordinal-loop", {"delayMs": 1500})
    wait_for_event(server, run_id, "node.started", "wait")
    server.alice.runs_cancel(run_id)
    server.wait(run_id, "cancelled")
    source = server.events(run_id)
    assert types(source, "effect") == ["node.started", "node.completed"]
    assert "node.completed" not in types(source, "wait")
    (recorded,) = [p for p in payloads(source, "node.completed") if p["nodeId"] == "effect"]

    from_seq = seq_of(source, "node.started", "effect")
    fork_id = fork(server, run_id, "replay", from_seq)
    snapshot = server.wait(fork_id, "failed")
    assert snapshot["error"]["code"] == "replay_source_missing"
    docs = server.events(fork_id)
    steps = [(d["type"], d.get("nodeId")) for d in docs[from_seq:] if d["type"].startswith("node.")]
    assert steps == [
        ("node.started", "effect"),
        ("node.completed", "effect"),  # n = 1: the recorded outcome
        ("node.started", "wait"),
        ("node.completed", "wait"),  # re-executed live: not failed closed
        ("node.started", "effect"),
        ("node.failed", "effect"),  # n = 2: nothing recorded
    ]
    (completed,) = [p for p in payloads(docs, "node.completed") if p["nodeId"] == "effect"]
    # The recorded outcome, effectId included: performing the effect again would mint a new one.
    assert completed["outputs"] == recorded["outputs"]
    assert set(recorded["outputs"]) == {"performed", "effectId"}
    (failed,) = payloads(docs, "node.failed")
    assert (failed["nodeId"], failed["error"]["code"]) == ("effect", "replay_source_missing")
    assert failed["error"]["details"] == {"sourceRunId": run_id, "nodeId": "effect", "n": 2}
    assert failed["error"]["retryable"] is False
    (run_failed,) = payloads(docs, "run.failed")
    assert run_failed["failedNodeId"] == "effect"
    # wait's live outcome is one the cancelled source never recorded: reported, never fatal.
    (diverged,) = payloads(docs, "replay.diverged")
    assert (diverged["sourceRunId"], diverged["divergenceKind"]) == (run_id, "extra")


def test_conversation_replay_reproduces_the_conversation(talking: Server) -> None:
    run_id = talking.create("conformance-conversation-replay")
    talking.wait(run_id, "completed")
    fork_id = fork(talking, run_id, "replay", 0)
    talking.wait(fork_id, "completed")

    def projection(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        return [(d["type"], d["payload"]) for d in docs if d["type"].startswith("conversation.")]

    source, forked = projection(talking.events(run_id)), projection(talking.events(fork_id))
    assert [t for t, _ in forked] == [t for t, _ in source]
    assert forked == source
    # The suite's reading: the snapshots' conversation channel projections, non-empty, byte-equal.
    channels = [talking.wait(r, "completed").get("channels") for r in (run_id, fork_id)]
    assert channels[0] and channels[0]["conversation"], channels
    assert json.dumps(channels[1]) == json.dumps(channels[0])
