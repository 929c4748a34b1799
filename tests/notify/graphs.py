"""Graphs whose gates notify reviewers (importable by a served process: ``tests.notify.graphs:WORKFLOWS``)."""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from wop_langgraph import ask, request_approval


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    decision: str


def gate_graph(
    title: str = "Ship release 7?",
    description: str = "Version 7 <b>fixes</b> the login bug.",
    artifact_data: Any = None,
    **approval: Any,
) -> Pregel:
    """``review -> publish``: ``review`` asks ``request_approval(**approval)``."""
    data = artifact_data if artifact_data is not None else {"changes": ["login fix", "faster search"]}

    def review(state: State) -> State:
        decision = request_approval(
            "release-7",
            "release",
            title,
            description=description,
            artifact_data=data,
            **approval,
        )
        return {"log": ["review"], "decision": decision.decision}

    def publish(state: State) -> State:
        return {"log": ["publish"]}

    builder = StateGraph(State)
    builder.add_node("review", review)
    builder.add_node("publish", publish)
    builder.add_edge(START, "review")
    builder.add_edge("review", "publish")
    builder.add_edge("publish", END)
    return builder.compile()


def failing_beside_gate_graph(asked: Callable[[], bool], **approval: Any) -> Pregel:
    """``review`` (a gate) beside ``build`` in one step; ``build`` fails: the run fails, the gate waits."""

    def review(state: State) -> State:
        request_approval("release-7", "release", "Ship release 7?", **approval)
        return {"log": ["review"]}

    def build(state: State) -> State:
        # Fail only once the gate is recorded: a task failing first may stop LangGraph from
        # storing its sibling's interrupt, and then there is nothing to notify about.
        deadline = time.monotonic() + 30
        while not asked() and time.monotonic() < deadline:
            time.sleep(0.01)
        raise RuntimeError("the build broke")

    builder = StateGraph(State)
    builder.add_node("review", review)
    builder.add_node("build", build)
    builder.add_edge(START, "review")
    builder.add_edge(START, "build")
    builder.add_edge("review", END)
    builder.add_edge("build", END)
    return builder.compile()


def questions_graph(questions: list[dict[str, Any]], **options: Any) -> Pregel:
    """``clarify``: asks ``questions`` (a clarification interrupt)."""

    def clarify(state: State) -> State:
        answers = ask(questions, **options)
        return {"log": [f"answered {len(answers)}"]}

    builder = StateGraph(State)
    builder.add_node("clarify", clarify)
    builder.add_edge(START, "clarify")
    builder.add_edge("clarify", END)
    return builder.compile()


WORKFLOWS = {
    "release": gate_graph(approvers=["alice"], timeout=3600),
    "release-quorum": gate_graph(approvers=["alice", "bob"], required_approvals=2, timeout=3600),
}
