"""Trigger-rule verdicts: every rule against success, failure (a rejected gate) and skip."""

from __future__ import annotations

import pytest

from wop_langgraph.definitions import TRIGGER_RULES, Verdict, decide

FIRE, WAIT, SKIP = Verdict.FIRE, Verdict.WAIT, Verdict.SKIP
AB = ("a", "b")


@pytest.mark.parametrize(
    ("rule", "arrivals", "verdict"),
    [
        ("all_success", {"a": "success"}, WAIT),
        ("all_success", {"a": "success", "b": "success"}, FIRE),
        ("all_success", {"a": "failed"}, SKIP),
        ("all_success", {"a": "skipped"}, SKIP),
        ("any_success", {"a": "success"}, FIRE),
        ("any_success", {"a": "failed"}, WAIT),
        ("any_success", {"a": "failed", "b": "skipped"}, SKIP),
        ("none_failed", {"a": "success"}, WAIT),
        ("none_failed", {"a": "success", "b": "skipped"}, FIRE),
        ("none_failed", {"a": "skipped", "b": "skipped"}, SKIP),
        ("none_failed", {"a": "failed"}, SKIP),
        ("all_complete", {"a": "failed"}, WAIT),
        ("all_complete", {"a": "failed", "b": "success"}, FIRE),
        ("all_complete", {"a": "failed", "b": "skipped"}, FIRE),
        ("all_complete", {"a": "skipped", "b": "skipped"}, SKIP),
        ("any_failed", {"a": "failed"}, FIRE),
        ("any_failed", {"a": "success"}, WAIT),
        ("any_failed", {"a": "success", "b": "success"}, SKIP),
    ],
)
def test_verdicts(rule: str, arrivals: dict[str, str], verdict: Verdict) -> None:
    assert decide(rule, arrivals, AB) is verdict  # type: ignore[arg-type]


@pytest.mark.parametrize("rule", TRIGGER_RULES)
def test_a_failed_source_satisfies_only_the_rules_that_admit_failure(rule: str) -> None:
    fires = decide(rule, {"gate": "failed"}, ("gate",)) is FIRE
    assert fires == (rule in ("any_failed", "all_complete"))


def test_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="one_success"):
        decide("one_success", {}, AB)
