"""Conversation events (``conversation.opened|exchanged|closed``) and the ``ConversationTurn`` they carry.

The normative payload shapes are the ``_typeIndex``-bound defs of run-event-payloads.schema.json
(events.md), which are a strict widening of the conversation-event.schema.json defs; both are
mirrored here field for field, including the rule that an ``agent`` turn names its speaker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from annotated_types import MinLen
from pydantic import Field, StringConstraints, model_validator

from wop_langgraph.protocol._base import AnyJson, HatchModel, WireModel, member_error
from wop_langgraph.protocol._types import JsonObject, NonNegativeInt
from wop_langgraph.protocol.ids import AgentId

__all__ = [
    "AgentRef",
    "ConversationClosed",
    "ConversationExchanged",
    "ConversationOpened",
    "ConversationTurn",
    "ModelRef",
    "TurnAgent",
]

_Str256 = Annotated[str, StringConstraints(max_length=256)]
_NonEmpty256 = Annotated[str, StringConstraints(min_length=1, max_length=256)]
_TurnIndex = NonNegativeInt


class AgentRef(WireModel):
    """A participant allowed to speak (RFC 0101): a roster instance id and an optional name."""

    agent_id: AgentId
    name: _Str256 | None = None


class ModelRef(WireModel):
    """Which model produced an agent turn: provider and model names only, never secrets."""

    provider: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    model: _NonEmpty256


class TurnAgent(WireModel):
    """The agent reference on a turn (RFC 0002 §A1)."""

    agent_id: AgentId | None = None
    agent_sharing: Literal["isolated", "shared", "shared:%shared%"] | None = None
    memory_ref: str | None = None
    model: ModelRef | None = None


class ConversationTurn(WireModel):
    """One turn of a conversation (conversation-turn.schema.json)."""

    message_id: _NonEmpty256
    """Deterministic dedup key; recommended ``${conversationId}:${turnIndex}:${role}``."""
    from_: _NonEmpty256 = Field(alias="from")
    """An agent id, or ``"user"``."""
    content: AnyJson
    ts: NonNegativeInt
    """Milliseconds since the epoch, on the producer's clock."""
    role: Literal["user", "agent", "system"]
    turn_index: _TurnIndex
    to: _Str256 | None = None
    group_id: _Str256 | None = None
    agent: TurnAgent | None = None
    speaker_id: _NonEmpty256 | None = None
    parts: Annotated[list[AnyJson], MinLen(1)] | None = None
    """A2A ``Part`` objects (``part.schema.json`` is not vendored; kept opaque)."""

    __wire_all_of__: ClassVar[tuple[Mapping[str, Any], ...]] = (
        {
            "if": {"properties": {"role": {"const": "agent"}}, "required": ["role"]},
            "then": {"required": ["speakerId"]},
        },
    )

    @model_validator(mode="after")
    def _agent_turns_name_their_speaker(self) -> Self:
        if self.role == "agent" and self.speaker_id is None:
            raise member_error("speakerId", "an agent turn must carry speakerId (RFC 0101)")
        return self


class ConversationOpened(HatchModel):
    """``conversation.opened``: a conversation context began."""

    conversation_id: _NonEmpty256
    opened_by: str | None = None
    agent_id: AgentId | None = None
    participants: list[AgentRef] | None = None
    initial_turn: ConversationTurn | None = None
    schema_: JsonObject | None = Field(default=None, alias="schema")
    capabilities: list[Literal["multi-turn", "streaming"]] | None = None


class ConversationExchanged(HatchModel):
    """``conversation.exchanged``: one turn completed; ``turnIndex`` strictly increases."""

    conversation_id: _NonEmpty256
    turn_index: _TurnIndex
    turn: ConversationTurn | None = None
    outcome: AnyJson = None


class ConversationClosed(HatchModel):
    """``conversation.closed``: the conversation ended; nothing more may be exchanged on it."""

    conversation_id: _NonEmpty256
    reason: str | None = None
    turn_count: NonNegativeInt | None = None
