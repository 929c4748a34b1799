"""A chat-loop graph: one conversation, one exchange per graph step, an outcome schema per turn.

A customer reports a problem with an order. ``open_chat`` opens the conversation; ``chat_turn``
asks the next unanswered question with :func:`~wop_langgraph.nodes.exchange` and an
``outcomeSchema``, records the validated answer and returns; a conditional edge sends the run
back to ``chat_turn`` while questions remain, then to ``wrap_up``, which closes the conversation.

One exchange per graph step matters: LangGraph re-runs a node from its first line on every
resume, so a ``while`` loop around ``exchange`` inside one node would replay every earlier turn.
An edge back to the node makes each turn its own execution with its own interrupt key.

The host must enable conversations (``WopHost(..., conversations=True)``). An answer that
does not satisfy the turn's ``outcomeSchema`` is refused by ``WopHost.resolve`` with a
``ValidationError`` (``validation_error``, 400) whose ``details`` name the failing member; the
interrupt stays pending and the same turn can be answered again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from wop_langgraph.nodes import close_conversation, exchange, start_conversation

__all__ = ["QUESTIONS", "WORKFLOW_ID", "ChatState", "Question", "build_chat_graph", "next_question"]

WORKFLOW_ID: Final = "order-problem-chat"


@dataclass(frozen=True)
class Question:
    """One turn of the script: the state field it fills, what to ask, and the answer's shape."""

    field: str
    prompt: str
    outcome_schema: dict[str, Any]


QUESTIONS: Final = (
    Question(
        "order",
        "Which order is this about?",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["orderId"],
            "properties": {
                "orderId": {
                    "title": "Order id",
                    "description": "The id on your receipt",
                    "type": "string",
                    "pattern": "^A-[0-9]{4}$",
                    "examples": ["A-1042"],
                }
            },
        },
    ),
    Question(
        "problem",
        "What went wrong with it?",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["problem"],
            "properties": {
                "problem": {"title": "Problem", "enum": ["damaged", "late", "wrong-item", "other"]},
                "details": {"title": "Details", "type": "string", "maxLength": 500},
            },
        },
    ),
    Question(
        "remedy",
        "Would you like a refund or a replacement?",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["remedy"],
            "properties": {"remedy": {"title": "Remedy", "enum": ["refund", "replacement"]}},
        },
    ),
)


class ChatState(TypedDict, total=False):
    """The state of the chat graph."""

    conversation_id: str
    answers: dict[str, Any]
    turns: int
    summary: str


def next_question(answers: dict[str, Any]) -> Question | None:
    """The first question not answered yet, or ``None`` when the script is done."""
    return next((q for q in QUESTIONS if q.field not in answers), None)


def open_chat(state: ChatState) -> dict[str, Any]:
    """Open the conversation (``conversation.opened`` is appended once, even on replay)."""
    conversation_id = start_conversation(title="Problem with an order")
    return {"conversation_id": conversation_id, "answers": {}, "turns": 0}


def chat_turn(state: ChatState) -> dict[str, Any]:
    """Exactly one exchange: ask the next question, wait for a valid answer, record it."""
    answers = dict(state.get("answers") or {})
    question = next_question(answers)
    if question is None:  # nothing left (not reached: the edge goes to wrap_up first)
        return {}
    turn = state.get("turns", 0)
    answers[question.field] = exchange(
        state["conversation_id"], question.prompt, question.outcome_schema, turn_index=turn
    )
    return {"answers": answers, "turns": turn + 1}


def after_turn(state: ChatState) -> Literal["chat_turn", "wrap_up"]:
    """Back to ``chat_turn`` while a question is unanswered, else ``wrap_up``."""
    return "chat_turn" if next_question(state.get("answers") or {}) is not None else "wrap_up"


def wrap_up(state: ChatState) -> dict[str, Any]:
    """Close the conversation and summarise the request."""
    answers = state.get("answers") or {}
    turns = state.get("turns", 0)
    close_conversation(state["conversation_id"], reason="completed", turn_count=turns)
    order = answers.get("order", {}).get("orderId", "?")
    problem = answers.get("problem", {}).get("problem", "?")
    remedy = answers.get("remedy", {}).get("remedy", "?")
    return {"summary": f"order {order}: {problem}; customer wants a {remedy}"}


def build_chat_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """``open_chat -> chat_turn (-> chat_turn)* -> wrap_up``."""
    graph = StateGraph(ChatState)
    graph.add_node("open_chat", open_chat)
    graph.add_node("chat_turn", chat_turn)
    graph.add_node("wrap_up", wrap_up)
    graph.add_edge(START, "open_chat")
    graph.add_edge("open_chat", "chat_turn")
    graph.add_conditional_edges("chat_turn", after_turn)
    graph.add_edge("wrap_up", END)
    return graph.compile()
