"""What passes validation must be storable: the host refuses unstorable values before writing.

Integers past 64 bits used to be accepted, recorded as the decision, and then fail the run in the
checkpoint serializer; NUL and lone surrogates were refused by PostgreSQL deep in a transaction.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from tests.host._graphs import ALICE, approval_graph
from tests.host._support import footprint, start
from wop_langgraph.host import WopHost
from wop_langgraph.host.validation import INT64_MAX, INT64_MIN, STORABLE_MAX_DEPTH, require_storable
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.store.run_tables import runs_table


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "path", "rule"),
    [
        ({"n": INT64_MAX + 1}, "/n", "int64"),
        ({"n": INT64_MIN - 1}, "/n", "int64"),
        ({"n": 1e19}, "/n", "int64"),
        ({"n": float("nan")}, "/n", "json"),
        ({"n": float("-inf")}, "/n", "json"),
        ({"s": ["ok", "a\x00b"]}, "/s/1", "nul"),
        ({"a\x00": 1}, "", "nul"),
        ({"s": "\ud800"}, "/s", "unicode"),
        ({"\udfff": 1}, "", "unicode"),
        ({"o": object()}, "/o", "json"),
        ({1: "x"}, "", "json"),
        (deep(STORABLE_MAX_DEPTH + 1), "/0" * STORABLE_MAX_DEPTH, "depth"),
        (deep(10_000), "/0" * STORABLE_MAX_DEPTH, "depth"),  # far past the recursion limit
    ],
)
def test_unstorable_values_name_the_member(value: Any, path: str, rule: str) -> None:
    with pytest.raises(ValidationError) as info:
        require_storable(value, "")
    assert info.value.details == {"path": path, "rule": rule}
    assert (info.value.status, info.value.code) == (400, "validation_error")


def test_the_edges_of_the_range_are_storable() -> None:
    require_storable({"max": INT64_MAX, "min": INT64_MIN, "f": 1.5e18, "t": "é😀", "b": True, "z": None}, "")
    require_storable(deep(STORABLE_MAX_DEPTH), "")
    require_storable("x" * 10, "", max_string_chars=10)
    with pytest.raises(ValidationError):
        require_storable("x" * 11, "", max_string_chars=10)
    with pytest.raises(ValidationError):
        require_storable(deep(5), "", max_depth=4)


@pytest.mark.parametrize(
    "resume",
    [
        {"action": "accept", "feedback": "a\x00b"},
        {"action": "accept", "feedback": "\ud800"},
        {"action": "edit-accept", "editedArtifactData": {"n": 2**64}},
        {"action": "refine", "refineFeedback": {"scope": "whole", "text": "x", "n": -(2**63) - 1}},
        {"action": "accept", "decidedBy": "\udc00"},
    ],
)
def test_unstorable_resume_values_change_nothing(host: WopHost, resume: dict[str, Any]) -> None:
    run_id, _ = start(host, approval_graph(actions=["accept", "reject", "refine", "edit-accept"]))
    before = footprint(host, run_id)
    with pytest.raises(ValidationError):
        host.resolve(run_id, "review", resume, ALICE)
    assert footprint(host, run_id) == before
    host.resolve(run_id, "review", {"action": "accept"}, ALICE)
    assert host.snapshot(run_id)["status"] == "completed"


@pytest.mark.parametrize(
    "options",
    [
        {"inputs": {"n": 2**64}},
        {"inputs": {"text": "\x00"}},
        {"metadata": {"m": "\ud800"}},
        {"tags": ["a\x00"]},
        {"inputs": deep(STORABLE_MAX_DEPTH + 5)},
    ],
)
def test_create_run_refuses_unstorable_values_before_writing(host: WopHost, options: dict[str, Any]) -> None:
    host.register("gate", approval_graph())

    def runs() -> int:
        with host.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(runs_table)).scalar_one())

    rest = {k: v for k, v in options.items() if k != "inputs"}
    with pytest.raises(ValidationError):
        host.create_run("gate", options.get("inputs", {}), owner=ALICE, **rest)
    assert runs() == 0
