"""Plain ``interrupt(value)``: questions become clarifications, anything else a readable custom interrupt.

The node is plain LangGraph: ``interrupt("...")`` returns the answer string, an
``interrupt({"question": ..., "options": [...]})`` returns the chosen option, and any other
value returns whatever the resolver sent, exactly as with ``Command(resume=...)``.

    wop-langgraph serve wop_langgraph.examples.plain_interrupt:workflows --db sqlite:///plain.db
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

__all__ = ["WORKFLOW_ID", "TripState", "build_graph", "workflows"]

WORKFLOW_ID = "plain-trip"


class TripState(TypedDict, total=False):
    """The state: what the traveller told us."""

    city: str
    seat: str
    extras: Any


def where(state: TripState) -> dict[str, Any]:
    """A free-text question."""
    return {"city": interrupt("Which city are you flying to?")}


def seat(state: TripState) -> dict[str, Any]:
    """A question with options."""
    return {
        "seat": interrupt({"question": f"Which seat to {state['city']}?", "options": ["aisle", "window"]})
    }


def extras(state: TripState) -> dict[str, Any]:
    """Any other value: shown to the reviewer as JSON, answered with any JSON."""
    return {"extras": interrupt({"offer": "lounge access", "price": 40})}


def build_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled graph (no checkpointer: the host binds its own store)."""
    graph = StateGraph(TripState)
    graph.add_node("where", where)
    graph.add_node("seat", seat)
    graph.add_node("extras", extras)
    graph.add_edge(START, "where")
    graph.add_edge("where", "seat")
    graph.add_edge("seat", "extras")
    graph.add_edge("extras", END)
    return graph.compile()


def workflows() -> dict[str, CompiledStateGraph[Any, Any, Any, Any]]:
    """``{workflowId: graph}`` for ``wop-langgraph serve``."""
    return {WORKFLOW_ID: build_graph()}


if __name__ == "__main__":
    from wop_langgraph.examples._walkthrough import walk

    canned = {"where": "Lisbon", "seat": "aisle", "extras": {"accepted": True}}
    walk(WORKFLOW_ID, build_graph(), {}, lambda record: canned[record.node_id])
