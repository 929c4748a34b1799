"""Edge trigger rules (workflow-definition.schema.json ``WorkflowEdge.triggerRule``), as pure verdicts.

A node's incoming edges share one rule (the compiler refuses a node whose edges disagree). Each
source reports one outcome per firing: ``success``, ``failed`` (a rejected gate among them) or
``skipped`` (its own rule could never be met). A failed source satisfies only the rules that
admit failure, ``any_failed`` and ``all_complete`` (interrupt.md §Rejection, RFC 0223).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from enum import Enum
from typing import Literal

__all__ = ["FAILURE_ADMITTING", "OUTCOMES", "TRIGGER_RULES", "Outcome", "Verdict", "decide"]

Outcome = Literal["success", "failed", "skipped"]
OUTCOMES: tuple[Outcome, ...] = ("success", "failed", "skipped")
TRIGGER_RULES = ("all_success", "any_success", "none_failed", "all_complete", "any_failed")
#: The rules a failed source can satisfy.
FAILURE_ADMITTING = frozenset({"any_failed", "all_complete"})


class Verdict(Enum):
    """What a node's incoming edges decide after a source reports."""

    FIRE = "fire"  # the rule is met: the node runs
    WAIT = "wait"  # not decided until more sources report
    SKIP = "skip"  # the rule can no longer be met: the node is skipped


def decide(rule: str, arrivals: Mapping[str, Outcome], sources: Collection[str]) -> Verdict:
    """The verdict of ``rule`` over the sources that reported since the node last fired or skipped.

    Rules that wait for every source (``all_success``, ``none_failed``, ``all_complete``) fire
    once all sources reported; the ``any_*`` rules fire on the first matching report. A skipped
    source is neither a success nor a failure: ``none_failed`` and ``all_complete`` need at least
    one source that actually ran, so a chain of skips never starts work by itself.
    """
    seen = [arrivals[s] for s in sources if s in arrivals]
    complete = len(seen) == len(sources)
    succeeded = "success" in seen
    failed = "failed" in seen
    if rule == "all_success":
        if any(o != "success" for o in seen):
            return Verdict.SKIP
        return Verdict.FIRE if complete else Verdict.WAIT
    if rule == "any_success":
        if succeeded:
            return Verdict.FIRE
        return Verdict.SKIP if complete else Verdict.WAIT
    if rule == "none_failed":
        if failed:
            return Verdict.SKIP
        if not complete:
            return Verdict.WAIT
        return Verdict.FIRE if succeeded else Verdict.SKIP
    if rule == "all_complete":
        if not complete:
            return Verdict.WAIT
        return Verdict.FIRE if succeeded or failed else Verdict.SKIP
    if rule == "any_failed":
        if failed:
            return Verdict.FIRE
        return Verdict.SKIP if complete else Verdict.WAIT
    raise ValueError(f"unknown trigger rule {rule!r}; expected one of {', '.join(TRIGGER_RULES)}")
