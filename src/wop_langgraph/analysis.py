"""Choose an escalation threshold from what happened: agent decisions and human resolutions.

Every call of :func:`~wop_langgraph.nodes.escalate_on_low_confidence` appends
``agent.decided {agentId, decision, confidence}`` to the run's event log, whatever the threshold.
A decision that was escalated also has a ``low-confidence`` interrupt, and its
``interrupt.resolved`` says what the person did: ``{}`` (or ``{"ratify": true}``) keeps the agent's
decision, ``{"decision": X}`` replaces it. So one event log, recorded at any threshold, is enough
to replay every other threshold:

* a decision is *escalated at threshold t* when its confidence is strictly below ``t`` (a
  confidence equal to ``t`` continues; an absent or non-finite confidence is never escalated:
  the same rule as the node);
* a decision is *right* when the person kept it, *wrong* when the person replaced it with
  another value; a decision nobody reviewed is judged by a ground-truth label the caller
  supplies (``labels`` or ``truth``);
* at each threshold, the *escalation rate* is the share of decisions escalated, and the
  *auto-accept error* is the share of wrong decisions among those not escalated.

:func:`threshold_report` returns that curve and recommends the threshold with the lowest
escalation rate whose auto-accept error is at most the target. Everything here is pure: it reads
the event dicts it is given and nothing else.
"""

from __future__ import annotations

import math
import numbers
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "AgentDecision",
    "Agreement",
    "Calibration",
    "ThresholdPoint",
    "ThresholdReport",
    "agent_decisions",
    "calibration",
    "threshold_grid",
    "threshold_report",
    "wilson_interval",
]

JudgedBy = Literal["human", "label"]


@dataclass(frozen=True)
class AgentDecision:
    """One ``agent.decided`` event, with what became of it.

    Attributes:
        run_id: the run whose log holds the event.
        node_id: the node that decided (``None`` if the event names none).
        agent_id: the event's ``agentId``.
        decision: the agent's decision as recorded.
        confidence: the recorded confidence; ``None`` when absent, not a number or not finite
            (such a decision is never escalated).
        sequence: the event's ``sequence`` in its run.
        inputs: the run's inputs from its ``run.started`` event, when the log holds it; handy
            for a ``truth`` callable that looks the item up in a dataset.
        escalated: a ``low-confidence`` interrupt was requested for this decision.
        audit: that interrupt was an audit sample, not an escalation: its data's ``observed``
            is at or above its ``threshold`` (see ``audit_rate`` of
            :func:`~wop_langgraph.nodes.escalate_on_low_confidence`).
        reviewed: a person resolved that interrupt (a timeout is not a review).
        resume_value: the person's ``resumeValue`` when reviewed.
        final_decision: the decision the node continued with when reviewed (the replacement,
            or the agent's own decision when ratified); ``None`` otherwise.
        correct: whether the agent's decision was right; ``None`` while unknown.
        judged_by: where ``correct`` came from: ``"human"`` (the review) or ``"label"``.
    """

    run_id: str
    node_id: str | None
    agent_id: str
    decision: Any
    confidence: float | None
    sequence: int
    inputs: Any = None
    escalated: bool = False
    audit: bool = False
    reviewed: bool = False
    resume_value: Any = None
    final_decision: Any = None
    correct: bool | None = None
    judged_by: JudgedBy | None = None

    def escalated_at(self, threshold: float) -> bool:
        """Whether this decision is escalated at ``threshold`` (strictly below it; ties continue)."""
        return self.confidence is not None and self.confidence < threshold


@dataclass(frozen=True)
class ThresholdPoint:
    """The outcome of one threshold over a set of decisions.

    Attributes:
        threshold: the threshold, 0..1.
        decisions: how many decisions were considered.
        escalated: decisions with a confidence strictly below the threshold.
        auto_accepted: the others (including those without a confidence).
        auto_wrong: auto-accepted decisions known to be wrong.
        auto_unknown: auto-accepted decisions whose correctness is unknown (no review, no label);
            they are left out of :attr:`auto_accept_error`.
        escalation_rate: ``escalated / decisions`` (0.0 when there are no decisions).
        auto_accept_error: ``auto_wrong / (auto_accepted - auto_unknown)``; 0.0 when nothing is
            auto-accepted (no decision went through unseen, so none went through wrong);
            ``None`` when auto-accepted decisions exist but none has a known correctness.
    """

    threshold: float
    decisions: int
    escalated: int
    auto_accepted: int
    auto_wrong: int
    auto_unknown: int
    escalation_rate: float
    auto_accept_error: float | None

    def meets(self, target_error: float) -> bool:
        """Whether the auto-accept error is known and at most ``target_error``."""
        return self.auto_accept_error is not None and self.auto_accept_error <= target_error

    def as_row(self) -> dict[str, Any]:
        """The point as a flat dict (for a table)."""
        return {
            "threshold": self.threshold,
            "decisions": self.decisions,
            "escalated": self.escalated,
            "auto_accepted": self.auto_accepted,
            "auto_wrong": self.auto_wrong,
            "auto_unknown": self.auto_unknown,
            "escalation_rate": self.escalation_rate,
            "auto_accept_error": self.auto_accept_error,
        }


@dataclass(frozen=True)
class ThresholdReport:
    """The escalation/error curve of a set of decisions and the recommended threshold.

    Attributes:
        target_error: the highest acceptable auto-accept error, 0..1.
        points: one :class:`ThresholdPoint` per threshold, in increasing threshold order.
        recommended: the point with the lowest escalation rate whose auto-accept error is at most
            ``target_error`` (the lowest such threshold on ties); ``None`` when no threshold
            qualifies or there are no decisions.
        decisions: every decision considered, judged, in log order (run by run).
    """

    target_error: float
    points: tuple[ThresholdPoint, ...]
    recommended: ThresholdPoint | None
    decisions: tuple[AgentDecision, ...]

    @property
    def recommended_threshold(self) -> float | None:
        """The recommended threshold, or ``None``."""
        return None if self.recommended is None else self.recommended.threshold

    @property
    def unlabelled(self) -> int:
        """How many decisions have no known correctness (neither reviewed nor labelled)."""
        return sum(1 for d in self.decisions if d.correct is None)

    def point(self, threshold: float) -> ThresholdPoint:
        """The point of ``threshold`` (compared exactly).

        Raises:
            KeyError: the report has no such threshold.
        """
        for candidate in self.points:
            if candidate.threshold == threshold:
                return candidate
        raise KeyError(threshold)

    def rows(self) -> list[dict[str, Any]]:
        """Every point as a flat dict, for a table."""
        return [p.as_row() for p in self.points]


@dataclass(frozen=True)
class Agreement:
    """How often reviewers kept the agent's decision, with a Wilson 95% interval.

    Attributes:
        reviewed: decisions a person reviewed in this population.
        agreed: of those, how many the person kept (ratified, or replaced with the same value).
        rate: ``agreed / reviewed``; ``None`` when nothing was reviewed.
        low: lower end of the Wilson score 95% interval (``None`` when nothing was reviewed).
        high: upper end of that interval.
    """

    reviewed: int
    agreed: int
    rate: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, reviewed: int, agreed: int) -> Agreement:
        """The agreement of ``agreed`` out of ``reviewed``, with its interval."""
        if reviewed == 0:
            return cls(0, 0, None, None, None)
        low, high = wilson_interval(agreed, reviewed)
        return cls(reviewed, agreed, agreed / reviewed, low, high)


@dataclass(frozen=True)
class Calibration:
    """What reviewers said about the agent, in two populations the log tells apart.

    Attributes:
        escalated: agreement on reviewed escalations (confidence below the run's threshold).
        audited: agreement on reviewed audit samples (confident decisions also sent to a person).
        decisions: every decision considered.
        confident: decisions that were not escalated (audit samples included).
    """

    escalated: Agreement
    audited: Agreement
    decisions: int
    confident: int

    def rows(self) -> list[dict[str, Any]]:
        """The two populations as flat dicts, for a table."""
        return [
            {"population": name, **vars(agreement)}
            for name, agreement in (("escalated", self.escalated), ("audit sample", self.audited))
        ]


def wilson_interval(successes: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default).

    Chosen over the normal approximation because it stays inside 0..1 and is not degenerate
    when every reviewed decision agreed (or none did), which is common with small samples.

    Raises:
        ValueError: ``trials`` is not positive or ``successes`` is outside 0..trials.
    """
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    # The interval holds p (exactly 1 or 0 at the ends, where rounding gave 0.9999999999999999
    # for 10 of 10, or a few 1e-17 for 0 of 3): the rate it is shown beside never falls out.
    return min(max(0.0, centre - half), p), max(min(1.0, centre + half), p)


def calibration(decisions: Iterable[AgentDecision], *, agent_id: str | None = None) -> Calibration:
    """Reviewers' agreement with the agent on escalations and on the random audit sample.

    Only a person's review counts here (labels are not consulted): this is what the log alone
    says. ``decisions`` come from :func:`agent_decisions` (or a report's ``decisions``); a
    reviewed decision is an *audit sample* when its interrupt was one (``audit``), else an
    *escalation*.

    The two populations are reported separately, not pooled. Escalations are the least
    confident decisions by construction, so their agreement says nothing about the decisions
    that go through unseen. The audit sample is a uniform random draw from the confident
    decisions, so its agreement rate is an unbiased estimate of their accuracy as is: each
    audited decision stands for ``1/audit_rate`` confident ones, and that weight cancels in a
    proportion. Pooling would need that weight and would blend two different accuracies into a
    number that describes neither population. The intervals are Wilson 95% score intervals
    (:func:`wilson_interval`): sampling error only, assuming the audit draw was random.
    """
    esc_n = esc_ok = audit_n = audit_ok = total = confident = 0
    for decision in decisions:
        if agent_id is not None and decision.agent_id != agent_id:
            continue
        total += 1
        if not decision.escalated or decision.audit:
            confident += 1
        if not decision.reviewed:
            continue
        if decision.audit:
            audit_n += 1
            audit_ok += bool(decision.correct)
        else:
            esc_n += 1
            esc_ok += bool(decision.correct)
    return Calibration(
        escalated=Agreement.of(esc_n, esc_ok),
        audited=Agreement.of(audit_n, audit_ok),
        decisions=total,
        confident=confident,
    )


def threshold_grid(step: float = 0.05) -> tuple[float, ...]:
    """Thresholds from 0.0 to 1.0 inclusive, ``step`` apart.

    Each value is computed as ``k / n`` (not by repeated addition), so 0.35 is exactly the float
    ``0.35`` and a confidence recorded as 0.35 ties with it.

    Raises:
        ValueError: ``step`` is not in (0, 1] or does not divide 1 evenly.
    """
    if not (isinstance(step, int | float) and 0 < step <= 1):
        raise ValueError(f"a threshold step is in (0, 1], got {step!r}")
    n = round(1 / step)
    if not math.isclose(n * step, 1.0, rel_tol=0, abs_tol=1e-9):
        raise ValueError(f"a threshold step must divide 1 evenly, got {step!r}")
    return tuple(k / n for k in range(n + 1))


def agent_decisions(events: Iterable[Mapping[str, Any]]) -> list[AgentDecision]:
    """Read every ``agent.decided`` of ``events`` back, with its escalation and review.

    ``events`` are ``RunEventDoc`` dicts (``WopHost.events``), from one run or many, in any order:
    they are grouped by ``runId`` and ordered by ``sequence``. A decision is matched to its
    ``low-confidence`` interrupt through the log itself: ``interrupt.requested`` names the
    agent, decision and confidence and the interrupt ``key``; ``node.suspended`` maps that key to
    the ``interruptId`` that ``interrupt.resolved`` names. When those links are missing (a
    filtered log), an ``interrupt.resolved`` of kind ``low-confidence`` belongs to the latest
    decision of the same run and node before it that is still open.

    Returns:
        The decisions, run by run (in order of first appearance), each in sequence order;
        ``correct`` is set for reviewed decisions only.
    """
    by_run: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for event in events:
        by_run[str(event.get("runId", ""))].append(event)
    found: list[AgentDecision] = []
    for run_id, run_events in by_run.items():
        found.extend(_decisions_of_run(run_id, sorted(run_events, key=_sequence)))
    return found


def threshold_report(
    events: Iterable[Mapping[str, Any]],
    target_error: float,
    thresholds: Sequence[float] | None = None,
    *,
    labels: Mapping[str, Any] | None = None,
    truth: Callable[[AgentDecision], Any] | None = None,
    agent_id: str | None = None,
) -> ThresholdReport:
    """The escalation rate and auto-accept error at each threshold, and the one to pick.

    Args:
        events: ``RunEventDoc`` dicts from any number of runs (see :func:`agent_decisions`).
        target_error: the highest acceptable share of wrong decisions among those not
            escalated, 0..1.
        thresholds: the thresholds to evaluate, each 0..1; default :func:`threshold_grid`
            (0.0, 0.05, ..., 1.0). Duplicates are dropped and the points sorted.
        labels: ground truth keyed by run id: the right decision of every decision in that run
            that no person reviewed. Use it when each run decides once (one item per run).
        truth: ground truth as a function of the decision (it sees ``run_id``, ``node_id``,
            ``agent_id``, ``inputs``, ...); returns the right decision, or ``None`` when unknown.
            Use it when a run decides several times or the key lives in the inputs. Give
            ``labels`` or ``truth``, not both.
        agent_id: consider only this agent's decisions.

    A reviewed decision is always judged by its review (the person's answer is the ground
    truth; a label is not consulted). A replacement equal to the agent's own decision counts as
    a ratification. Decisions with no review and no label are counted in
    :attr:`ThresholdPoint.auto_unknown` when auto-accepted and left out of the error.

    Raises:
        TypeError: both ``labels`` and ``truth`` were given.
        ValueError: ``target_error`` or a threshold is outside 0..1 (or not a number).
    """
    if labels is not None and truth is not None:
        raise TypeError("give labels or truth, not both")
    _check_unit("target_error", target_error)
    grid = threshold_grid() if thresholds is None else thresholds
    for value in grid:
        _check_unit("threshold", value)
    ordered = sorted({float(t) for t in grid})

    judge: Callable[[AgentDecision], Any] | None = truth
    if labels is not None:
        judge = _by_run_id(labels)
    judged = tuple(
        _judged(d, judge) for d in agent_decisions(events) if agent_id is None or d.agent_id == agent_id
    )
    points = tuple(_point(judged, t) for t in ordered)
    candidates = [p for p in points if p.meets(target_error)] if judged else []
    recommended = min(candidates, key=lambda p: (p.escalation_rate, p.threshold), default=None)
    return ThresholdReport(
        target_error=float(target_error), points=points, recommended=recommended, decisions=judged
    )


# -- internals -----------------------------------------------------------------------------------


def _sequence(event: Mapping[str, Any]) -> int:
    sequence = event.get("sequence")
    return sequence if isinstance(sequence, int) else -1


def _confidence(value: Any) -> float | None:
    """A finite real number as a float; anything else (absent, NaN, text, a bool) is no confidence."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _check_unit(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a number from 0 to 1, got {value!r}")


def _decisions_of_run(run_id: str, events: list[Mapping[str, Any]]) -> list[AgentDecision]:
    decisions: list[AgentDecision] = []
    inputs: Any = None
    by_key: dict[str, int] = {}  # interrupt key -> index into decisions
    key_of_interrupt: dict[str, str] = {}  # interruptId -> key
    linked: set[int] = set()  # decisions that have their interrupt.requested
    settled: set[int] = set()  # decisions whose interrupt was resolved (or timed out)
    for event in events:
        kind = event.get("type")
        payload = event.get("payload")
        if not isinstance(payload, Mapping):
            continue
        node_id = event.get("nodeId")
        if kind == "run.started":
            inputs = payload.get("inputs")
        elif kind == "agent.decided":
            decisions.append(
                AgentDecision(
                    run_id=run_id,
                    node_id=node_id if isinstance(node_id, str) else None,
                    agent_id=str(payload.get("agentId", "")),
                    decision=payload.get("decision"),
                    confidence=_confidence(payload.get("confidence")),
                    sequence=_sequence(event),
                    inputs=inputs,
                )
            )
        elif kind == "interrupt.requested" and payload.get("kind") == "low-confidence":
            index = _requested_decision(decisions, linked, node_id, payload)
            if index is not None:
                linked.add(index)
                decisions[index] = replace(decisions[index], escalated=True, audit=_is_audit(payload))
                if isinstance(payload.get("key"), str):
                    by_key[payload["key"]] = index
        elif kind == "node.suspended" and payload.get("kind") == "low-confidence":
            if isinstance(payload.get("interruptId"), str) and isinstance(payload.get("key"), str):
                key_of_interrupt[payload["interruptId"]] = payload["key"]
        elif kind == "interrupt.resolved" and payload.get("kind") == "low-confidence":
            index = by_key.get(key_of_interrupt.get(str(payload.get("interruptId")), ""))
            if index is None:
                index = _latest_open(decisions, settled, node_id)
            if index is None:
                continue
            settled.add(index)
            decisions[index] = _reviewed(replace(decisions[index], escalated=True), payload)
    return decisions


def _requested_decision(
    decisions: list[AgentDecision], linked: set[int], node_id: Any, payload: Mapping[str, Any]
) -> int | None:
    """The earliest unlinked decision of the node that this ``interrupt.requested`` asks about."""
    data = payload.get("data")
    data = data if isinstance(data, Mapping) else {}
    for index, decision in enumerate(decisions):
        if index in linked or decision.node_id != node_id:
            continue
        if (
            decision.agent_id == data.get("agentId")
            and decision.decision == data.get("decision")
            and decision.confidence == _confidence(data.get("observed"))
        ):
            return index
    return None


def _is_audit(payload: Mapping[str, Any]) -> bool:
    data = payload.get("data")
    if not isinstance(data, Mapping):
        return False
    observed, threshold = _confidence(data.get("observed")), _confidence(data.get("threshold"))
    return observed is not None and threshold is not None and observed >= threshold


def _latest_open(decisions: list[AgentDecision], settled: set[int], node_id: Any) -> int | None:
    for index in range(len(decisions) - 1, -1, -1):
        if index not in settled and decisions[index].node_id == node_id:
            return index
    return None


def _reviewed(decision: AgentDecision, payload: Mapping[str, Any]) -> AgentDecision:
    """Apply an ``interrupt.resolved``: a person's answer judges the decision; a timeout does not."""
    if "resumeValue" not in payload:
        return decision  # expired (or cancelled): nobody looked at it
    value = payload["resumeValue"]
    final = value["decision"] if isinstance(value, Mapping) and "decision" in value else decision.decision
    return replace(
        decision,
        reviewed=True,
        resume_value=value,
        final_decision=final,
        correct=final == decision.decision,
        judged_by="human",
    )


def _by_run_id(labels: Mapping[str, Any]) -> Callable[[AgentDecision], Any]:
    def judge(decision: AgentDecision) -> Any:
        return labels.get(decision.run_id)

    return judge


def _judged(decision: AgentDecision, judge: Callable[[AgentDecision], Any] | None) -> AgentDecision:
    if decision.correct is not None or judge is None:
        return decision
    right = judge(decision)
    if right is None:
        return decision
    return replace(decision, correct=right == decision.decision, judged_by="label")


def _point(decisions: Sequence[AgentDecision], threshold: float) -> ThresholdPoint:
    escalated = auto_wrong = auto_unknown = 0
    for decision in decisions:
        if decision.escalated_at(threshold):
            escalated += 1
        elif decision.correct is None:
            auto_unknown += 1
        elif not decision.correct:
            auto_wrong += 1
    total = len(decisions)
    auto_accepted = total - escalated
    judged = auto_accepted - auto_unknown
    if auto_accepted == 0:
        error: float | None = 0.0
    elif judged == 0:
        error = None
    else:
        error = auto_wrong / judged
    return ThresholdPoint(
        threshold=threshold,
        decisions=total,
        escalated=escalated,
        auto_accepted=auto_accepted,
        auto_wrong=auto_wrong,
        auto_unknown=auto_unknown,
        escalation_rate=escalated / total if total else 0.0,
        auto_accept_error=error,
    )
