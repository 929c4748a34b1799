"""The ``InterruptPayload`` (suspend-request.schema.json): what a node asks for, for each of the nine kinds.

The payload is closed and discriminated by ``kind``; each kind binds ``data`` to exactly one
shape. Here every kind is its own class (``ApprovalInterrupt``, ``ClarificationInterrupt``, ...)
and :data:`InterruptPayload` is their union, so a payload can never hold another kind's data.
Every constraint of the official schema is mirrored (lengths, enums, unique ``actions``, number
ranges, id grammars, the credential kind's fixed ``resumeSchema``).

One deliberate addition: every embedded JSON Schema (``resumeSchema``, a question's ``schema``,
``outcomeSchema``) must itself be a valid JSON Schema, because the host has to validate the
answer against it later; the official schema only asks for an object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Final, Literal, Self, get_args

import pydantic
from pydantic import AfterValidator, Field, StringConstraints, TypeAdapter, model_validator
from pydantic_core import PydanticCustomError

from wop_langgraph.protocol._base import WIRE_CONTEXT, AnyJson, WireModel, validation_error_from
from wop_langgraph.protocol._types import (
    HttpsUrl,
    JsonObject,
    NonEmptyStr,
    NonNegativeInt,
    PositiveInt,
    Probability,
    json_equal,
    require_unique,
)
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.ids import AgentId
from wop_langgraph.protocol.jsonschema_check import check_schema

__all__ = [
    "CREDENTIAL_RESUME_SCHEMA",
    "INTERRUPT_KINDS",
    "INTERRUPT_PAYLOAD_MODELS",
    "ApprovalAction",
    "ApprovalAudience",
    "ApprovalData",
    "ApprovalInterrupt",
    "ClarificationData",
    "ClarificationInterrupt",
    "ClarificationQuestion",
    "ConversationCloseData",
    "ConversationCloseInterrupt",
    "ConversationExchangeData",
    "ConversationExchangeInterrupt",
    "ConversationStartData",
    "ConversationStartInterrupt",
    "CredentialData",
    "CredentialInterrupt",
    "CustomData",
    "CustomInterrupt",
    "ExternalEventData",
    "ExternalEventInterrupt",
    "InterruptKind",
    "InterruptPayload",
    "LowConfidenceData",
    "LowConfidenceInterrupt",
    "parse_interrupt_payload",
]

InterruptKind = Literal[
    "approval",
    "clarification",
    "external-event",
    "custom",
    "conversation.start",
    "conversation.exchange",
    "conversation.close",
    "low-confidence",
    "credential",
]
INTERRUPT_KINDS: Final[tuple[InterruptKind, ...]] = get_args(InterruptKind)

ApprovalAction = Literal["accept", "reject", "refine", "edit-accept", "ask"]
"""The five-action approval vocabulary; ``ask`` does not exit the suspend."""

CREDENTIAL_RESUME_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["outcome"],
    "properties": {"outcome": {"enum": ["authorized", "declined"]}},
}
"""The one ``resumeSchema`` a ``credential`` interrupt may carry (RFC 0199 §C.3); it is required."""

ConversationId = Annotated[str, StringConstraints(min_length=1, max_length=256)]


def _usable_schema(schema: JsonObject) -> JsonObject:
    try:
        check_schema(schema, what="embedded")
    except ValidationError as exc:
        raise PydanticCustomError("invalid_json_schema", "{reason}", {"reason": exc.message}) from exc
    return schema


SchemaObject = Annotated[JsonObject, AfterValidator(_usable_schema)]
"""A JSON object that is a valid JSON Schema."""

_UNIQUE: Final = Field(json_schema_extra={"uniqueItems": True})


class ApprovalAudience(WireModel):
    """Who should be TOLD about a gate (RFC 0104): a notification hint, never eligibility."""

    subjects: list[str] | None = None
    groups: list[str] | None = None
    roles: list[str] | None = None


class ApprovalData(WireModel):
    """``data`` of ``kind: approval``: an artifact to decide on and the actions allowed."""

    artifact_id: NonEmptyStr
    artifact_type: NonEmptyStr
    title: NonEmptyStr
    actions: Annotated[list[ApprovalAction], Field(min_length=1), _UNIQUE, AfterValidator(require_unique)]
    description: str | None = None
    artifact_data: AnyJson = None
    on_timeout: Literal["reject", "approve", "escalate"] | None = None
    """A hint recorded with the gate; a timeout always resolves the gate rejected (RFC 0223)."""
    required_approvals: PositiveInt | None = None
    approvers_list: list[str] | None = None
    rejection_policy: Literal["single-veto", "majority"] | None = None
    override_bypasses_quorum: bool | None = None
    approver_group_refs: list[str] | None = None
    approver_role_refs: list[str] | None = None
    audience: ApprovalAudience | None = None

    @property
    def quorum(self) -> int:
        """The accepts needed to grant the gate (``requiredApprovals``, default 1)."""
        return self.required_approvals if self.required_approvals is not None else 1

    @property
    def policy(self) -> Literal["single-veto", "majority"]:
        """The rejection policy in force (``rejectionPolicy``, default ``single-veto``)."""
        return self.rejection_policy or "single-veto"


class ClarificationQuestion(WireModel):
    """One question of a clarification; the answer is keyed by ``id``."""

    id: NonEmptyStr
    question: NonEmptyStr
    schema_: SchemaObject | None = Field(default=None, alias="schema")


class ClarificationData(WireModel):
    """``data`` of ``kind: clarification``: questions for missing context."""

    questions: Annotated[list[ClarificationQuestion], Field(min_length=1)]
    context_type: str | None = None


class ExternalEventData(WireModel):
    """``data`` of ``kind: external-event``: what is awaited and how to match it back."""

    event_type: str
    correlation: JsonObject


class CustomData(WireModel):
    """``data`` of ``kind: custom``: the escape hatch for kinds not yet specified."""

    custom_kind: NonEmptyStr
    payload: AnyJson = None


class ConversationStartData(WireModel):
    """``data`` of ``kind: conversation.start``: opens a multi-turn conversation."""

    conversation_id: ConversationId
    title: str | None = None
    initial_prompt: str | None = None


class ConversationExchangeData(WireModel):
    """``data`` of ``kind: conversation.exchange``: one turn; the answer must fit ``outcomeSchema``."""

    conversation_id: ConversationId
    prompt: NonEmptyStr
    outcome_schema: SchemaObject | None = None
    turn_index: NonNegativeInt | None = None


class ConversationCloseData(WireModel):
    """``data`` of ``kind: conversation.close``: ends the conversation."""

    conversation_id: ConversationId
    reason: str | None = None


class LowConfidenceData(WireModel):
    """``data`` of ``kind: low-confidence``: an agent's confidence fell below the threshold."""

    agent_id: AgentId
    threshold: Probability
    observed: Probability
    decision: AnyJson = None


class CredentialData(WireModel):
    """``data`` of ``kind: credential``: a provider authorization is needed; never credential material."""

    provider: NonEmptyStr
    scopes: Annotated[list[NonEmptyStr], _UNIQUE, AfterValidator(require_unique)]
    reason: Literal["missing", "expired", "insufficient_scope"]
    connect_url: HttpsUrl
    credential_ref: JsonObject | None = None
    """A ``credential-reference.schema.json`` object (that schema is not vendored; kept opaque)."""


class _Interrupt(WireModel):
    key: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    """Deterministic re-entry key: the same execution always asks with the same key."""
    resume_schema: SchemaObject | None = None
    timeout_ms: NonNegativeInt | None = None
    """Deadline in milliseconds; ``0`` means no timer."""

    def with_key(self, key: str) -> Self:
        """A copy of this payload carrying ``key``, validated again."""
        return self.model_validate({**dict(self), "key": key})


class ApprovalInterrupt(_Interrupt):
    """``kind: approval``."""

    kind: Literal["approval"] = "approval"
    data: ApprovalData


class ClarificationInterrupt(_Interrupt):
    """``kind: clarification``."""

    kind: Literal["clarification"] = "clarification"
    data: ClarificationData


class ExternalEventInterrupt(_Interrupt):
    """``kind: external-event``."""

    kind: Literal["external-event"] = "external-event"
    data: ExternalEventData


class CustomInterrupt(_Interrupt):
    """``kind: custom``."""

    kind: Literal["custom"] = "custom"
    data: CustomData


class ConversationStartInterrupt(_Interrupt):
    """``kind: conversation.start``."""

    kind: Literal["conversation.start"] = "conversation.start"
    data: ConversationStartData


class ConversationExchangeInterrupt(_Interrupt):
    """``kind: conversation.exchange``."""

    kind: Literal["conversation.exchange"] = "conversation.exchange"
    data: ConversationExchangeData


class ConversationCloseInterrupt(_Interrupt):
    """``kind: conversation.close``."""

    kind: Literal["conversation.close"] = "conversation.close"
    data: ConversationCloseData


class LowConfidenceInterrupt(_Interrupt):
    """``kind: low-confidence``."""

    kind: Literal["low-confidence"] = "low-confidence"
    data: LowConfidenceData


class CredentialInterrupt(_Interrupt):
    """``kind: credential``: ``resume_schema`` is required and must be :data:`CREDENTIAL_RESUME_SCHEMA`."""

    kind: Literal["credential"] = "credential"
    data: CredentialData
    resume_schema: SchemaObject  # required here, optional on the other kinds

    __wire_all_of__: ClassVar[tuple[Mapping[str, Any], ...]] = (
        {"properties": {"resumeSchema": {"const": CREDENTIAL_RESUME_SCHEMA}}},
    )

    @model_validator(mode="after")
    def _fixed_resume_schema(self) -> Self:
        if not json_equal(self.resume_schema, dict(CREDENTIAL_RESUME_SCHEMA)):
            raise PydanticCustomError(
                "wop_rule",
                "a credential interrupt's resumeSchema must be exactly the fixed {outcome} schema",
                {"member": "resumeSchema", "rule": "const"},
            )
        return self


InterruptPayload = Annotated[
    ApprovalInterrupt
    | ClarificationInterrupt
    | ExternalEventInterrupt
    | CustomInterrupt
    | ConversationStartInterrupt
    | ConversationExchangeInterrupt
    | ConversationCloseInterrupt
    | LowConfidenceInterrupt
    | CredentialInterrupt,
    Field(discriminator="kind"),
]
"""Any interrupt payload; ``kind`` selects the class."""

INTERRUPT_PAYLOAD_MODELS: Final[Mapping[InterruptKind, type[_Interrupt]]] = {
    "approval": ApprovalInterrupt,
    "clarification": ClarificationInterrupt,
    "external-event": ExternalEventInterrupt,
    "custom": CustomInterrupt,
    "conversation.start": ConversationStartInterrupt,
    "conversation.exchange": ConversationExchangeInterrupt,
    "conversation.close": ConversationCloseInterrupt,
    "low-confidence": LowConfidenceInterrupt,
    "credential": CredentialInterrupt,
}

_PAYLOAD_ADAPTER: Final[TypeAdapter[InterruptPayload]] = TypeAdapter(InterruptPayload)


def parse_interrupt_payload(value: object) -> InterruptPayload:
    """Validate a wire ``InterruptPayload`` (e.g. an ``interrupt.requested`` payload).

    Raises:
        ValidationError: The document is not a valid payload for its ``kind``; ``details.path``
            is the JSON pointer of the first failure (``/data/actions``).
    """
    try:
        return _PAYLOAD_ADAPTER.validate_python(value, context=WIRE_CONTEXT, by_alias=True, by_name=False)
    except pydantic.ValidationError as exc:
        raise validation_error_from(exc, what="interrupt payload", union_tag="kind") from exc
