"""Plain ``interrupt(value)`` under WopHost: questions are clarifications; the node gets the bare answer."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel

from tests.adapters._support import outputs, refuse, resolve_then_recover
from tests.host._graphs import ALICE
from tests.host._support import HostFactory, events, only_pending, payloads, start
from wop_langgraph.examples.plain_interrupt import build_graph
from wop_langgraph.host import WopHost


def test_a_trip_asks_three_ways_and_gets_back_what_command_resume_would_give(host: WopHost) -> None:
    run_id, snapshot = start(host, build_graph(), {})
    assert snapshot["status"] == "waiting-input"
    where = only_pending(host, run_id, "where")
    assert where.payload["data"] == {
        "questions": [
            {"id": "answer", "question": "Which city are you flying to?", "schema": {"type": "string"}}
        ],
        "contextType": "langgraph.interrupt",
    }
    assert host.resolve(run_id, "where", "Lisbon", ALICE)["status"] == "waiting-input"  # the native answer

    seat = only_pending(host, run_id, "seat")
    assert seat.kind == "clarification"
    assert seat.payload["data"]["questions"][0]["schema"] == {"enum": ["aisle", "window"]}
    assert seat.payload["data"]["questions"][0]["question"] == "Which seat to Lisbon?"
    refuse(host, run_id, "seat", "middle")  # not one of the options
    assert host.resolve(run_id, "seat", {"answers": {"answer": "window"}}, ALICE)["status"] == "waiting-input"

    extras = only_pending(host, run_id, "extras")
    assert extras.kind == "custom"
    assert extras.payload["data"] == {
        "customKind": "langgraph.interrupt",
        "payload": {"offer": "lounge access", "price": 40},
    }
    assert host.snapshot(run_id)["status"] == "waiting-input"
    answer = {"accepted": True, "paid": 40}
    assert host.resolve(run_id, "extras", answer, ALICE)["status"] == "completed"
    assert outputs(host, run_id) == {"city": "Lisbon", "seat": "window", "extras": answer}
    docs = events(host, run_id)
    assert [p["kind"] for p in payloads(docs, "interrupt.requested")] == [
        "clarification",
        "clarification",
        "custom",
    ]
    assert len(payloads(docs, "clarification.requested")) == 2
    resolved = payloads(docs, "interrupt.resolved")
    assert [p["resumeValue"] for p in resolved] == [
        {"answers": {"answer": "Lisbon"}},
        {"answers": {"answer": "window"}},
        answer,
    ]


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        (42, None),
        ({"answers": {"answer": 42}}, None),
        ({"answers": {"other": "x"}}, "/resumeValue/answers/other"),
        ({"answers": {}}, "/resumeValue/answers/answer"),
    ],
)
def test_a_bad_answer_is_refused_and_changes_nothing(host: WopHost, bad: Any, path: str | None) -> None:
    run_id, _ = start(host, build_graph(), {})
    refuse(host, run_id, "where", bad, path)
    assert host.resolve(run_id, "where", "Porto", ALICE)["status"] == "waiting-input"


class Answers(TypedDict, total=False):
    budget: dict[str, Any]
    raw: Any


class Budget(BaseModel):
    amount: int
    currency: str


def test_a_response_schema_is_enforced_before_the_claim(host: WopHost) -> None:
    def budget(state: Answers) -> dict[str, Any]:
        chosen = interrupt("What is the budget?", response_schema=Budget)
        return {"budget": chosen.model_dump()}

    def anything(state: Answers) -> dict[str, Any]:
        return {
            "raw": interrupt(["a", "list"], response_schema={"type": "array", "items": {"type": "string"}})
        }

    graph = StateGraph(Answers)
    graph.add_node("budget", budget)
    graph.add_node("anything", anything)
    graph.add_edge(START, "budget")
    graph.add_edge("budget", "anything")
    graph.add_edge("anything", END)
    run_id, _ = start(host, graph.compile(), {})
    question = only_pending(host, run_id).payload["data"]["questions"][0]
    assert question["schema"]["required"] == ["amount", "currency"]
    refuse(host, run_id, "budget", {"amount": "lots"})
    host.resolve(run_id, "budget", {"amount": 300, "currency": "EUR"}, ALICE)
    custom = only_pending(host, run_id)
    assert custom.kind == "custom" and custom.payload["resumeSchema"]["type"] == "array"
    refuse(host, run_id, "anything", [1, 2])
    assert host.resolve(run_id, "anything", ["ok"], ALICE)["status"] == "completed"
    assert outputs(host, run_id) == {"budget": {"amount": 300, "currency": "EUR"}, "raw": ["ok"]}


def test_recovery_delivers_the_bare_answer_and_keeps_the_key(make_host: HostFactory) -> None:
    host = make_host()
    run_id, snapshot = start(host, build_graph(), {})
    key = only_pending(host, run_id).key
    second = resolve_then_recover(make_host, host, snapshot["workflowId"], build_graph(), run_id, "Oslo")
    assert (
        only_pending(second, run_id, "seat").payload["data"]["questions"][0]["question"]
        == "Which seat to Oslo?"
    )
    assert next(r.key for r in second.interrupts(run_id)) == key == f"{run_id}:where:0:0"
