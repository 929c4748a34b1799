"""Graphs for the quorum-identity tests (served as ``tests.server.quorum_graphs:WORKFLOWS``)."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from tests.server.graphs import approve_graph
from wop_langgraph.nodes import request_approval


class State(TypedDict, total=False):
    decision: str


def _pair_review(state: State) -> State:
    decision = request_approval(
        "doc-pair", "text", "Alice and Bob?", approvers=["alice", "bob"], required_approvals=2
    )
    return {"decision": decision.action}


def pair_graph() -> Any:
    """One approval that needs both alice and bob (2 of [alice, bob])."""
    g = StateGraph(State)
    g.add_node("review", _pair_review)
    g.add_edge(START, "review")
    g.add_edge("review", END)
    return g.compile()


WORKFLOWS = {"pair": pair_graph(), "approve": approve_graph()}
