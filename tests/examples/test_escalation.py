"""The ticket-routing escalation example: its dataset, its graph and the dataset runner."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from wop_langgraph.analysis import AgentDecision, threshold_grid, threshold_report
from wop_langgraph.examples.escalation import (
    AGENT_ID,
    DATA_FILE,
    NODE_ID,
    QUEUES,
    RecordedRouter,
    Ticket,
    generate_tickets,
    load_tickets,
    run_dataset,
    simulated_review,
    threshold_configurable,
    tickets_csv,
)
from wop_langgraph.host import WopHost

TICKETS = load_tickets()
#: A small slice with right and wrong predictions on both sides of 0.7, and a tie at exactly 0.7.
SAMPLE = [*TICKETS[:14], next(t for t in TICKETS if t.confidence == 0.7)]


@pytest.fixture
def host(sqlite_url: str) -> Iterator[WopHost]:
    host = WopHost.from_url(sqlite_url)
    try:
        yield host
    finally:
        host.saver.engine.dispose()


def _low_confidence(events: list[dict[str, Any]] | tuple[dict[str, Any], ...], event_type: str) -> list[Any]:
    return [e for e in events if e["type"] == event_type and e["payload"].get("kind") == "low-confidence"]


# -- the dataset ---------------------------------------------------------------------------------


def test_the_committed_dataset_is_the_seeded_generator_output() -> None:
    assert DATA_FILE.read_text(encoding="utf-8") == tickets_csv(generate_tickets())
    assert load_tickets() == generate_tickets()


def test_generation_is_deterministic_per_seed() -> None:
    assert generate_tickets(20, seed=1) == generate_tickets(20, seed=1)
    assert generate_tickets(20, seed=1) != generate_tickets(20, seed=2)


def test_dataset_shape() -> None:
    assert len(TICKETS) == 300
    assert len({t.ticket_id for t in TICKETS}) == 300
    assert {t.label for t in TICKETS} == set(QUEUES) >= {t.predicted for t in TICKETS}
    assert all(0.2 <= t.confidence <= 0.99 for t in TICKETS)  # below 1: at 1.0 everything escalates
    assert all(t.text for t in TICKETS)


def test_confidence_is_correlated_with_correctness() -> None:
    def accuracy(tickets: list[Ticket]) -> float:
        return sum(t.agent_correct for t in tickets) / len(tickets)

    low = [t for t in TICKETS if t.confidence < 0.5]
    high = [t for t in TICKETS if t.confidence >= 0.8]
    assert len(low) >= 15 and len(high) >= 100
    assert accuracy(high) > 0.95 > 0.6 > accuracy(low)


def test_the_recorded_router_never_sees_the_label() -> None:
    router = RecordedRouter(SAMPLE)
    first = SAMPLE[0]
    assert router(first.ticket_id, first.text) == (first.predicted, first.confidence)
    with pytest.raises(KeyError):
        router("T-9999", "unknown ticket")


def test_sample_covers_the_interesting_cases() -> None:
    assert any(t.confidence == 0.7 for t in SAMPLE)
    below = {t.agent_correct for t in SAMPLE if t.confidence < 0.7}
    above = {t.agent_correct for t in SAMPLE if t.confidence >= 0.7}
    assert below == above == {True, False}


# -- helpers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("threshold", "percent"), [(0.0, 0), (0.35, 35), (0.7, 70), (1.0, 100)])
def test_threshold_configurable(threshold: float, percent: int) -> None:
    assert threshold_configurable(threshold) == {"version": 1, "run": {"escalationThreshold": percent}}


@pytest.mark.parametrize("threshold", [-0.1, 1.01, 0.355])
def test_threshold_configurable_refuses_what_a_percentage_cannot_say(threshold: float) -> None:
    with pytest.raises(ValueError):
        threshold_configurable(threshold)


def test_simulated_review_ratifies_right_and_replaces_wrong() -> None:
    ticket = Ticket("T-1", "text", "billing", "technical", 0.4)
    assert simulated_review(ticket, "billing") == {}
    assert simulated_review(ticket, "technical") == {"decision": "billing"}


# -- the runner ----------------------------------------------------------------------------------


def test_at_threshold_0_nothing_escalates(host: WopHost) -> None:
    result = run_dataset(host, SAMPLE, 0.0)
    assert result.escalation_rate == 0.0
    assert not any(o.escalated for o in result.outcomes)
    assert _low_confidence(result.events, "interrupt.requested") == []
    wrong = sum(not t.agent_correct for t in SAMPLE)
    assert result.auto_accept_error == result.final_error == wrong / len(SAMPLE)
    assert [o.queue for o in result.outcomes] == [t.predicted for t in SAMPLE]


def test_at_threshold_1_everything_escalates_and_the_person_fixes_every_error(host: WopHost) -> None:
    result = run_dataset(host, SAMPLE, 1.0)
    assert result.escalation_rate == 1.0
    assert result.final_error == 0.0
    assert result.auto_accept_error == 0.0  # nothing was auto-accepted
    assert all(o.escalated and o.correct for o in result.outcomes)
    resolved = _low_confidence(result.events, "interrupt.resolved")
    assert len(resolved) == len(SAMPLE)
    for outcome, event in zip(result.outcomes, resolved, strict=True):
        assert event["runId"] == outcome.run_id
        expected = {} if outcome.ticket.agent_correct else {"decision": outcome.ticket.label}
        assert event["payload"]["resumeValue"] == expected


def test_at_threshold_0_7_exactly_the_lower_confidences_escalate(host: WopHost) -> None:
    result = run_dataset(host, SAMPLE, 0.7)
    for outcome in result.outcomes:
        assert outcome.escalated == (outcome.ticket.confidence < 0.7), outcome.ticket  # a tie continues
        if outcome.escalated:
            assert outcome.correct
        else:
            assert outcome.queue == outcome.ticket.predicted
    decided = [e for e in result.events if e["type"] == "agent.decided"]
    assert [e["payload"] for e in decided] == [
        {"agentId": AGENT_ID, "decision": t.predicted, "confidence": t.confidence} for t in SAMPLE
    ]
    assert {e["nodeId"] for e in decided} == {NODE_ID}
    escalated = [o for o in result.outcomes if o.escalated]
    assert len(_low_confidence(result.events, "interrupt.resolved")) == len(escalated)
    auto = [o for o in result.outcomes if not o.escalated]
    assert result.auto_accept_error == sum(not o.correct for o in auto) / len(auto) > 0
    assert all(s["status"] == "completed" for s in (host.snapshot(o.run_id) for o in result.outcomes))


def test_the_report_from_the_log_replays_every_threshold(host: WopHost) -> None:
    """Runs at one threshold; the report over their log must match the dataset at every threshold."""
    result = run_dataset(host, SAMPLE, 0.7)
    report = threshold_report(result.events, 0.1, labels=result.labels)
    assert report.unlabelled == 0
    assert [d.judged_by for d in report.decisions] == [
        "human" if t.confidence < 0.7 else "label" for t in SAMPLE
    ]
    for point in report.points:
        escalated = [t for t in SAMPLE if t.confidence < point.threshold]
        auto = [t for t in SAMPLE if t.confidence >= point.threshold]
        assert point.escalation_rate == len(escalated) / len(SAMPLE)
        expected = sum(not t.agent_correct for t in auto) / len(auto) if auto else 0.0
        assert point.auto_accept_error == expected
    measured = report.point(0.7)
    assert (measured.escalation_rate, measured.auto_accept_error) == (
        result.escalation_rate,
        result.auto_accept_error,
    )
    assert [p.threshold for p in report.points] == list(threshold_grid())


def test_truth_from_the_run_inputs_gives_the_same_report(host: WopHost) -> None:
    result = run_dataset(host, SAMPLE, 0.5)
    by_id = {t.ticket_id: t.label for t in SAMPLE}

    def truth(decision: AgentDecision) -> str:
        return by_id[decision.inputs["ticket_id"]]

    by_inputs = threshold_report(result.events, 0.1, truth=truth)
    by_run = threshold_report(result.events, 0.1, labels=result.labels)
    assert by_inputs.points == by_run.points
    assert by_inputs.recommended == by_run.recommended


def test_progress_wraps_the_iteration(host: WopHost) -> None:
    seen: list[str] = []

    def progress(items: Any) -> Iterator[Ticket]:
        for item in items:
            seen.append(item.ticket_id)
            yield item

    run_dataset(host, SAMPLE[:2], 0.0, progress=progress)
    assert seen == [t.ticket_id for t in SAMPLE[:2]]


def test_runs_at_several_thresholds_share_one_host(host: WopHost) -> None:
    first = run_dataset(host, SAMPLE[:3], 0.0)
    second = run_dataset(host, SAMPLE[3:6], 1.0)  # other tickets: the graph is re-registered
    assert first.escalation_rate == 0.0 and second.escalation_rate == 1.0
    assert not {o.run_id for o in first.outcomes} & {o.run_id for o in second.outcomes}
