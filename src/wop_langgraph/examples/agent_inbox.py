"""Agent Inbox: a node that asks with ``interrupt([HumanInterrupt])``, registered unchanged.

The node is written exactly as for LangGraph's Agent Inbox: it builds a ``HumanInterrupt``
(plain dicts: the ``TypedDict`` classes are deprecated aliases) and reads back the one
``HumanResponse``. On ``WopHost`` it becomes an ``approval`` whose actions follow ``config``.

    wop-langgraph serve wop_langgraph.examples.agent_inbox:workflows --db sqlite:///inbox.db
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

__all__ = ["WORKFLOW_ID", "EmailState", "build_graph", "workflows"]

WORKFLOW_ID = "inbox-email"


class EmailState(TypedDict, total=False):
    """The state: the email to send and what happened to it."""

    to: str
    body: str
    outcome: str
    sent: dict[str, Any]


def review(state: EmailState) -> dict[str, Any]:
    """Ask a human (Agent Inbox style) whether to send the email; act on the response."""
    request = {
        "action_request": {"action": "send_email", "args": {"to": state["to"], "body": state["body"]}},
        "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True, "allow_ignore": True},
        "description": f"Send this email to {state['to']}?",
    }
    response = interrupt([request])[0]
    if response["type"] == "accept":
        return {"outcome": "sent", "sent": {"to": state["to"], "body": state["body"]}}
    if response["type"] == "edit":
        return {"outcome": "sent-edited", "sent": dict(response["args"]["args"])}
    if response["type"] == "response":
        return {"outcome": f"reviewer said: {response['args']}"}
    return {"outcome": "ignored"}


def build_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled graph (no checkpointer: the host binds its own store)."""
    graph = StateGraph(EmailState)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    return graph.compile()


def workflows() -> dict[str, CompiledStateGraph[Any, Any, Any, Any]]:
    """``{workflowId: graph}`` for ``wop-langgraph serve``."""
    return {WORKFLOW_ID: build_graph()}


if __name__ == "__main__":
    from wop_langgraph.examples._walkthrough import walk

    # The reviewer accepts; the node receives [{"type": "accept", ...}] and sends the email.
    walk(
        WORKFLOW_ID,
        build_graph(),
        {"to": "ops@example.com", "body": "The release is out."},
        lambda record: {"action": "accept"},
    )
