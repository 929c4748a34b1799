"""The graph the scale-out race test serves and drives: ``tests.server.race_graphs:WORKFLOWS``.

Its output records the decision its gate received (action, feedback, edited artifact), so a test
can check that the value of the resolve answered 200 is the one the graph was given.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from wop_langgraph.nodes import request_approval

WORKFLOW = "echo"


class State(TypedDict, total=False):
    draft: str
    received: dict[str, Any]


def _write(state: State) -> State:
    return {"draft": "draft"}


def _review(state: State) -> State:
    decision = request_approval(
        "doc",
        "text/plain",
        "Publish?",
        actions=("accept", "edit-accept"),
        artifact_data=state.get("draft", ""),
    )
    received = {
        "action": decision.action,
        "feedback": decision.feedback,
        "edited": decision.edited_artifact_data,
    }
    return {"received": received}


def echo_graph() -> Any:
    """write -> review (approval, output records what it received) -> end."""
    g = StateGraph(State)
    g.add_node("write", _write)
    g.add_node("review", _review)
    g.add_edge(START, "write")
    g.add_edge("write", "review")
    g.add_edge("review", END)
    return g.compile()


WORKFLOWS = {WORKFLOW: echo_graph()}
