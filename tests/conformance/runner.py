"""A conformance runner: the official fixtures, driven leg by leg over HTTP as the official suite does.

It serves this repository's host (``serve --conversations --credentials --definitions`` over the
vendored fixtures, a real uvicorn process), reads discovery once as the suite does, and drives
every leg through the HTTP API only. A leg is skipped only when discovery does not advertise what
it needs (its fixture in ``fixtures[]``, and the capability family the suite gates it on);
otherwise it passes or fails. Every event read is judged by the official schemas.

    python -m tests.conformance.runner [--db URL] [--write-readme]

prints the table of results (fixture, leg, result) and, with ``--write-readme``, puts it in the
"Conformance" section of the docs page ``docs/conformance.md`` (the flag keeps its name from when
the table was in the README; ``tests/conformance/test_conformance.py`` checks they agree).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.official import validate_event
from wop_langgraph.protocol.ids import project_id

__all__ = ["LEGS", "Leg", "Result", "markdown_table", "run_legs", "serve_for_conformance"]

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "third_party" / "openwop" / "conformance" / "fixtures"
#: The docs page whose "Conformance" section holds the table, between these two markers.
README = REPO / "docs" / "conformance.md"
BEGIN, END = "<!-- conformance-table:begin -->", "<!-- conformance-table:end -->"
#: One bearer drives every leg, as the suite's operator key does; it may vote for named voters.
OPERATOR_KEY = "operator-key"
API_KEYS = ";".join(
    [
        f"{OPERATOR_KEY}=acme:operator:runs:create+runs:read+runs:cancel+approvals:respond+approvals:delegate",
        "reader-key=acme:rita:runs:read",
    ]
)
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}
READER = {"Authorization": "Bearer reader-key"}
TIMEOUT = 20.0


class Skip(Exception):
    """The host does not advertise what the leg needs."""


@dataclass(frozen=True)
class Leg:
    """One leg of a fixture: what it is called, what discovery must advertise, how it is driven."""

    fixture: str
    name: str
    drive: Callable[[Conformance], None]
    needs: tuple[str, ...] = ()  # capability names, see CAPABILITIES


@dataclass(frozen=True)
class Result:
    fixture: str
    leg: str
    result: str  # "pass", "fail" or "skip"
    detail: str = ""


# -- what discovery says ------------------------------------------------------------------


def _family(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = doc.get(name, (doc.get("capabilities") or {}).get(name))
    if isinstance(value, dict) and value.get("supported", True) is not False:
        return value
    return None


def _replay_modes(doc: dict[str, Any]) -> list[Any]:
    family = _family(doc, "replay") or {}
    modes = family.get("modes")
    return modes if isinstance(modes, list) else []


#: How a leg's need is read from the discovery document (the suite's gates).
CAPABILITIES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "replay": lambda doc: "replay" in _replay_modes(doc),
    "branch": lambda doc: "branch" in _replay_modes(doc),
    # v1 said it with a flag; the closed v2 replay record has none: there the record with mode
    # "replay" and an effect-seam manifest *is* the recorded-outcome suppression claim.
    "sideEffectSuppression": lambda doc: (
        (_family(doc, "replay") or {}).get("sideEffectSuppression") == "recorded-outcome"
        or (
            "replay" in _replay_modes(doc) and bool((_family(doc, "replay") or {}).get("effectSeamsManifest"))
        )
    ),
    "conversationPrimitive": lambda doc: _family(doc, "conversationPrimitive") is not None,
    # The inverted gate: the refusal leg runs only against a host without conversations.
    "no conversationPrimitive": lambda doc: _family(doc, "conversationPrimitive") is None,
    "agents": lambda doc: _family(doc, "agents") is not None,
    "multiAgent": lambda doc: _family(doc, "multiAgent") is not None,
}


# -- the driver ---------------------------------------------------------------------------


class Conformance:
    """What a leg drives: the served host's HTTP API (and its database, to find a run mid-step)."""

    def __init__(self, base: str, db_url: str) -> None:
        self.base = base
        self.db_url = db_url
        self.http = httpx.Client(base_url=base, headers=OPERATOR, timeout=30)
        self.discovery: dict[str, Any] = self.http.get("/.well-known/openwop").json()

    def close(self) -> None:
        self.http.close()

    def advertised(self, fixture: str) -> bool:
        return fixture in (self.discovery.get("fixtures") or [])

    def create(self, workflow_id: str, inputs: dict[str, Any] | None = None, **body: Any) -> str:
        answer = self.http.post(
            "/runs",
            json={"workflowId": workflow_id, "inputs": inputs or {}, **body},
            headers={"Idempotency-Key": str(uuid.uuid4())},
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["runId"])

    def snapshot(self, run_id: str) -> dict[str, Any]:
        answer = self.http.get(f"/runs/{project_id(run_id)}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def wait(self, run_id: str, *statuses: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            snapshot = self.snapshot(run_id)
            if snapshot["status"] in statuses:
                return snapshot
            assert time.monotonic() < deadline, f"run stayed {snapshot['status']}, expected {statuses}"
            time.sleep(0.1)

    def events(self, run_id: str) -> list[dict[str, Any]]:
        page = self.http.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 0}).json()
        docs: list[dict[str, Any]] = page["events"]
        for doc in docs:
            validate_event(doc)
        return docs

    def until(self, run_id: str, check: Callable[[list[dict[str, Any]]], bool], what: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not check(self.events(run_id)):
            assert time.monotonic() < deadline, f"never: {what}"
            time.sleep(0.05)

    def resolve(
        self, run_id: str, node_id: str, value: Any, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        return self.http.post(
            f"/runs/{project_id(run_id)}/interrupts/{node_id}",
            json={"resumeValue": value},
            headers={"Idempotency-Key": str(uuid.uuid4()), **(headers or {})},
        )

    def resolved(self, run_id: str, node_id: str, value: Any) -> dict[str, Any]:
        answer = self.resolve(run_id, node_id, value)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def fork(self, run_id: str, mode: str, from_seq: int | None = None) -> str:
        body: dict[str, Any] = {"mode": mode}
        if from_seq is not None:
            body["fromSeq"] = from_seq
        answer = self.http.post(
            f"/runs/{project_id(run_id)}:fork", json=body, headers={"Idempotency-Key": str(uuid.uuid4())}
        )
        assert answer.status_code in (200, 201), answer.text
        return str(answer.json()["runId"])

    def cancel(self, run_id: str) -> None:
        answer = self.http.post(f"/runs/{project_id(run_id)}/cancel", json={})
        assert answer.status_code in (200, 202), answer.text


def types(docs: list[dict[str, Any]], node_id: str | None = None) -> list[str]:
    return [d["type"] for d in docs if node_id is None or d.get("nodeId") == node_id]


def payloads(docs: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    return [d["payload"] for d in docs if d["type"] == event_type]


def error_code(answer: httpx.Response) -> tuple[int, str]:
    return answer.status_code, str(answer.json().get("error"))


def seq_of(docs: list[dict[str, Any]], event_type: str, node_id: str | None = None) -> int:
    return int(
        next(d["sequence"] for d in docs if d["type"] == event_type and node_id in (None, d.get("nodeId")))
    )


# -- the legs -----------------------------------------------------------------------------


def noop_completes(c: Conformance) -> None:
    run_id = c.create("conformance-noop")
    c.wait(run_id, "completed")
    assert types(c.events(run_id)) == ["run.started", "node.started", "node.completed", "run.completed"]


def idempotent_replays(c: Conformance) -> None:
    key = str(uuid.uuid4())
    body = {"workflowId": "conformance-idempotent", "inputs": {"nonce": "n-1"}}
    first = c.http.post("/runs", json=body, headers={"Idempotency-Key": key})
    again = c.http.post("/runs", json=body, headers={"Idempotency-Key": key})
    assert first.status_code == again.status_code == 201, (first.text, again.text)
    assert again.json()["runId"] == first.json()["runId"]
    assert again.headers.get("openwop-idempotent-replay") == "true"
    c.wait(first.json()["runId"], "completed")


def idempotent_other_body_conflicts(c: Conformance) -> None:
    key = str(uuid.uuid4())
    first = c.http.post(
        "/runs",
        json={"workflowId": "conformance-idempotent", "inputs": {"nonce": "a"}},
        headers={"Idempotency-Key": key},
    )
    other = c.http.post(
        "/runs",
        json={"workflowId": "conformance-idempotent", "inputs": {"nonce": "b"}},
        headers={"Idempotency-Key": key},
    )
    assert first.status_code == 201 and other.status_code in (409, 422), other.text


def cancellable_mid_delay(c: Conformance) -> None:
    created: list[str] = []
    creator = threading.Thread(
        target=lambda: created.append(c.create("conformance-cancellable", {"delayMs": 3000})), daemon=True
    )
    creator.start()
    run_id = _find_run(c.db_url, "conformance-cancellable")
    c.cancel(run_id)
    c.wait(run_id, "cancelled")
    creator.join(TIMEOUT)
    docs = c.events(run_id)
    assert "run.cancelled" in types(docs) and "run.completed" not in types(docs)


def approval_accept(c: Conformance) -> None:
    run_id = c.create("conformance-approval")
    assert c.wait(run_id, "waiting-approval")["currentNodeId"] == "gate"
    c.resolved(run_id, "gate", {"action": "accept"})
    c.wait(run_id, "completed")


def approval_reject(c: Conformance) -> None:
    run_id = c.create("conformance-approval")
    c.wait(run_id, "waiting-approval")
    c.resolved(run_id, "gate", {"action": "reject"})
    assert c.wait(run_id, "failed")["error"]["code"] == "approval_rejected"
    (failed,) = payloads(c.events(run_id), "run.failed")
    assert failed["failedNodeId"] == "gate"


def approval_replay_fork(c: Conformance, workflow_id: str = "conformance-approval") -> None:
    run_id = c.create(workflow_id)
    c.wait(run_id, "waiting-approval")
    if workflow_id == "conformance-approval":
        c.resolved(run_id, "gate", {"action": "reject"})
    c.wait(run_id, "failed")
    source = c.events(run_id)
    fork_id = c.fork(run_id, "replay", seq_of(source, "interrupt.resolved"))
    assert c.wait(fork_id, "failed")["error"]["code"] == "approval_rejected"
    (resolved,) = payloads(c.events(fork_id), "interrupt.resolved")
    (recorded,) = payloads(source, "interrupt.resolved")
    for field in ("decision", "action", "reason"):
        assert resolved.get(field) == recorded.get(field), field
    assert error_code(c.resolve(fork_id, "gate", {"action": "accept"})) == (409, "interrupt_already_resolved")


def approval_branch_fork(c: Conformance) -> None:
    run_id = c.create("conformance-approval")
    c.wait(run_id, "waiting-approval")
    c.resolved(run_id, "gate", {"action": "reject"})
    c.wait(run_id, "failed")
    fork_id = c.fork(run_id, "branch", seq_of(c.events(run_id), "interrupt.resolved"))
    assert c.wait(fork_id, "waiting-approval")["currentNodeId"] == "gate"
    c.resolved(fork_id, "gate", {"action": "accept"})
    c.wait(fork_id, "completed")


def reject_routed(c: Conformance) -> None:
    run_id = c.create("conformance-approval-reject-routed")
    c.wait(run_id, "waiting-approval")
    c.resolved(run_id, "gate", {"action": "reject"})
    c.wait(run_id, "completed")
    docs = c.events(run_id)
    (failed,) = payloads(docs, "node.failed")
    assert failed["error"]["code"] == "approval_rejected" and failed["error"]["retryable"] is False
    assert types(docs, "on-reject") == ["node.started", "node.completed"]
    assert types(docs, "on-accept") == ["node.skipped"]


def reject_loopback(c: Conformance) -> None:
    run_id = c.create(
        "conformance-approval-reject-loopback", configurable={"version": 1, "run": {"recursionLimit": 20}}
    )
    c.wait(run_id, "waiting-approval")
    c.resolved(run_id, "gate", {"action": "reject"})
    c.until(run_id, lambda d: len(payloads(d, "interrupt.requested")) == 2, "the gate asked again")
    c.wait(run_id, "waiting-approval")
    first, second = payloads(c.events(run_id), "interrupt.requested")
    assert first["key"] != second["key"]
    c.resolved(run_id, "gate", {"action": "accept"})
    c.wait(run_id, "completed")
    decisions = [p["decision"] for p in payloads(c.events(run_id), "interrupt.resolved")]
    assert decisions == ["rejected", "granted"]


def timeout_rejects(c: Conformance, workflow_id: str = "conformance-approval-timeout") -> None:
    run_id = c.create(workflow_id)
    c.wait(run_id, "waiting-approval")
    assert c.wait(run_id, "failed")["error"]["code"] == "approval_rejected"
    docs = c.events(run_id)
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert (resolved["action"], resolved["decision"], resolved["reason"]) == (
        "timeout",
        "rejected",
        "timeout",
    )
    assert "approval.granted" not in types(docs)


def clarification_answers(c: Conformance) -> None:
    run_id = c.create("conformance-clarification")
    assert c.wait(run_id, "waiting-input")["currentNodeId"] == "ask"
    assert error_code(c.resolve(run_id, "ask", {"answers": {"q1": 3}})) == (400, "validation_error")
    c.resolved(run_id, "ask", {"answers": {"q1": "blue"}})
    c.wait(run_id, "completed")


def capability_negotiation(c: Conformance) -> None:
    workflow_id = "conformance-conversation-capability-negotiation"
    answer = c.http.post(
        "/runs", json={"workflowId": workflow_id}, headers={"Idempotency-Key": str(uuid.uuid4())}
    )
    assert error_code(answer) == (422, "capability_required"), answer.text


def conversation_lifecycle(c: Conformance, workflow_id: str = "conformance-conversation-lifecycle") -> None:
    run_id = c.create(workflow_id)
    c.wait(run_id, "completed")
    docs = c.events(run_id)
    conversation = [d["type"] for d in docs if d["type"].startswith("conversation.")]
    assert conversation[0] == "conversation.opened" and conversation[-1] == "conversation.closed", (
        conversation
    )
    assert "conversation.exchanged" in conversation
    assert not [t for t in types(docs) if t.startswith("clarification.")]


def conversation_replay(c: Conformance) -> None:
    run_id = c.create("conformance-conversation-replay")
    c.wait(run_id, "completed")
    source = c.snapshot(run_id).get("channels")
    assert isinstance(source, dict) and source, "the source run projects no channels"
    fork_id = c.fork(run_id, "replay")
    c.wait(fork_id, "completed")
    assert json.dumps(c.snapshot(fork_id).get("channels")) == json.dumps(source)


def auth_required_scoped_bearer(c: Conformance) -> None:
    run_id = c.create("conformance-interrupt-auth-required")
    c.wait(run_id, "waiting-approval")
    assert c.resolve(run_id, "gate", {"action": "accept"}, READER).status_code == 403
    c.resolved(run_id, "gate", {"action": "accept"})
    c.wait(run_id, "completed")


def auth_required_refuses_tokens(c: Conformance) -> None:
    run_id = c.create("conformance-interrupt-auth-required")
    c.wait(run_id, "waiting-approval")
    minted = c.http.post(f"/runs/{project_id(run_id)}/interrupts/gate/tokens", json={})
    assert minted.status_code == 403, minted.text  # no resolve link for a bearer-only gate
    assert "interrupt.resolved" not in types(c.events(run_id))


def external_event(c: Conformance) -> None:
    run_id = c.create("conformance-interrupt-external-event")
    c.wait(run_id, "waiting-external")
    minted = c.http.post(f"/runs/{project_id(run_id)}/interrupts/wait-for-external/tokens", json={})
    token = minted.json()["token"]
    wrong = c.http.post(
        f"/interrupts/{token}", json={"resumeValue": {"orderId": "fixture-order-1", "status": "pending"}}
    )
    assert wrong.status_code in (400, 422), wrong.text
    event = {"orderId": "fixture-order-1", "status": "completed", "shippedAt": "2026-12-02"}
    assert c.http.post(f"/interrupts/{token}", json={"resumeValue": event}).status_code == 200
    c.wait(run_id, "completed")


def child_standalone(c: Conformance) -> None:
    run_id = c.create("conformance-interrupt-parent-child-cancel-child")
    c.wait(run_id, "waiting-approval")
    c.resolved(run_id, "child-gate", {"action": "accept"})
    c.wait(run_id, "completed")


def _child_of(c: Conformance, parent: str) -> str:
    c.wait(parent, "waiting-input")
    return str(payloads(c.events(parent), "interrupt.requested")[0]["data"]["payload"]["childRunId"])


def parent_cancel_cascades(c: Conformance) -> None:
    parent = c.create("conformance-interrupt-parent-child-cancel")
    child = _child_of(c, parent)
    c.wait(child, "waiting-approval")
    c.cancel(parent)
    c.wait(parent, "cancelled")
    c.wait(child, "cancelled")
    (cancelled,) = payloads(c.events(child), "run.cancelled")
    assert (cancelled.get("reason"), cancelled.get("parentRunId")) == ("parent-cancelled", parent), cancelled
    assert c.resolve(child, "child-gate", {"action": "accept"}).status_code in (409, 410)


def child_completion_resumes_parent(c: Conformance) -> None:
    parent = c.create("conformance-interrupt-parent-child-cancel")
    child = _child_of(c, parent)
    c.wait(child, "waiting-approval")
    c.resolved(child, "child-gate", {"action": "accept"})
    c.wait(parent, "completed")


def quorum_three_accepts(c: Conformance) -> None:
    # The suite's construction: one bearer casts each vote for a named voter.
    run_id = c.create("conformance-interrupt-quorum")
    c.wait(run_id, "waiting-approval")
    for voter in ("approver-1", "approver-2"):
        c.resolved(run_id, "gate", {"action": "accept", "voter": voter})
        assert c.snapshot(run_id)["status"] == "waiting-approval"
    assert not payloads(c.events(run_id), "interrupt.resolved")
    c.resolved(run_id, "gate", {"action": "accept", "voter": "approver-3"})
    c.wait(run_id, "completed")


def quorum_majority_reject(c: Conformance) -> None:
    run_id = c.create("conformance-interrupt-quorum")
    c.wait(run_id, "waiting-approval")
    c.resolved(run_id, "gate", {"action": "reject", "voter": "approver-1"})
    assert c.snapshot(run_id)["status"] == "waiting-approval"
    c.resolved(run_id, "gate", {"action": "reject", "voter": "approver-2"})
    assert c.wait(run_id, "failed")["error"]["code"] == "approval_rejected"


def low_confidence_suspends(c: Conformance) -> None:
    run_id = c.create("conformance-agent-low-confidence")
    c.wait(run_id, "waiting-approval")
    docs = c.events(run_id)
    (suspended,) = payloads(docs, "node.suspended")
    assert suspended["reason"] == "low-confidence"
    (requested,) = payloads(docs, "interrupt.requested")
    assert (requested["data"]["threshold"], requested["data"]["observed"]) == (0.7, 0.5)


def supervisor_suspends_before_dispatch(fixture: str) -> Callable[[Conformance], None]:
    def drive(c: Conformance) -> None:
        run_id = c.create(fixture)
        c.wait(run_id, "waiting-approval", "waiting-input")
        docs = c.events(run_id)
        assert "node.suspended" in types(docs)
        # No dispatch before the resolution (the v2 name of core.workflowChain.event).
        assert "workflow-chain.event" not in types(docs)

    return drive


def phase4_divergence(c: Conformance) -> None:
    run_id = c.create("conformance-phase4-replay-divergence")
    c.wait(run_id, "completed", "failed")
    fork_id = c.fork(run_id, "replay")
    c.wait(fork_id, "completed", "failed")
    assert "replay.diverged" in types(c.events(fork_id))


def ordinal_loop_twice(c: Conformance) -> None:
    run_id = c.create("conformance-replay-ordinal-loop", {"delayMs": 20})
    c.wait(run_id, "completed", "failed")
    assert types(c.events(run_id), "effect").count("node.started") >= 2


def ordinal_loop_recursion_limit(c: Conformance) -> None:
    guard = {"version": 1, "run": {"recursionLimit": 7}}
    run_id = c.create("conformance-replay-ordinal-loop", {"delayMs": 10}, configurable=guard)
    assert c.wait(run_id, "failed")["error"]["code"] == "recursion_limit_exceeded"
    docs = c.events(run_id)
    assert types(docs).count("node.started") == 7
    assert payloads(docs, "cap.breached") == [{"kind": "node-executions", "limit": 7, "observed": 8}]


def ordinal_loop_replay_fails_closed(c: Conformance) -> None:
    run_id = c.create("conformance-replay-ordinal-loop", {"delayMs": 1500})
    c.until(run_id, lambda d: "node.completed" in types(d, "effect"), "effect's first execution completed")
    c.cancel(run_id)
    c.wait(run_id, "cancelled")
    source = c.events(run_id)
    fork_id = c.fork(run_id, "replay", seq_of(source, "node.started", "effect"))
    c.wait(fork_id, "completed", "failed", "cancelled")
    docs = [d for d in c.events(fork_id) if d.get("nodeId") == "effect"]
    assert types(docs).count("node.completed") <= 1
    assert any(
        d["type"] == "node.failed" and d["payload"]["error"]["code"] == "replay_source_missing" for d in docs
    )


def side_effect_holds_then_runs(c: Conformance) -> None:
    run_id = c.create("conformance-replay-side-effect", {"delayMs": 20})
    c.wait(run_id, "completed")
    assert [p["nodeId"] for p in payloads(c.events(run_id), "node.started")] == ["wait", "effect"]


def side_effect_fork_fails_closed(c: Conformance) -> None:
    run_id = c.create("conformance-replay-side-effect", {"delayMs": 1500})
    c.until(run_id, lambda d: "node.started" in types(d, "wait"), "wait started")
    c.cancel(run_id)
    c.wait(run_id, "cancelled")
    fork_id = c.fork(run_id, "replay", 0)
    assert c.wait(fork_id, "failed")["error"]["code"] == "replay_source_missing"
    assert "node.completed" not in types(c.events(fork_id), "effect")


def _find_run(db_url: str, workflow_id: str) -> str:
    """A run of ``workflow_id`` as soon as it is stored (its creation may still be driving it)."""
    from sqlalchemy import create_engine, select

    from wop_langgraph.store.run_tables import runs_table

    engine = create_engine(db_url)
    deadline = time.monotonic() + TIMEOUT
    try:
        while True:
            with engine.connect() as conn:
                row = conn.execute(
                    select(runs_table.c.run_id)
                    .where(runs_table.c.workflow_id == workflow_id, runs_table.c.status.not_in(["cancelled"]))
                    .order_by(runs_table.c.created_at.desc())
                ).first()
            if row is not None:
                return str(row.run_id)
            assert time.monotonic() < deadline, f"no run of {workflow_id} was stored"
            time.sleep(0.05)
    finally:
        engine.dispose()


LEGS: tuple[Leg, ...] = (
    Leg("conformance-noop", "completes", noop_completes),
    Leg("conformance-idempotent", "same key replays the first response", idempotent_replays),
    Leg("conformance-idempotent", "same key, other body is refused", idempotent_other_body_conflicts),
    Leg("conformance-cancellable", "cancel mid-delay", cancellable_mid_delay),
    Leg("conformance-approval", "accept completes", approval_accept),
    Leg("conformance-approval", "reject fails the run", approval_reject),
    Leg("conformance-approval", "replay fork derives the rejection", approval_replay_fork, ("replay",)),
    Leg("conformance-approval", "branch fork asks again", approval_branch_fork, ("branch",)),
    Leg("conformance-approval-reject-routed", "reject takes the any_failed edge", reject_routed),
    Leg("conformance-approval-reject-loopback", "asked again under a new key", reject_loopback),
    Leg("conformance-approval-timeout", "timeout rejects and fails", timeout_rejects),
    Leg(
        "conformance-approval-timeout",
        "replay fork derives the timeout",
        lambda c: approval_replay_fork(c, "conformance-approval-timeout"),
        ("replay",),
    ),
    Leg(
        "conformance-approval-timeout-approve",
        "onTimeout approve never grants",
        lambda c: timeout_rejects(c, "conformance-approval-timeout-approve"),
    ),
    Leg("conformance-clarification", "bad answer refused, good answer completes", clarification_answers),
    Leg(
        "conformance-conversation-capability-negotiation",
        "refused at create without the capability",
        capability_negotiation,
        ("no conversationPrimitive",),
    ),
    Leg(
        "conformance-conversation-lifecycle",
        "open, exchange, close",
        conversation_lifecycle,
        ("conversationPrimitive",),
    ),
    Leg(
        "conformance-conversation-vs-clarification",
        "conversation.* not clarification.*",
        lambda c: conversation_lifecycle(c, "conformance-conversation-vs-clarification"),
        ("conversationPrimitive",),
    ),
    Leg(
        "conformance-conversation-replay",
        "replay fork projects byte-equal channels",
        conversation_replay,
        ("conversationPrimitive", "replay"),
    ),
    Leg("conformance-interrupt-auth-required", "only a scoped bearer resolves", auth_required_scoped_bearer),
    Leg("conformance-interrupt-auth-required", "no signed-token resolve", auth_required_refuses_tokens),
    Leg("conformance-interrupt-external-event", "correlated callback resumes", external_event),
    Leg("conformance-interrupt-parent-child-cancel-child", "standalone approval", child_standalone),
    Leg(
        "conformance-interrupt-parent-child-cancel",
        "cancel cascades with parentRunId",
        parent_cancel_cascades,
    ),
    Leg(
        "conformance-interrupt-parent-child-cancel",
        "child completion resumes the parent",
        child_completion_resumes_parent,
    ),
    Leg("conformance-interrupt-quorum", "three named voters complete", quorum_three_accepts),
    Leg("conformance-interrupt-quorum", "majority reject fails", quorum_majority_reject),
    Leg(
        "conformance-agent-low-confidence", "suspends on low confidence", low_confidence_suspends, ("agents",)
    ),
    Leg(
        "conformance-orchestrator-low-confidence",
        "supervisor suspends before dispatch",
        supervisor_suspends_before_dispatch("conformance-orchestrator-low-confidence"),
        ("multiAgent",),
    ),
    Leg(
        "conformance-multi-agent-confidence-escalation",
        "escalates before dispatch",
        supervisor_suspends_before_dispatch("conformance-multi-agent-confidence-escalation"),
        ("multiAgent",),
    ),
    Leg("conformance-phase4-replay-divergence", "replay reports divergence", phase4_divergence, ("replay",)),
    Leg("conformance-replay-ordinal-loop", "loop runs the effect again", ordinal_loop_twice),
    Leg("conformance-replay-ordinal-loop", "recursion limit 7", ordinal_loop_recursion_limit),
    Leg(
        "conformance-replay-ordinal-loop",
        "replay fails closed at n = 2",
        ordinal_loop_replay_fails_closed,
        ("replay", "sideEffectSuppression"),
    ),
    Leg("conformance-replay-side-effect", "holds, then runs the effect", side_effect_holds_then_runs),
    Leg(
        "conformance-replay-side-effect",
        "replay after a cancel mid-hold fails closed",
        side_effect_fork_fails_closed,
        ("replay", "sideEffectSuppression"),
    ),
)


def run_legs(base: str, db_url: str, legs: tuple[Leg, ...] = LEGS) -> list[Result]:
    """Drive each leg against the served host at ``base``; one result per leg, in order."""
    c = Conformance(base, db_url)
    results: list[Result] = []
    try:
        for leg in legs:
            missing = [need for need in leg.needs if not CAPABILITIES[need](c.discovery)]
            if not c.advertised(leg.fixture):
                results.append(Result(leg.fixture, leg.name, "skip", "fixture not advertised"))
                continue
            if missing:
                results.append(Result(leg.fixture, leg.name, "skip", f"not advertised: {', '.join(missing)}"))
                continue
            try:
                leg.drive(c)
            except Exception as exc:  # a leg's failure is its result; the next leg still runs
                results.append(Result(leg.fixture, leg.name, "fail", f"{type(exc).__name__}: {exc}"[:300]))
            else:
                results.append(Result(leg.fixture, leg.name, "pass"))
    finally:
        c.close()
    return results


def markdown_table(results: list[Result]) -> str:
    """The README table: one row per leg, then the totals."""
    rows = ["| fixture | leg | result |", "| --- | --- | --- |"]
    for r in results:
        shown = (
            r.result
            if r.result == "pass"
            else f"{r.result} ({r.detail.splitlines()[0][:80]})"
            if r.result == "skip"
            else "fail"
        )
        rows.append(f"| `{r.fixture}` | {r.leg} | {shown} |")
    counts = {k: sum(1 for r in results if r.result == k) for k in ("pass", "fail", "skip")}
    rows.append("")
    rows.append(
        f"{len(results)} legs: {counts['pass']} pass, {counts['fail']} fail, {counts['skip']} skipped."
    )
    return "\n".join(rows)


def readme_table(text: str | None = None) -> str:
    """The table now in the docs page (between the markers)."""
    text = README.read_text() if text is None else text
    match = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    assert match is not None, f"{README.relative_to(REPO)} has no conformance table markers"
    return match.group(1)


def write_readme(table: str) -> None:
    text = README.read_text()
    current = readme_table(text)
    README.write_text(text.replace(f"{BEGIN}\n{current}\n{END}", f"{BEGIN}\n{table}\n{END}"))


def serve_for_conformance(db_url: str) -> Iterator[str]:
    """The host served as the conformance run wants it (a context manager's generator)."""
    from tests.server.process import served

    extra = ["--definitions", str(FIXTURES), "--conversations", "--credentials"]
    with served(db_url, sweep=0, extra_args=extra, extra_env={"WOP_API_KEYS": API_KEYS}) as base:
        yield base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a new SQLite file)")
    parser.add_argument("--write-readme", action="store_true", help="put the table in docs/conformance.md")
    args = parser.parse_args(argv)
    from contextlib import contextmanager

    with tempfile.TemporaryDirectory() as folder:
        db_url = args.db or f"sqlite:///{Path(folder) / 'wop.db'}"
        with contextmanager(serve_for_conformance)(db_url) as base:
            results = run_legs(base, db_url)
    table = markdown_table(results)
    print(table)
    for r in results:
        if r.result == "fail":
            print(f"FAIL {r.fixture} / {r.leg}: {r.detail}")
    if args.write_readme:
        write_readme(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
