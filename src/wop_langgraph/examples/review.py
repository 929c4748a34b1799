"""A three-step review graph: draft an announcement, ask for approval, publish."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from wop_langgraph.nodes import request_approval

__all__ = ["WORKFLOW_ID", "ReviewState", "build_review_graph", "graph", "workflows"]

WORKFLOW_ID = "announcement-review"


class ReviewState(TypedDict, total=False):
    """The state of the review graph."""

    topic: str
    draft: str
    decision: str
    published: str


def draft(state: ReviewState) -> dict[str, Any]:
    """Write the draft (deterministic: no model needed)."""
    return {"draft": f"We are happy to announce {state.get('topic', 'our release')}."}


def review(state: ReviewState) -> dict[str, Any]:
    """Suspend until a reviewer accepts (or edits) the draft; a rejection fails the run."""
    decision = request_approval(
        "announcement-1",
        "text/plain",
        "Publish the announcement?",
        actions=["accept", "edit-accept", "reject"],
        artifact_data=state["draft"],  # the text itself: the reviewer page shows and edits it as text
        description="The announcement goes out to every customer.",
    )
    text = state["draft"]
    if decision.action == "edit-accept" and isinstance(decision.edited_artifact_data, str):
        text = decision.edited_artifact_data
    return {"decision": decision.action, "draft": text}


def publish(state: ReviewState) -> dict[str, Any]:
    """Publish the approved text."""
    return {"published": state["draft"]}


def build_review_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled review graph (no checkpointer: the host binds its own store)."""
    graph = StateGraph(ReviewState)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_node("publish", publish)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", "publish")
    graph.add_edge("publish", END)
    return graph.compile()


def workflows() -> dict[str, CompiledStateGraph[Any, Any, Any, Any]]:
    """``{workflowId: graph}`` for ``wop-langgraph serve wop_langgraph.examples.review:workflows``."""
    return {WORKFLOW_ID: build_review_graph()}


#: The compiled graph that ``langgraph.json`` names, for ``langgraph dev`` and LangGraph Studio
#: (they bind their own checkpointer). Compiling opens no connection and starts no thread.
graph = build_review_graph()


if __name__ == "__main__":
    from wop_langgraph.examples._walkthrough import walk

    walk(WORKFLOW_ID, build_review_graph(), {"topic": "our new release"}, lambda record: {"action": "accept"})
