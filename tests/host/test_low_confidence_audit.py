"""``audit_rate``: a random share of confident decisions is also sent to a person, marked in the log."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.pregel import Pregel

from tests.host._graphs import ALICE, count, single_node
from tests.host._support import events, payloads, start
from wop_langgraph.analysis import agent_decisions
from wop_langgraph.host import WopHost
from wop_langgraph.nodes import escalate_on_low_confidence
from wop_langgraph.nodes.escalation import _audited


def audit_graph(rate: float) -> Pregel:
    def body(state: dict[str, Any]) -> Any:
        return escalate_on_low_confidence(
            "triage-agent", state["decision"], state["confidence"], 0.7, audit_rate=rate
        )

    return single_node("agent", body)


def test_rate_1_sends_every_confident_decision_to_review_marked_as_audit(host: WopHost) -> None:
    run_id, snapshot = start(host, audit_graph(1.0), {"decision": "route-a", "confidence": 0.9})
    assert snapshot["status"] != "completed"
    (requested,) = payloads(events(host, run_id), "interrupt.requested")
    data = requested["data"]
    # The mark: an escalation always observes below its threshold; an audit sample at or above.
    assert (data["observed"], data["threshold"]) == (0.9, 0.7)
    (decision,) = agent_decisions(host.events(run_id))
    assert decision.escalated and decision.audit


def test_rate_0_keeps_confident_decisions_unseen_and_escalations_unmarked(host: WopHost) -> None:
    run_id, snapshot = start(host, audit_graph(0.0), {"decision": "route-a", "confidence": 0.9})
    assert snapshot["status"] == "completed"
    assert payloads(events(host, run_id), "interrupt.requested") == []
    low_id, _ = start(host, audit_graph(0.0), {"decision": "route-a", "confidence": 0.2})
    (decision,) = agent_decisions(host.events(low_id))
    assert decision.escalated and not decision.audit


def test_resuming_an_audit_sample_does_not_draw_again(host: WopHost) -> None:
    # At 0.5, about half the runs are audited; a fresh draw on resume would re-suspend half of them.
    audited = []
    for i in range(12):
        run_id, snapshot = start(host, audit_graph(0.5), {"decision": f"d{i}", "confidence": 0.9})
        if snapshot["status"] != "completed":
            audited.append(run_id)
    assert 0 < len(audited) < 12
    for run_id in audited:
        (pending,) = host.pending_interrupts(run_id)
        host.resolve(run_id, pending.node_id, {"decision": "fixed"}, ALICE)
        docs = events(host, run_id)
        assert docs[-1]["type"] == "run.completed"
        assert docs[-1]["payload"]["outputs"]["result"] == "fixed"
        assert len(payloads(docs, "interrupt.requested")) == 1
        (decision,) = agent_decisions(docs)
        assert decision.audit and decision.reviewed and decision.correct is False
    assert count("agent:run") == 12 + len(audited)  # each audited run re-ran its node once


def test_a_rate_of_0_3_samples_about_30_percent() -> None:
    # The draw is a hash of the run id, the task namespace and the decision: uniform over runs.
    drawn = sum(_audited(0.3, f"run-{i}", "agent:task", "triage-agent", "a", 0.9) for i in range(4000))
    assert abs(drawn / 4000 - 0.3) < 0.03  # ~4 standard errors
    assert _audited(0.3, "run-1", "t", "a", "b", 0.9) == _audited(0.3, "run-1", "t", "a", "b", 0.9)


def test_a_rate_of_0_3_over_real_runs(host: WopHost) -> None:
    statuses = [
        start(host, audit_graph(0.3), {"decision": "a", "confidence": 0.95})[1]["status"] for _ in range(60)
    ]
    share = sum(s != "completed" for s in statuses) / 60
    assert 0.1 <= share <= 0.5  # 60 runs: 0.3 +- ~3.4 standard errors


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_an_audit_rate_outside_0_1_is_refused(host: WopHost, rate: float) -> None:
    _, snapshot = start(host, audit_graph(rate), {"decision": "a", "confidence": 0.9})
    assert snapshot["status"] == "failed"
