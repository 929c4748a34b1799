"""``threshold_report`` on hand-built event logs, against hand-computed expectations."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

import pytest

from wop_langgraph.analysis import (
    AgentDecision,
    Agreement,
    agent_decisions,
    calibration,
    threshold_grid,
    threshold_report,
    wilson_interval,
)
from wop_langgraph.examples.escalation import load_tickets, run_dataset
from wop_langgraph.host import WopHost

# -- a tiny event-log builder --------------------------------------------------------------------


class Log:
    """Builds ``RunEventDoc`` dicts the way the host writes them (only the members analysis reads)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._next: dict[str, int] = {}
        self._interrupts = 0

    def add(self, run: str, type_: str, payload: dict[str, Any], node: str | None = None) -> dict[str, Any]:
        sequence = self._next.get(run, 0)
        self._next[run] = sequence + 1
        event: dict[str, Any] = {"runId": run, "type": type_, "payload": payload, "sequence": sequence}
        if node is not None:
            event["nodeId"] = node
        self.events.append(event)
        return event

    def started(self, run: str, inputs: Any) -> None:
        self.add(run, "run.started", {"workflowId": "w", "inputs": inputs})

    def decided(
        self, run: str, confidence: Any, decision: Any = "a", *, agent: str = "router", node: str = "route"
    ) -> None:
        payload: dict[str, Any] = {"agentId": agent, "decision": decision}
        if confidence is not None:
            payload["confidence"] = confidence
        self.add(run, "agent.decided", payload, node)

    def suspended(
        self, run: str, confidence: float, decision: Any = "a", *, agent: str = "router", node: str = "route"
    ) -> str:
        """``node.suspended`` + ``interrupt.requested``; returns the interrupt id."""
        self._interrupts += 1
        interrupt_id = f"acme/i{self._interrupts}"
        key = f"{run}:{node}:{self._interrupts}:0"
        self.add(
            run, "node.suspended", {"interruptId": interrupt_id, "kind": "low-confidence", "key": key}, node
        )
        data = {"agentId": agent, "threshold": 0.7, "observed": confidence, "decision": decision}
        self.add(run, "interrupt.requested", {"kind": "low-confidence", "data": data, "key": key}, node)
        return interrupt_id

    def resolved(
        self,
        run: str,
        value: Any,
        *,
        node: str = "route",
        interrupt_id: str | None = None,
        timeout: bool = False,
    ) -> None:
        payload: dict[str, Any] = {"nodeId": node, "kind": "low-confidence"}
        if interrupt_id is not None:
            payload["interruptId"] = interrupt_id
        if timeout:
            payload["reason"] = "timeout"
        else:
            payload["resumeValue"] = value
        self.add(run, "interrupt.resolved", payload, node)

    def escalated(self, run: str, confidence: float, answer: Any, decision: Any = "a") -> None:
        """A whole escalation as the host logs it: decided, suspended, requested, resolved."""
        self.decided(run, confidence, decision)
        interrupt_id = self.suspended(run, confidence, decision)
        self.resolved(run, answer, interrupt_id=interrupt_id)


def five_runs() -> tuple[Log, dict[str, str]]:
    """Five runs, one decision each (the agent always says "a").

    r1 0.9 not escalated, label a (right)      r4 0.4 escalated, replaced by b (wrong)
    r2 0.8 not escalated, label b (wrong)      r5 0.2 escalated, {"ratify": true} (right)
    r3 0.6 escalated, ratified with {} (right)
    """
    log = Log()
    log.decided("r1", 0.9)
    log.decided("r2", 0.8)
    log.escalated("r3", 0.6, {})
    log.escalated("r4", 0.4, {"decision": "b"})
    log.escalated("r5", 0.2, {"ratify": True})
    return log, {"r1": "a", "r2": "b"}


# -- the curve -----------------------------------------------------------------------------------


def test_curve_matches_hand_computation() -> None:
    log, labels = five_runs()
    report = threshold_report(log.events, 0.35, [0.0, 0.5, 0.6, 0.85, 1.0], labels=labels)
    got = [(p.threshold, p.escalated, p.auto_accepted, p.auto_wrong) for p in report.points]
    assert got == [(0.0, 0, 5, 2), (0.5, 2, 3, 1), (0.6, 2, 3, 1), (0.85, 4, 1, 0), (1.0, 5, 0, 0)]
    assert [p.escalation_rate for p in report.points] == [0.0, 0.4, 0.4, 0.8, 1.0]
    assert [p.auto_accept_error for p in report.points] == [0.4, 1 / 3, 1 / 3, 0.0, 0.0]
    assert all(p.decisions == 5 and p.auto_unknown == 0 for p in report.points)
    # 0.5 and 0.6 both escalate 40% with error 1/3 <= 0.35: the lower threshold wins the tie.
    assert report.recommended_threshold == 0.5
    assert report.recommended == report.point(0.5)
    assert report.unlabelled == 0


@pytest.mark.parametrize(
    ("target", "expected"), [(1.0, 0.0), (0.4, 0.0), (0.35, 0.5), (0.3, 0.85), (0.0, 0.85)]
)
def test_recommendation_is_the_lowest_escalation_that_meets_the_target(
    target: float, expected: float
) -> None:
    log, labels = five_runs()
    report = threshold_report(log.events, target, [0.0, 0.5, 0.6, 0.85, 1.0], labels=labels)
    assert report.recommended_threshold == expected


def test_reviews_judge_escalated_decisions() -> None:
    log, labels = five_runs()
    decisions = {d.run_id: d for d in threshold_report(log.events, 0.1, labels=labels).decisions}
    assert [(r, d.correct, d.judged_by) for r, d in decisions.items()] == [
        ("r1", True, "label"),
        ("r2", False, "label"),
        ("r3", True, "human"),
        ("r4", False, "human"),
        ("r5", True, "human"),
    ]
    assert decisions["r4"].final_decision == "b"
    assert decisions["r5"].final_decision == "a"
    assert decisions["r3"].resume_value == {}
    assert [d.escalated for d in decisions.values()] == [False, False, True, True, True]


def test_ties_at_the_threshold_continue() -> None:
    log = Log()
    log.decided("r1", 0.35, "a")
    report = threshold_report(log.events, 0.0, labels={"r1": "b"})
    # The default grid holds exactly 0.35 (computed as 7/20, not by adding 0.05 seven times).
    assert report.point(0.35).escalated == 0
    assert report.point(0.35).auto_accept_error == 1.0
    assert report.point(0.4).escalated == 1
    assert report.recommended_threshold == 0.4


def test_default_grid_is_0_to_1_in_steps_of_0_05() -> None:
    log, labels = five_runs()
    report = threshold_report(log.events, 0.05, labels=labels)
    assert [p.threshold for p in report.points] == [k / 20 for k in range(21)]
    assert threshold_grid() == tuple(k / 20 for k in range(21))
    assert threshold_grid(0.25) == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert threshold_grid(1) == (0.0, 1.0)


def test_thresholds_are_sorted_and_deduplicated() -> None:
    log, labels = five_runs()
    report = threshold_report(log.events, 0.05, [1.0, 0.5, 0.5, 0], labels=labels)
    assert [p.threshold for p in report.points] == [0.0, 0.5, 1.0]


# -- edge cases ----------------------------------------------------------------------------------


def test_no_decisions() -> None:
    log = Log()
    log.started("r1", {"x": 1})
    log.add("r1", "run.completed", {"outputs": {}})
    for events in ([], log.events):
        report = threshold_report(events, 0.05, [0.0, 0.5, 1.0])
        assert report.decisions == ()
        assert [p.as_row() for p in report.points] == [
            {
                "threshold": t,
                "decisions": 0,
                "escalated": 0,
                "auto_accepted": 0,
                "auto_wrong": 0,
                "auto_unknown": 0,
                "escalation_rate": 0.0,
                "auto_accept_error": 0.0,
            }
            for t in (0.0, 0.5, 1.0)
        ]
        assert report.recommended is None
        assert report.recommended_threshold is None


def test_all_escalated() -> None:
    log = Log()
    log.escalated("r1", 0.1, {"decision": "b"})
    log.escalated("r2", 0.2, {"decision": "b"})
    report = threshold_report(log.events, 0.05)
    assert report.point(0.1).auto_accept_error == 1.0  # 0.1 ties: both auto-accepted, both wrong
    assert (report.point(0.15).escalated, report.point(0.15).auto_accept_error) == (1, 1.0)
    everything = report.point(0.25)
    assert everything.escalation_rate == 1.0
    assert (everything.auto_accepted, everything.auto_accept_error) == (0, 0.0)
    assert report.recommended_threshold == 0.25
    assert report.point(1.0).escalation_rate == 1.0


@pytest.mark.parametrize("confidence", [None, math.nan, math.inf, -math.inf, "high", True])
def test_absent_or_non_finite_confidence_is_never_escalated(confidence: Any) -> None:
    log = Log()
    log.decided("r1", confidence, "a")
    log.decided("r2", 0.5, "a")
    report = threshold_report(log.events, 0.1, [0.0, 0.6, 1.0], labels={"r1": "b", "r2": "a"})
    assert report.decisions[0].confidence is None
    assert not report.decisions[0].escalated_at(1.0)
    top = report.point(1.0)
    assert (top.escalated, top.auto_accepted, top.auto_wrong, top.auto_accept_error) == (1, 1, 1, 1.0)
    assert [p.auto_accept_error for p in report.points] == [0.5, 1.0, 1.0]
    # Even escalating everything escalatable leaves the unscored wrong decision: nothing qualifies.
    assert report.recommended is None


def test_unknown_correctness_is_counted_not_guessed() -> None:
    log = Log()
    log.decided("r1", 0.9, "a")  # no label: unknown
    log.decided("r2", 0.8, "a")  # labelled wrong
    log.decided("r3", 0.3, "a")  # no label: unknown
    report = threshold_report(log.events, 0.5, [0.0, 0.85, 0.95], labels={"r2": "b"})
    assert report.unlabelled == 2
    low, mid, high = report.points
    assert (low.auto_accepted, low.auto_unknown, low.auto_wrong, low.auto_accept_error) == (3, 2, 1, 1.0)
    assert (mid.auto_accepted, mid.auto_unknown, mid.auto_accept_error) == (1, 1, None)
    assert not mid.meets(1.0)  # an unknown error never qualifies
    assert (high.auto_accepted, high.auto_accept_error) == (0, 0.0)
    assert report.recommended_threshold == 0.95


def test_without_ground_truth_only_reviews_judge() -> None:
    log, _ = five_runs()
    report = threshold_report(log.events, 0.0, [0.0, 0.7])
    assert [d.correct for d in report.decisions] == [None, None, True, False, True]
    assert report.point(0.7).auto_accept_error is None  # r1 and r2 are auto-accepted, unknown
    assert report.point(0.0).auto_accept_error == 1 / 3  # of r3, r4, r5: r4 wrong
    assert report.recommended is None


def test_a_review_outranks_a_label() -> None:
    log = Log()
    log.escalated("r1", 0.3, {"decision": "b"})
    decision = threshold_report(log.events, 0.1, labels={"r1": "a"}).decisions[0]
    assert (decision.correct, decision.judged_by) == (False, "human")


def test_a_replacement_equal_to_the_decision_is_a_ratification() -> None:
    log = Log()
    log.escalated("r1", 0.3, {"decision": "a", "feedback": "fine"})
    (decision,) = agent_decisions(log.events)
    assert (decision.reviewed, decision.correct, decision.final_decision) == (True, True, "a")


def test_structured_decisions_compare_by_value() -> None:
    log = Log()
    log.escalated(
        "r1", 0.3, {"decision": {"queue": "b", "priority": 1}}, decision={"queue": "a", "priority": 1}
    )
    (decision,) = agent_decisions(log.events)
    assert decision.correct is False
    assert decision.final_decision == {"queue": "b", "priority": 1}


def test_a_timed_out_or_pending_escalation_falls_back_to_the_label() -> None:
    log = Log()
    log.decided("r1", 0.3)
    interrupt_id = log.suspended("r1", 0.3)
    log.resolved("r1", None, interrupt_id=interrupt_id, timeout=True)
    log.decided("r2", 0.3)
    log.suspended("r2", 0.3)  # still pending
    report = threshold_report(log.events, 0.1, labels={"r1": "b", "r2": "a"})
    first, second = report.decisions
    assert (first.escalated, first.reviewed) == (second.escalated, second.reviewed) == (True, False)
    assert (first.correct, first.judged_by, second.correct, second.judged_by) == (
        False,
        "label",
        True,
        "label",
    )


def test_truth_callable_sees_inputs_and_handles_many_decisions_per_run() -> None:
    log = Log()
    log.started("r1", {"items": ["x", "y"]})
    log.decided("r1", 0.9, "a", agent="first")
    log.decided("r1", 0.9, "b", agent="second")
    truth_table = {"first": "a", "second": "a"}
    seen: list[AgentDecision] = []

    def truth(decision: AgentDecision) -> Any:
        seen.append(decision)
        return truth_table[decision.agent_id]

    report = threshold_report(log.events, 0.5, [0.0], truth=truth)
    assert [d.correct for d in report.decisions] == [True, False]
    assert all(d.inputs == {"items": ["x", "y"]} for d in seen)
    assert report.point(0.0).auto_accept_error == 0.5


def test_agent_filter() -> None:
    log = Log()
    log.decided("r1", 0.9, "a", agent="first")
    log.decided("r1", 0.2, "a", agent="second")
    report = threshold_report(log.events, 0.5, [0.5], truth=lambda d: "a", agent_id="second")
    assert [d.agent_id for d in report.decisions] == ["second"]
    assert report.point(0.5).escalated == 1


def test_order_of_events_does_not_matter() -> None:
    log, labels = five_runs()
    shuffled = list(log.events)
    random.Random(3).shuffle(shuffled)
    mixed = threshold_report(shuffled, 0.35, labels=labels)
    ordered = threshold_report(log.events, 0.35, labels=labels)
    assert (mixed.points, mixed.recommended) == (ordered.points, ordered.recommended)
    assert sorted(mixed.decisions, key=lambda d: d.run_id) == list(ordered.decisions)


def test_interleaved_escalations_in_one_node_are_paired_by_interrupt() -> None:
    """Two parallel tasks of one node (``Send``): their events interleave; the ids pair them."""
    log = Log()
    log.decided("r1", 0.3, "a")
    log.decided("r1", 0.4, "c")
    first = log.suspended("r1", 0.3, "a")
    second = log.suspended("r1", 0.4, "c")
    log.resolved("r1", {"decision": "b"}, interrupt_id=second)
    log.resolved("r1", {}, interrupt_id=first)
    a, c = agent_decisions(log.events)
    assert (a.decision, a.correct, c.decision, c.correct, c.final_decision) == ("a", True, "c", False, "b")


def test_a_filtered_log_pairs_a_resolution_with_the_latest_open_decision_of_its_node() -> None:
    log = Log()
    log.decided("r1", 0.9, "a", node="other")
    log.decided("r1", 0.2, "a")
    log.resolved("r1", {"decision": "b"})  # no node.suspended / interrupt.requested in this log
    log.decided("r1", 0.1, "x")
    log.resolved("r1", {})
    other, replaced, ratified = agent_decisions(log.events)
    assert (other.reviewed, replaced.correct, ratified.correct) == (False, False, True)


def test_events_of_other_kinds_are_ignored() -> None:
    log = Log()
    log.decided("r1", 0.2)
    log.add("r1", "interrupt.resolved", {"kind": "approval", "resumeValue": {"action": "reject"}}, "route")
    log.add("r1", "agent.decided", "not an object", "route")  # type: ignore[arg-type]
    (decision,) = agent_decisions(log.events)
    assert decision.reviewed is False


# -- refusals ------------------------------------------------------------------------------------


def test_labels_and_truth_together_are_refused() -> None:
    with pytest.raises(TypeError):
        threshold_report([], 0.1, labels={}, truth=lambda d: None)


@pytest.mark.parametrize("target", [-0.01, 1.01, math.nan, "0.1", True])
def test_target_error_outside_0_1_is_refused(target: Any) -> None:
    with pytest.raises(ValueError, match="target_error"):
        threshold_report([], target)


@pytest.mark.parametrize("threshold", [-0.1, 1.5, math.nan])
def test_threshold_outside_0_1_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        threshold_report([], 0.1, [0.5, threshold])


@pytest.mark.parametrize("step", [0, -0.1, 0.3, 2, math.nan])
def test_grid_step_must_divide_1(step: float) -> None:
    with pytest.raises(ValueError):
        threshold_grid(step)


def test_point_lookup_of_a_missing_threshold() -> None:
    with pytest.raises(KeyError):
        threshold_report([], 0.1, [0.5]).point(0.25)


def test_any_real_number_is_a_threshold() -> None:
    log, labels = five_runs()
    report = threshold_report(log.events, Fraction(7, 20), [Fraction(1, 2)], labels=labels)
    assert report.recommended_threshold == 0.5
    assert isinstance(report.recommended_threshold, float)


# -- calibration from a real log: escalations plus a random audit sample -------------------------


def test_wilson_interval_holds_the_rate_it_is_shown_beside() -> None:
    """Exactly 1 when every reviewed decision agreed, 0 when none did (rounding made 10 of 10
    end at 0.9999999999999999, below its rate), and the rate inside at every count."""
    for trials in range(1, 400):
        assert wilson_interval(trials, trials)[1] == 1.0
        assert wilson_interval(0, trials)[0] == 0.0
        for successes in range(trials + 1):
            low, high = wilson_interval(successes, trials)
            assert 0.0 <= low <= successes / trials <= high <= 1.0


def test_wilson_interval_matches_published_values() -> None:
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    with pytest.raises(ValueError):
        wilson_interval(1, 0)


def test_calibration_from_a_real_log_splits_escalations_from_the_audit_sample(db_url: str) -> None:
    tickets = load_tickets()[:40]
    host = WopHost.from_url(db_url)
    try:
        result = run_dataset(host, tickets, 0.5, audit_rate=0.5)
        log = [event for o in result.outcomes for event in host.events(o.run_id)]
    finally:
        host.saver.engine.dispose()
    decisions = agent_decisions(log)
    by_run = {d.run_id: d for d in decisions}
    low = [o for o in result.outcomes if o.ticket.confidence < 0.5]
    audited = [o for o in result.outcomes if o.ticket.confidence >= 0.5 and o.escalated]
    unseen = [o for o in result.outcomes if o.ticket.confidence >= 0.5 and not o.escalated]
    assert audited and unseen  # a real sample: some confident tickets reviewed, some not
    assert all(by_run[o.run_id].audit for o in audited)
    assert not any(by_run[o.run_id].audit or by_run[o.run_id].escalated for o in unseen)
    assert all(by_run[o.run_id].escalated and not by_run[o.run_id].audit for o in low)

    cal = calibration(decisions)
    assert cal.decisions == 40 and cal.confident == len(audited) + len(unseen)
    assert cal.escalated.reviewed == len(low)
    assert cal.escalated.agreed == sum(o.ticket.agent_correct for o in low)
    assert cal.audited.reviewed == len(audited)
    assert cal.audited.agreed == sum(o.ticket.agent_correct for o in audited)
    for agreement in (cal.escalated, cal.audited):
        assert agreement.rate == agreement.agreed / agreement.reviewed
        assert (agreement.low, agreement.high) == wilson_interval(agreement.agreed, agreement.reviewed)
        assert agreement.low <= agreement.rate <= agreement.high
    assert [r["population"] for r in cal.rows()] == ["escalated", "audit sample"]
    # The audited decisions are judged by their review, so the threshold report needs no label for them.
    report = threshold_report(log, 0.05)
    assert report.point(0.5).auto_unknown == len(unseen)


def test_calibration_with_no_reviews_has_no_rate() -> None:
    log, _ = five_runs()
    cal = calibration([d for d in agent_decisions(log.events) if not d.reviewed])
    assert cal.escalated == Agreement(0, 0, None, None, None) == cal.audited
