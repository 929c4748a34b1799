"""Graphs written once with the node API and run both ways: by plain LangGraph and by WopHost.

Each builder compiles ``START -> <node> -> END`` (or a loop back to the node) with the given
checkpointer, the node either ``def`` or ``async def`` around the same body, so a test can run
one compiled object under ``graph.invoke`` / ``graph.ainvoke`` and register that very object
with :class:`WopHost`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from tests.host._graphs import CLARIFY_QUESTIONS, CUSTOM_RESUME_SCHEMA, OUTCOME_SCHEMA, QUESTION, State
from wop_langgraph.nodes import (
    ask,
    close_conversation,
    custom_interrupt,
    escalate_on_low_confidence,
    exchange,
    request_approval,
    request_credential,
    start_conversation,
    wait_for_event,
)

Body = Callable[[State], State]


def build(
    name: str,
    body: Body,
    *,
    is_async: bool = False,
    checkpointer: Any = None,
    again: Callable[[State], bool] | None = None,
) -> Pregel:
    """``START -> name -> END``; with ``again``, ``name`` loops back to itself while it holds."""
    if is_async:

        async def node(state: State) -> State:
            return body(state)

    else:

        def node(state: State) -> State:  # type: ignore[misc]
            return body(state)

    g = StateGraph(State)
    g.add_node(name, node)
    g.add_edge(START, name)
    if again is None:
        g.add_edge(name, END)
    else:
        g.add_conditional_edges(name, lambda s: name if again(s) else END, [name, END])
    return g.compile(checkpointer=checkpointer)


# -- bodies ------------------------------------------------------------------------------------


def approval(**options: Any) -> Body:
    def body(state: State) -> State:
        decision = request_approval(
            "doc-1", "document", "Publish the draft?", artifact_data={"text": "draft"}, **options
        )
        return {"result": dataclasses.asdict(decision)}

    return body


def clarification(timeout: float | None = None) -> Body:
    return lambda state: {"result": ask(CLARIFY_QUESTIONS, context_type="print-job", timeout=timeout)}


def external_event(state: State) -> State:
    return {"result": wait_for_event("payment.settled", {"orderId": "o-1"}, timeout=600)}


def low_confidence(state: State) -> State:
    return {"result": escalate_on_low_confidence("triage-agent", state["decision"], state.get("confidence"))}


def credential(state: State) -> State:
    outcome = request_credential(
        "github",
        ["repo"],
        "missing",
        "https://host.example/oauth/connect/github",
        credential_ref={"id": "gh-1"},
    )
    return {"result": outcome}


def custom(state: State) -> State:
    return {"result": custom_interrupt("acme.review-sheet", {"sheet": 7}, resume_schema=CUSTOM_RESUME_SCHEMA)}


def chat(state: State) -> State:
    """One turn per graph step; the outcome's ``done`` closes the conversation."""
    conversation = state.get("conversation") or start_conversation(title="Support")
    turns = len(state.get("log", []))
    outcome = exchange(conversation, f"Turn {turns}: anything else?", OUTCOME_SCHEMA)
    update: State = {"conversation": conversation, "log": [outcome["text"]]}
    if outcome.get("done"):
        close_conversation(conversation, reason="done", turn_count=turns + 1)
        update["done"] = True
    return update


def chat_again(state: State) -> bool:
    return not state.get("done")


def two_asks(state: State) -> State:
    first = ask([{"id": "a", "question": "First?", "schema": {"type": "string"}}])
    second = ask([{"id": "b", "question": "Second?", "schema": {"type": "string"}}])
    return {"result": {"a": first["a"], "b": second["b"]}}


def loop_ask(state: State) -> State:
    answers = ask([QUESTION])
    return {"log": [answers["q"]], "rounds": state.get("rounds", 0) + 1}


def loop_again(state: State) -> bool:
    return state.get("rounds", 0) < 2
