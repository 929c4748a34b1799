"""The official supervisor/dispatch fixtures on a real host: escalation suspends before any dispatch.

Both fixtures are loaded unedited from the vendored copies; the tests run on SQLite and PostgreSQL
(the ``host`` fixture) and every event is judged by the official schemas.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.host._graphs import ALICE
from tests.host._support import all_run_ids, events, footprint, payloads
from wop_langgraph.definitions import register_definition
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import ValidationError

FIXTURES = Path(__file__).resolve().parents[2] / "third_party" / "openwop" / "conformance" / "fixtures"
ORCHESTRATOR = "conformance-orchestrator-low-confidence"
ESCALATION = "conformance-multi-agent-confidence-escalation"


def load(host: WopHost, *workflow_ids: str) -> None:
    for workflow_id in workflow_ids:
        register_definition(host, json.loads((FIXTURES / f"{workflow_id}.json").read_text()))


def chain(host: WopHost, run_id: str) -> list[dict[str, Any]]:
    return payloads(events(host, run_id), "workflow-chain.event")


def types_of(host: WopHost, run_id: str) -> list[str]:
    return [e["type"] for e in events(host, run_id)]


@pytest.fixture
def orchestrated(host: WopHost) -> WopHost:
    load(host, "conformance-noop", ORCHESTRATOR, ESCALATION)
    return host


def test_a_low_confidence_supervisor_holds_its_decision_before_any_dispatch(orchestrated: WopHost) -> None:
    run_id = orchestrated.create_run(ORCHESTRATOR, {}, owner=ALICE)["runId"]
    assert orchestrated.snapshot(run_id)["status"] == "waiting-approval"
    (suspended,) = payloads(events(orchestrated, run_id), "node.suspended")
    assert (suspended["nodeId"], suspended["kind"], suspended["reason"]) == (
        "supervisor",
        "low-confidence",
        "low-confidence",
    )
    (record,) = orchestrated.pending_interrupts(run_id)
    assert (record.payload["data"]["threshold"], record.payload["data"]["observed"]) == (0.7, 0.5)
    seen = types_of(orchestrated, run_id)
    assert "orchestrator.decided" not in seen  # the decision is held (CP-1)
    assert not chain(orchestrated, run_id) and "dispatch" not in [
        e.get("nodeId") for e in events(orchestrated, run_id)
    ]
    assert all_run_ids(orchestrated) == [run_id]  # no worker's child run yet


def test_ratifying_the_supervisor_dispatches_the_worker_and_the_loop_ends(orchestrated: WopHost) -> None:
    run_id = orchestrated.create_run(ORCHESTRATOR, {}, owner=ALICE)["runId"]
    orchestrated.resolve(run_id, "supervisor", {"ratify": True}, ALICE)
    assert orchestrated.snapshot(run_id)["status"] == "completed"
    decided = payloads(events(orchestrated, run_id), "orchestrator.decided")
    assert [d["decision"]["kind"] for d in decided] == ["next-worker", "terminate"]
    assert decided[0]["agentId"] == "core.conformance.low-conf-supervisor"
    (child_id,) = [r for r in all_run_ids(orchestrated) if r != run_id]
    assert orchestrated.snapshot(child_id)["workflowId"] == "conformance-noop"
    assert orchestrated.snapshot(child_id)["status"] == "completed"
    assert [(c["phase"], c["workerId"]) for c in chain(orchestrated, run_id)] == [
        ("dispatch.began", "conformance-noop"),
        ("child.completed", "conformance-noop"),
    ]
    assert chain(orchestrated, run_id)[1]["childRunId"] == child_id
    seen = types_of(orchestrated, run_id)
    assert seen.index("interrupt.resolved") < seen.index("orchestrator.decided")


def test_replacing_the_held_decision_dispatches_the_replacement(orchestrated: WopHost) -> None:
    run_id = orchestrated.create_run(ORCHESTRATOR, {}, owner=ALICE)["runId"]
    before = footprint(orchestrated, run_id)
    with pytest.raises(ValidationError):
        orchestrated.resolve(run_id, "supervisor", {"decision": {"nextWorkerIds": ["x"]}}, ALICE)
    assert footprint(orchestrated, run_id) == before  # a decision without a kind changes nothing
    orchestrated.resolve(run_id, "supervisor", {"decision": {"kind": "terminate"}}, ALICE)
    assert orchestrated.snapshot(run_id)["status"] == "completed"
    assert not chain(orchestrated, run_id)
    assert all_run_ids(orchestrated) == [run_id]


def test_a_decision_below_the_floor_escalates_before_dispatch(orchestrated: WopHost) -> None:
    run_id = orchestrated.create_run(ESCALATION, {}, owner=ALICE)["runId"]
    assert orchestrated.snapshot(run_id)["status"] == "waiting-approval"
    docs = events(orchestrated, run_id)
    (escalated,) = payloads(docs, "workflow-chain.confidence-escalated")
    assert escalated == {
        "confidence": 0.3,
        "floor": 0.5,
        "escalationKind": "escalate",
        "workerId": "conformance-multi-agent-handoff-child",
        "parentRunId": run_id,
        "originalDecision": {
            "kind": "next-worker",
            "nextWorkerIds": ["conformance-multi-agent-handoff-child"],
            "confidence": 0.3,
        },
    }
    seen = [e["type"] for e in docs]
    assert seen.index("orchestrator.decided") < seen.index("workflow-chain.confidence-escalated")
    assert seen.index("workflow-chain.confidence-escalated") < seen.index("node.suspended")
    (record,) = orchestrated.pending_interrupts(run_id)
    assert (record.node_id, record.payload["kind"]) == ("dispatch", "low-confidence")
    assert (record.payload["data"]["threshold"], record.payload["data"]["observed"]) == (0.5, 0.3)
    assert not chain(orchestrated, run_id)
    assert all_run_ids(orchestrated) == [run_id]


def test_resolving_the_escalation_carries_out_the_answer(orchestrated: WopHost) -> None:
    # Ratified: the worker (not loaded on this host) is dispatched and fails the node, recorded.
    ratified = orchestrated.create_run(ESCALATION, {}, owner=ALICE)["runId"]
    orchestrated.resolve(ratified, "dispatch", {"ratify": True}, ALICE)
    assert orchestrated.snapshot(ratified)["error"]["code"] == "node_config_invalid"
    assert [c["phase"] for c in chain(orchestrated, ratified)] == ["dispatch.began", "dispatch.failed"]
    # Replaced by a worker the host has: it runs as a child, then the plan ends the loop.
    replaced = orchestrated.create_run(ESCALATION, {}, owner=ALICE)["runId"]
    worker = {"kind": "next-worker", "nextWorkerIds": ["conformance-noop"], "confidence": 0.9}
    orchestrated.resolve(replaced, "dispatch", {"decision": worker}, ALICE)
    assert orchestrated.snapshot(replaced)["status"] == "completed"
    assert [c["phase"] for c in chain(orchestrated, replaced)] == ["dispatch.began", "child.completed"]
    children = [r for r in all_run_ids(orchestrated) if r not in (ratified, replaced)]
    assert [orchestrated.snapshot(c)["workflowId"] for c in children] == ["conformance-noop"]
