"""Which node runs next: trigger rules applied as each node settles, one node per graph step.

The schedule is a small JSON document kept in the graph's state: the outcomes each node's sources
reported since it last fired (``arrivals``), the nodes whose rule is met and that wait their turn
(``queue``), and how many times each node ran (``runs``). Nodes run one at a time, in the order
their rules were met, so every verdict is taken over every earlier outcome: two sources settling
in one parallel step can never both miss that together they satisfied a join. The cost is that a
suspended node holds back nodes that became ready beside it until it is resolved.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from wop_langgraph.definitions.model import Plan
from wop_langgraph.definitions.rules import FAILURE_ADMITTING, Outcome, Verdict, decide

__all__ = ["Step", "initial_schedule", "settle"]


@dataclass(frozen=True)
class Step:
    """The result of one node settling.

    Attributes:
        schedule: the new schedule document.
        next_node: the node to run next, or ``None`` when nothing is ready (the run ends unless
            a node is still suspended).
        skipped: ``(node, reason)`` for every node whose rule can no longer be met.
        absorbed: for a failed node, whether a rule that admits failure continues past it; when
            not, the run fails with the node's error.
    """

    schedule: dict[str, Any]
    next_node: str | None
    skipped: tuple[tuple[str, str], ...]
    absorbed: bool


def initial_schedule(plan: Plan, first: str) -> dict[str, Any]:
    """The schedule when the first root starts: the other roots wait their turn."""
    return {"arrivals": {}, "queue": [r for r in plan.roots if r != first], "runs": {}}


def settle(
    plan: Plan, schedule: dict[str, Any], node: str, outcome: Outcome, *, guarded: bool = False
) -> Step:
    """Record that ``node`` ended with ``outcome`` and apply its successors' rules (skips cascade).

    ``guarded``: the run set its own runaway guard (``configurable.run.recursionLimit``), which
    then bounds cycles instead of ``settings.maxLoopbackIterations`` (authoring metadata per the
    official loop fixtures, openwop#1748; the host applies it only to a run without a guard).
    """
    loop_cap = None if guarded else plan.loop_cap
    doc = copy.deepcopy(schedule)
    arrivals: dict[str, dict[str, Outcome]] = doc.setdefault("arrivals", {})
    queue: list[str] = doc.setdefault("queue", [])
    runs: dict[str, int] = doc.setdefault("runs", {})
    runs[node] = runs.get(node, 0) + 1
    skipped: list[tuple[str, str]] = []
    absorbed = False
    pending: list[tuple[str, Outcome]] = [(node, outcome)]
    while pending:
        source, result = pending.pop(0)
        for target in plan.targets[source]:
            reported = arrivals.setdefault(target, {})
            reported[source] = result
            verdict = decide(plan.rules[target], reported, plan.sources[target])
            direct_failure = source == node and result == "failed"
            if verdict is Verdict.WAIT:
                absorbed = absorbed or (direct_failure and plan.rules[target] in FAILURE_ADMITTING)
                continue
            arrivals[target] = {}
            reason = f"triggerRule {plan.rules[target]} cannot be met"
            if verdict is Verdict.FIRE:
                if loop_cap is None or runs.get(target, 0) < loop_cap:
                    if target not in queue:
                        queue.append(target)
                    absorbed = absorbed or direct_failure
                    continue
                reason = f"settings.maxLoopbackIterations ({loop_cap}) reached"
            if target == node or target in (s for s, _ in skipped):
                continue  # a cycle of skips ends where it started; each node is skipped once
            skipped.append((target, reason))
            pending.append((target, "skipped"))
    next_node = queue.pop(0) if queue else None
    return Step(doc, next_node, tuple(skipped), absorbed)
