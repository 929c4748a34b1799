"""Graphs the reviewer-page browser tests serve: ``tests.server.review_graphs:WORKFLOWS``.

Every graph asks one thing in node ``ask`` and stores the answer, so a test can read what the
run received from the ``interrupt.resolved`` event.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from wop_langgraph.examples.hitl_agent import build_agent
from wop_langgraph.nodes import (
    ask,
    custom_interrupt,
    escalate_on_low_confidence,
    exchange,
    request_approval,
    request_credential,
    start_conversation,
    wait_for_event,
)

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


#: An email whose body has line breaks and markup: shown and edited as text, never as JSON.
EMAIL_ARGS = {"to": "ops@example.com", "body": "Hello team,\nthe <b>release</b> is out.\nThanks"}
#: A batch of two tool calls; the second may be rejected with a message or answered instead.
TOOL_CALLS = [
    {"name": "send_email", "args": {"to": "ops@example.com", "subject": "Release 1.0\nis out"}},
    {"name": "delete_file", "args": {"path": "/tmp/old.log"}},
]
TOOL_GATES = {
    "send_email": {"allowed_decisions": ["approve", "edit", "reject"]},
    "delete_file": {"allowed_decisions": ["approve", "reject", "respond"]},
}
TOOL_NODE = "HumanInTheLoopMiddleware.after_model"
CONNECT_URL = "https://github.example.com/login/oauth/authorize?client_id=wop&state=abc"
PLAN_SCHEMA = {
    "type": "object",
    "properties": {
        "plan": {"title": "Plan", "enum": ["basic", "pro"], "description": "Pro includes support."},
        "seats": {"title": "Seats", "type": "integer", "minimum": 1, "maximum": 50},
    },
    "required": ["plan", "seats"],
}
SURVEY_SCHEMA = {
    "type": "object",
    "properties": {
        "email": {"title": "Your email", "type": "string", "format": "email"},
        "day": {"title": "Delivery day", "type": "string", "format": "date"},
        "priority": {"title": "Priority", "enum": ["low", "high"], "default": "high"},
        "code": {
            "title": "Order code",
            "type": "string",
            "pattern": "^A-[0-9]{4}$",
            "examples": ["A-1234"],
        },
    },
    "required": ["email", "code"],
}


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


def _low_confidence(state: State) -> State:
    return {"answer": escalate_on_low_confidence("refund-agent", "refund", 0.42, threshold=0.7)}


def _low_confidence_object(state: State) -> State:
    decision = {"action": "refund", "amountEuros": 40, "notify": True}
    return {"answer": escalate_on_low_confidence("refund-agent", decision, 0.55, threshold=0.8)}


def _event(state: State) -> State:
    return {"answer": wait_for_event("payment.settled", {"orderId": "A-1001", "customer": "acme"})}


def _credential(state: State) -> State:
    return {"answer": request_credential("GitHub", ["repo", "read:org"], "missing", CONNECT_URL)}


def _conversation(state: State) -> State:
    conversation = start_conversation(title="Your plan")
    prompt = "Thanks for choosing us!\nWhich plan, and how many seats?"
    return {"answer": exchange(conversation, prompt, PLAN_SCHEMA, turn_index=0)}


def _survey(state: State) -> State:
    return {"answer": custom_interrupt("survey", "Where should we deliver?", resume_schema=SURVEY_SCHEMA)}


def _inbox(state: State) -> State:
    request = {
        "action_request": {"action": "send_email", "args": EMAIL_ARGS},
        "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True, "allow_ignore": True},
        "description": "Send this email to ops@example.com?",
    }
    return {"answer": interrupt([request])[0]}


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
    "low-confidence": _one_node(_low_confidence),
    "low-confidence-object": _one_node(_low_confidence_object),
    "event": _one_node(_event),
    "credential": _one_node(_credential),
    "conversation": _one_node(_conversation),
    "survey": _one_node(_survey),
    "inbox": _one_node(_inbox),
    "tool-calls": build_agent(TOOL_GATES, TOOL_CALLS),
}
