"""The run event envelope (``RunEventDoc``, run-event.schema.json) and the type → payload map.

:class:`RunEvent` is the closed envelope every durable event travels in. Its ``payload`` is kept
as the JSON document (so a stored event re-serialises exactly), and for every type listed in
:data:`EVENT_PAYLOAD_MODELS` it is validated against that type's payload model. Unknown and
vendor types are carried with any payload, as consumers must tolerate them.

:func:`make_event` is the one way the project builds an event: it checks that the payload model
fits the type and lifts ``payload.nodeId`` to the envelope (the conformance suite reads
``e.nodeId ?? e.payload.nodeId``, so both are set).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Final, Self, get_args

import pydantic
from pydantic import AfterValidator, TypeAdapter, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from wop_langgraph.protocol._base import WIRE_CONTEXT, AnyJson, WireModel, validation_error_from
from wop_langgraph.protocol._types import DateTimeStr, NonNegativeInt, PositiveInt
from wop_langgraph.protocol.conversation import ConversationClosed, ConversationExchanged, ConversationOpened
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.event_payloads import (
    AgentDecided,
    InterruptResolved,
    NodeCompleted,
    NodeFailed,
    NodeResumed,
    NodeStarted,
    NodeSuspended,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunStarted,
)
from wop_langgraph.protocol.ids import EventId, NodeId, TenantBoundId
from wop_langgraph.protocol.payloads import InterruptPayload

__all__ = [
    "EVENT_PAYLOAD_MODELS",
    "EVENT_TYPE_PATTERN",
    "EventType",
    "RunEvent",
    "is_event_type",
    "make_event",
    "parse_event_payload",
]

EVENT_TYPE_PATTERN: Final = (
    r"^(?!openwop\.)[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9]*(-[a-z0-9]+)*(\.[a-z][a-z0-9]*(-[a-z0-9]+)*)?$"
)
"""A registered type or a vendor ``<org>.<name>``; ``openwop.`` is reserved.

Every registered name in run-event.schema.json's closed enum also fits this pattern, so the
official ``oneOf [enum, pattern]`` accepts exactly what this pattern accepts.
"""
_EVENT_TYPE_RE: Final = re.compile(EVENT_TYPE_PATTERN)

_INTERRUPT_PAYLOADS: Final[tuple[type[WireModel], ...]] = tuple(get_args(get_args(InterruptPayload)[0]))

EVENT_PAYLOAD_MODELS: Final[Mapping[str, tuple[type[WireModel], ...]]] = {
    "interrupt.requested": _INTERRUPT_PAYLOADS,
    "interrupt.resolved": (InterruptResolved,),
    # Legacy kind-specific types: `$ref` aliases of the two interrupt payloads (RFC 0171 §A.4 E4).
    "approval.requested": _INTERRUPT_PAYLOADS,
    "clarification.requested": _INTERRUPT_PAYLOADS,
    "approval.received": (InterruptResolved,),
    "approval.granted": (InterruptResolved,),
    "approval.rejected": (InterruptResolved,),
    "approval.overridden": (InterruptResolved,),
    "clarification.resolved": (InterruptResolved,),
    "node.started": (NodeStarted,),
    "node.completed": (NodeCompleted,),
    "node.failed": (NodeFailed,),
    "node.suspended": (NodeSuspended,),
    "node.resumed": (NodeResumed,),
    "run.started": (RunStarted,),
    "run.completed": (RunCompleted,),
    "run.failed": (RunFailed,),
    "run.cancelled": (RunCancelled,),
    "agent.decided": (AgentDecided,),
    "conversation.opened": (ConversationOpened,),
    "conversation.exchanged": (ConversationExchanged,),
    "conversation.closed": (ConversationClosed,),
}
"""Event type → the payload model(s) it carries, for every type this project emits."""

_ADAPTERS: Final[Mapping[str, TypeAdapter[Any]]] = {
    event_type: TypeAdapter(InterruptPayload if models is _INTERRUPT_PAYLOADS else models[0])
    for event_type, models in EVENT_PAYLOAD_MODELS.items()
}


def is_event_type(value: str) -> bool:
    """Whether ``value`` is a legal event ``type`` (registered, or a vendor ``<org>.<name>``)."""
    return _EVENT_TYPE_RE.fullmatch(value) is not None


def _check_event_type(value: str) -> str:
    if not is_event_type(value):
        raise ValueError("must be a registered event type or a vendor <org>.<name> (not openwop.*)")
    return value


EventType = Annotated[
    str,
    AfterValidator(_check_event_type),
    WithJsonSchema({"type": "string", "pattern": EVENT_TYPE_PATTERN}),
]


def parse_event_payload(event_type: str, payload: object) -> WireModel:
    """Validate ``payload`` as the payload of ``event_type``.

    Raises:
        ValidationError: ``event_type`` is not one the project models, or the payload does not
            fit it (``details.path`` is relative to the payload).
    """
    adapter = _ADAPTERS.get(event_type)
    if adapter is None:
        raise ValidationError(
            f"no payload model for event type {event_type!r}",
            details={"schema": "event payload", "path": "", "rule": "type"},
        )
    try:
        model: WireModel = adapter.validate_python(
            payload, context=WIRE_CONTEXT, by_alias=True, by_name=False
        )
    except pydantic.ValidationError as exc:
        tag = "kind" if EVENT_PAYLOAD_MODELS[event_type] is _INTERRUPT_PAYLOADS else None
        raise validation_error_from(exc, what=f"{event_type} payload", union_tag=tag) from exc
    return model


class RunEvent(WireModel):
    """One durable run event, as stored and as streamed (``data:`` of an SSE frame)."""

    event_id: EventId
    run_id: TenantBoundId
    node_id: NodeId | None = None
    type: EventType
    payload: AnyJson
    timestamp: DateTimeStr
    sequence: NonNegativeInt
    """Per-run order from 0; the SSE ``id:``."""
    schema_version: PositiveInt
    engine_version: NonNegativeInt | None = None
    causation_id: EventId | None = None

    @model_validator(mode="after")
    def _payload_fits_type(self) -> Self:
        if self.type not in EVENT_PAYLOAD_MODELS:
            return self
        try:
            parse_event_payload(self.type, self.payload)
        except ValidationError as exc:
            details = exc.details or {}
            raise PydanticCustomError(
                "wop_rule",
                "{reason}",
                {
                    "member": "payload",
                    "pointer": str(details.get("path", "")),
                    "rule": str(details.get("rule", "invalid")),
                    "reason": exc.message,
                },
            ) from exc
        payload_node = self.payload.get("nodeId") if isinstance(self.payload, dict) else None
        if self.node_id is not None and payload_node is not None and payload_node != self.node_id:
            raise PydanticCustomError(
                "wop_rule",
                "nodeId differs between the envelope and the payload",
                {"member": "nodeId", "rule": "const"},
            )
        return self

    def typed_payload(self) -> WireModel:
        """The payload as its model.

        Raises:
            ValidationError: The type has no payload model here (unknown or vendor type).
        """
        return parse_event_payload(self.type, self.payload)


def make_event(
    event_type: str,
    payload: WireModel,
    *,
    event_id: str,
    run_id: str,
    sequence: int,
    timestamp: str,
    node_id: str | None = None,
    schema_version: int = 1,
    engine_version: int | None = None,
    causation_id: str | None = None,
) -> RunEvent:
    """Build a :class:`RunEvent` from a payload model.

    Args:
        event_type: A type in :data:`EVENT_PAYLOAD_MODELS`.
        payload: The payload model; must be one of the models for ``event_type``.
        event_id: A host-minted id (see :func:`~wop_langgraph.protocol.ids.mint_opaque`).
        run_id: The tenant-bound run id.
        sequence: The event's per-run sequence number.
        timestamp: RFC 3339 time of the event (the caller's clock).
        node_id: The node for node-scoped events; defaults to ``payload.nodeId`` when it has one.
        schema_version: The payload schema version (``1``).
        engine_version: The engine version, if the host reports one.
        causation_id: The eventId that caused this event, if any.

    Raises:
        ValidationError: The payload model does not fit the type, ``node_id`` contradicts the
            payload's ``nodeId``, or a field breaks the envelope's grammar.
    """
    models = EVENT_PAYLOAD_MODELS.get(event_type)
    if models is None or not isinstance(payload, models):
        expected = ", ".join(m.__name__ for m in models) if models else "a modelled event type"
        raise ValidationError(
            f"{type(payload).__name__} is not a payload of {event_type!r} (expected {expected})",
            details={"schema": "run event", "path": "/payload", "rule": "type"},
        )
    payload_node = getattr(payload, "node_id", None)
    if node_id is None and isinstance(payload_node, str):
        node_id = payload_node
    document: dict[str, Any] = {
        "eventId": event_id,
        "runId": run_id,
        "type": event_type,
        "payload": payload.to_wire(),
        "timestamp": timestamp,
        "sequence": sequence,
        "schemaVersion": schema_version,
    }
    optional = {"nodeId": node_id, "engineVersion": engine_version, "causationId": causation_id}
    document.update({k: v for k, v in optional.items() if v is not None})
    return RunEvent.from_wire(document, what="run event")
