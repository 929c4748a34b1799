"""Conversations: open one, exchange one turn per graph step, close it.

Opening and closing record ``conversation.opened`` / ``conversation.closed`` and go on at once,
unless asked to wait: ``start_conversation(wait_for_join=True)`` raises a ``conversation.start``
interrupt that waits for the other party to join, and ``close_conversation(confirm=True)`` a
``conversation.close`` interrupt that waits for the close to be confirmed. Both are resolved with
the other party's turn, a ``ConversationTurn`` (conversation-turn.schema.json): the joining
turn, or the closing one.

Model each turn as its own superstep (an edge back to the node), never a ``while True`` loop
around ``exchange`` inside one node: LangGraph re-runs a node from its first line on every
resume, so a loop inside one node replays every earlier turn (LANGGRAPH_NOTES §1.7).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from wop_langgraph.nodes.context import NodeCall, current_call, stable_id
from wop_langgraph.nodes.questions import _answered
from wop_langgraph.nodes.suspend import suspend
from wop_langgraph.protocol.errors import CapabilityRequired

__all__ = ["close_conversation", "exchange", "start_conversation"]


def start_conversation(
    *,
    title: str | None = None,
    initial_prompt: str | None = None,
    key: str = "",
    wait_for_join: bool = False,
    timeout: timedelta | float | None = None,
) -> str:
    """Open a conversation and return its tenant-unique ``conversationId``.

    Appends ``conversation.opened`` once (a replay returns the same id and appends nothing);
    outside the host it is written to LangGraph's ``custom`` stream instead (there is no event
    log). ``key`` tells apart several conversations opened by one execution of a node.

    With ``wait_for_join``, the node then suspends on a ``conversation.start`` interrupt
    (carrying ``title`` and ``initial_prompt``) until the other party joins: the resume value is
    their opening ``ConversationTurn``, recorded on ``interrupt.resolved``. ``timeout`` bounds
    that wait (then the node fails with ``interrupt_expired``).
    """
    call = _enabled()
    conversation_id = f"conv-{stable_id(call.run_id, call.task_ns, key)}"
    if call.context is not None and call.context.replay is not None:
        # A replay re-opens the source's conversation: its id is recorded fact (replay.md).
        conversation_id = call.context.replay.recorded_id(
            "conversation.opened", "conversationId", call.node_id, call.task_ns, conversation_id
        )
    opened: dict[str, Any] = {"conversationId": conversation_id}
    call.emit("conversation.opened", opened, discriminator=conversation_id)
    if wait_for_join:
        data: dict[str, Any] = {"conversationId": conversation_id}
        if title is not None:
            data["title"] = title
        if initial_prompt is not None:
            data["initialPrompt"] = initial_prompt
        _answered(suspend("conversation.start", data, timeout=timeout, call=call))
    return conversation_id


def exchange(
    conversation_id: str,
    prompt: str,
    outcome_schema: dict[str, Any] | None = None,
    *,
    turn_index: int | None = None,
) -> Any:
    """Ask the person ``prompt`` and return their answer, validated against ``outcome_schema``.

    The host records ``conversation.exchanged`` with the turn's index and the outcome when the
    answer arrives. A conversation's turns are numbered by how many exchanges it already had.
    """
    call = _enabled()
    data: dict[str, Any] = {"conversationId": conversation_id, "prompt": prompt}
    if outcome_schema is not None:
        data["outcomeSchema"] = outcome_schema
    if turn_index is not None:
        data["turnIndex"] = turn_index
    return _answered(suspend("conversation.exchange", data, call=call)).resume_value


def close_conversation(
    conversation_id: str,
    *,
    reason: str | None = None,
    turn_count: int | None = None,
    confirm: bool = False,
    timeout: timedelta | float | None = None,
) -> None:
    """Close the conversation: appends ``conversation.closed`` once (outside the host: written to
    LangGraph's ``custom`` stream).

    With ``confirm``, the node first suspends on a ``conversation.close`` interrupt (carrying
    ``reason``) until the other party confirms the close with their closing ``ConversationTurn``;
    ``conversation.closed`` follows the confirmation. ``timeout`` bounds that wait.
    """
    call = _enabled()
    if confirm:
        data: dict[str, Any] = {"conversationId": conversation_id}
        if reason is not None:
            data["reason"] = reason
        _answered(suspend("conversation.close", data, timeout=timeout, call=call))
    closed: dict[str, Any] = {"conversationId": conversation_id}
    if reason is not None:
        closed["reason"] = reason
    if turn_count is not None:
        closed["turnCount"] = turn_count
    call.emit("conversation.closed", closed, discriminator=conversation_id)


def _enabled() -> NodeCall:
    """The call, unless the host runs the graph without conversations enabled.

    Outside the host there is no capability switch: conversations are always available.
    """
    call = current_call()
    if call.context is not None and not call.context.conversations:
        raise CapabilityRequired(
            "conversations are not enabled on this host (WopHost(conversations=True))",
            details={"capability": "conversationPrimitive"},
        )
    return call
