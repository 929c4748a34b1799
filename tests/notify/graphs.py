"""Graphs whose gates notify reviewers (importable by a served process: ``tests.notify.graphs:WORKFLOWS``)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from wop_langgraph import request_approval


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    decision: str


def gate_graph(**approval: Any) -> Pregel:
    """``review -> publish``: ``review`` asks ``request_approval(**approval)``."""

    def review(state: State) -> State:
        decision = request_approval(
            "release-7",
            "release",
            "Ship release 7?",
            description="Version 7 <b>fixes</b> the login bug.",
            artifact_data={"changes": ["login fix", "faster search"]},
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


WORKFLOWS = {
    "release": gate_graph(approvers=["alice"], timeout=3600),
    "release-quorum": gate_graph(approvers=["alice", "bob"], required_approvals=2, timeout=3600),
}
