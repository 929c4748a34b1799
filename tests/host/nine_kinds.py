"""One workflow that raises every interrupt kind the interrupt page lists, one node each, and the
answer that resolves each (served as ``tests.host.nine_kinds:WORKFLOWS``, on a host with
conversations and credentials enabled)."""

from __future__ import annotations

import operator
from itertools import pairwise
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

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


class State(TypedDict, total=False):
    log: Annotated[list[Any], operator.add]
    conversation: str


def turn(index: int, content: str) -> dict[str, Any]:
    """A person's ConversationTurn (conversation-turn.schema.json)."""
    return {
        "messageId": f"support:{index}:user",
        "from": "user",
        "content": content,
        "ts": 1_760_000_000_000 + index,
        "role": "user",
        "turnIndex": index,
    }


#: (node id, the kind it raises, the value that resolves it), in the order the run reaches them.
STEPS: list[tuple[str, str, Any]] = [
    ("approve", "approval", {"action": "accept"}),
    ("clarify", "clarification", {"answers": {"colour": "red"}}),
    ("event", "external-event", {"orderId": "o-9", "amount": 5}),
    ("custom", "custom", {"ok": True}),
    ("open", "conversation.start", turn(0, "Hello, I am here")),
    ("talk", "conversation.exchange", {"text": "my order is late"}),
    ("close", "conversation.close", turn(2, "Thanks, bye")),
    ("agent", "low-confidence", {"ratify": True}),
    ("connect", "credential", {"outcome": "authorized"}),
]


def _approve(state: State) -> State:
    return {"log": [request_approval("doc-9", "text", "Go ahead?").action]}


def _clarify(state: State) -> State:
    return {"log": [ask([{"id": "colour", "question": "Which colour?", "schema": {"type": "string"}}])]}


def _event(state: State) -> State:
    return {"log": [wait_for_event("payment.settled", {"orderId": "o-9"})]}


def _custom(state: State) -> State:
    schema = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
    return {"log": [custom_interrupt("acme.sheet", {"sheet": 9}, resume_schema=schema)]}


def _open(state: State) -> State:
    conversation = start_conversation(title="Support", initial_prompt="How can we help?", wait_for_join=True)
    return {"conversation": conversation, "log": ["joined"]}


def _talk(state: State) -> State:
    schema = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}
    return {"log": [exchange(state["conversation"], "What happened?", schema)]}


def _close(state: State) -> State:
    close_conversation(state["conversation"], reason="goal-reached", turn_count=3, confirm=True)
    return {"log": ["closed"]}


def _agent(state: State) -> State:
    return {"log": [escalate_on_low_confidence("triage-agent", "route-a", 0.4)]}


def _connect(state: State) -> State:
    return {"log": [request_credential("github", ["repo"], "missing", "https://host.example/oauth/github")]}


def nine_kinds_graph() -> Pregel:
    """``approve -> clarify -> event -> custom -> open -> talk -> close -> agent -> connect``."""
    g = StateGraph(State)
    nodes = [_approve, _clarify, _event, _custom, _open, _talk, _close, _agent, _connect]
    names = [name for name, _, _ in STEPS]
    for name, body in zip(names, nodes, strict=True):
        g.add_node(name, body)
    g.add_edge(START, names[0])
    for before, after in pairwise(names):
        g.add_edge(before, after)
    g.add_edge(names[-1], END)
    return g.compile()


WORKFLOWS = {"nine": nine_kinds_graph()}
