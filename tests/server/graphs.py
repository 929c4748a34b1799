"""Graphs the server tests (and the uvicorn subprocesses) serve: ``tests.server.graphs:WORKFLOWS``."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from wop_langgraph.nodes import ask, request_approval


class State(TypedDict, total=False):
    draft: str
    decision: str
    answers: dict[str, Any]


def _write(state: State) -> State:
    return {"draft": "hello"}


def _review(state: State) -> State:
    decision = request_approval("doc-1", "text", "Publish the draft?", artifact_data=state.get("draft", ""))
    return {"decision": decision.action}


def _timed_review(state: State) -> State:
    decision = request_approval(
        "doc-2", "text", "Publish soon?", artifact_data="x", timeout=1.5, on_timeout="reject"
    )
    return {"decision": decision.action}


def _quorum_review(state: State) -> State:
    decision = request_approval("doc-3", "text", "Two reviewers?", artifact_data="x", required_approvals=2)
    return {"decision": decision.action}


def _bob_review(state: State) -> State:
    decision = request_approval("doc-4", "text", "Only bob decides", artifact_data="x", approvers=["bob"])
    return {"decision": decision.action}


def _clarify(state: State) -> State:
    return {"answers": ask([{"id": "q1", "question": "Which colour?", "schema": {"type": "string"}}])}


def review_graph() -> Any:
    """write -> review (approval) -> clarify (clarification) -> end."""
    g = StateGraph(State)
    g.add_node("write", _write)
    g.add_node("review", _review)
    g.add_node("clarify", _clarify)
    g.add_edge(START, "write")
    g.add_edge("write", "review")
    g.add_edge("review", "clarify")
    g.add_edge("clarify", END)
    return g.compile()


def approve_graph() -> Any:
    """write -> review (approval) -> end."""
    g = StateGraph(State)
    g.add_node("write", _write)
    g.add_node("review", _review)
    g.add_edge(START, "write")
    g.add_edge("write", "review")
    g.add_edge("review", END)
    return g.compile()


def timed_graph() -> Any:
    """One approval with a 1.5 s timeout."""
    g = StateGraph(State)
    g.add_node("review", _timed_review)
    g.add_edge(START, "review")
    g.add_edge("review", END)
    return g.compile()


def quorum_graph() -> Any:
    """One approval that needs two accepting reviewers."""
    g = StateGraph(State)
    g.add_node("review", _quorum_review)
    g.add_edge(START, "review")
    g.add_edge("review", END)
    return g.compile()


def bob_only_graph() -> Any:
    """One approval that names bob (acme:bob) as its only approver."""
    g = StateGraph(State)
    g.add_node("review", _bob_review)
    g.add_edge(START, "review")
    g.add_edge("review", END)
    return g.compile()


def plain_graph() -> Any:
    """No interrupt at all: completes on create."""
    g = StateGraph(State)
    g.add_node("write", _write)
    g.add_edge(START, "write")
    g.add_edge("write", END)
    return g.compile()


WORKFLOWS = {
    "review": review_graph(),
    "approve": approve_graph(),
    "timed": timed_graph(),
    "plain": plain_graph(),
    "quorum": quorum_graph(),
    "bob-only": bob_only_graph(),
}
