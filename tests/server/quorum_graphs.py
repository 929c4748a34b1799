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


ALL_ACTIONS = ["accept", "reject", "refine", "edit-accept"]


def _gate(**quorum: Any) -> Any:
    """One approval offering every deciding action, with ``quorum`` (``request_approval`` options);
    the run's output is the delivered action and what it carries."""

    def review(state: State) -> State:
        decision = request_approval("doc-q", "text", "Publish?", actions=ALL_ACTIONS, **quorum)
        return {"decision": decision.action}

    g = StateGraph(State)
    g.add_node("review", review)
    g.add_edge(START, "review")
    g.add_edge("review", END)
    return g.compile()


WORKFLOWS = {
    "pair": pair_graph(),
    "approve": approve_graph(),
    # 2 of [alice, bob], every action offered
    "pair-edit": _gate(approvers=["alice", "bob"], required_approvals=2),
    # 3 of anyone, majority rejection, every action offered
    "trio": _gate(required_approvals=3, rejection_policy="majority"),
}
