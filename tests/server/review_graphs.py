"""Graphs the reviewer-page browser tests serve: ``tests.server.review_graphs:WORKFLOWS``.

Every graph asks one thing in node ``ask`` and stores the answer, so a test can read what the
run received from the ``interrupt.resolved`` event.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from wop_langgraph.nodes import ask, request_approval

#: Text with markup and line breaks: it must show as text, never as HTML or a JSON string.
TEXT_ARTIFACT = "Dear customers,\nversion 2 is out <b>today</b> & <script>alert('x')</script>."
#: An object artifact whose strings carry markup (escaping) and nesting (the JSON editor).
OBJECT_ARTIFACT = {"title": "<img src=x onerror=alert(1)>", "items": [1, 2], "live": True}
QUESTIONS = [
    {"id": "colour", "question": "Which colour?", "schema": {"enum": ["red", "green", "blue"]}},
    {
        "id": "region",
        "question": "Which region?",
        "schema": {
            "type": "string",
            "enum": ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east", "sa"],
        },
    },
    {"id": "urgent", "question": "Is it urgent?", "schema": {"type": "boolean"}},
    {
        "id": "count",
        "question": "How many copies?",
        "schema": {"type": "integer", "minimum": 1, "maximum": 10},
    },
    {"id": "budget", "question": "Budget in euros?", "schema": {"type": "number"}},
    {
        "id": "name",
        "question": "Who signs it? <i>Full name</i>",
        "schema": {"type": "string", "minLength": 2},
    },
]


class State(TypedDict, total=False):
    answer: Any


def _text_review(state: State) -> State:
    decision = request_approval(
        "note-1",
        "text/plain",
        "Publish the <em>release</em> note?",
        actions=["accept", "edit-accept", "refine", "ask", "reject"],
        artifact_data=TEXT_ARTIFACT,
        description="It goes to every customer.",
    )
    return {"answer": decision.action}


def _object_review(state: State) -> State:
    decision = request_approval(
        "config-1",
        "application/json",
        "Apply this configuration?",
        actions=["accept", "edit-accept", "reject"],
        artifact_data=OBJECT_ARTIFACT,
    )
    return {"answer": decision.action}


def _quorum_review(state: State) -> State:
    decision = request_approval(
        "doc-9", "text/plain", "Two reviewers?", artifact_data="x", required_approvals=2
    )
    return {"answer": decision.action}


def _questions(state: State) -> State:
    return {"answer": ask(QUESTIONS)}


def _raw(state: State) -> State:
    # A plain LangGraph interrupt() with a value of the graph's own shape (not a question: a bare
    # string or {question, options} would become a clarification), so it stays a custom interrupt.
    return {"answer": interrupt({"draft": "v1", "note": "Ship it? Answer <b>yes</b> or no."})}


def _one_node(node: Any) -> Any:
    g = StateGraph(State)
    g.add_node("ask", node)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g.compile()


WORKFLOWS = {
    "text-review": _one_node(_text_review),
    "object-review": _one_node(_object_review),
    "quorum-review": _one_node(_quorum_review),
    "questions": _one_node(_questions),
    "raw": _one_node(_raw),
}
