"""Payloads of the run events the project emits (run-event-payloads.schema.json, root ``_typeIndex``).

Each class mirrors one official def: required members, bounds, enums and id grammars. All of
them are :class:`~wop_langgraph.protocol._base.HatchModel`\\ s, because every one of these defs
admits ``openwop-*`` / ``x-*`` / ``vendor.*`` extension members (carried, never interpreted)
while refusing any other unknown member.

``interrupt.resolved`` adds the two rules the official def states only in prose: recording
``action: refine`` requires ``refineFeedback`` and ``action: edit-accept`` requires
``editedArtifactData``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from pydantic import model_validator

from wop_langgraph.protocol._base import AnyJson, HatchModel, member_error
from wop_langgraph.protocol._types import (
    JsonObject,
    NonEmptyStr,
    NonNegativeInt,
    PositiveInt,
    Probability,
    ShortReason,
)
from wop_langgraph.protocol.approval import RefineFeedback
from wop_langgraph.protocol.errors import WopError
from wop_langgraph.protocol.ids import AgentId, NodeId, TenantBoundId, TypeId, WorkflowId
from wop_langgraph.protocol.payloads import InterruptKind
from wop_langgraph.protocol.subject import RunOwner, Subject

__all__ = [
    "AgentDecided",
    "ErrorObject",
    "InterruptResolved",
    "NodeCompleted",
    "NodeFailed",
    "NodeResumed",
    "NodeStarted",
    "NodeSuspended",
    "ResolvedAction",
    "ResolvedDecision",
    "RunCancelled",
    "RunCompleted",
    "RunFailed",
    "RunStarted",
    "node_suspended_extensions",
]

_DurationMs = NonNegativeInt

ResolvedAction = Literal["accept", "reject", "refine", "edit-accept", "timeout"]
"""The action applied at resolution; ``timeout`` is minted only by the host's timer."""
ResolvedDecision = Literal["granted", "rejected", "overridden"]
"""The governance outcome of an approval-kind resolution."""


class ErrorObject(HatchModel):
    """The ``_errorObject`` of ``node.failed`` / ``run.failed``: a code, a message, and whether to retry.

    ``code`` is any non-empty string here, as in the official def; the producer rule (registered
    or vendor code) is the host's to keep. ``approval_rejected`` is used in this position.
    """

    code: NonEmptyStr
    message: NonEmptyStr
    details: JsonObject | None = None
    retryable: bool | None = None

    @classmethod
    def from_error(cls, error: WopError) -> ErrorObject:
        """The error object for a :class:`WopError` (code, message, retryable, details)."""
        return cls.model_validate(error.error_object())


class InterruptResolved(HatchModel):
    """``interrupt.resolved``: how an interrupt ended, and who ended it."""

    node_id: NodeId
    interrupt_id: TenantBoundId
    kind: InterruptKind | None = None
    reason: ShortReason | None = None
    """Why it ended without a human, when it did (``timeout``, ``quorum-reject``, ...)."""
    resume_value: AnyJson = None
    resolved_by: Subject | None = None
    """The resolver's Subject; on a timeout the host's own subject, or absent."""
    decision: ResolvedDecision | None = None
    action: ResolvedAction | None = None
    refine_feedback: RefineFeedback | None = None
    edited_artifact_data: AnyJson = None

    __wire_all_of__: ClassVar[tuple[Mapping[str, Any], ...]] = (
        {
            "if": {"properties": {"action": {"const": "refine"}}, "required": ["action"]},
            "then": {"required": ["refineFeedback"]},
        },
        {
            "if": {"properties": {"action": {"const": "edit-accept"}}, "required": ["action"]},
            "then": {"required": ["editedArtifactData"]},
        },
    )

    @model_validator(mode="after")
    def _action_carries_its_member(self) -> Self:
        if self.action == "refine" and self.refine_feedback is None:
            raise member_error("refineFeedback", "recording action 'refine' requires refineFeedback")
        if self.action == "edit-accept" and "edited_artifact_data" not in self.model_fields_set:
            raise member_error(
                "editedArtifactData", "recording action 'edit-accept' requires editedArtifactData"
            )
        return self


class NodeSuspended(HatchModel):
    """``node.suspended``: a node called ``interrupt()`` and the run is waiting."""

    node_id: NodeId
    interrupt_id: TenantBoundId
    kind: InterruptKind | None = None
    reason: ShortReason | None = None
    key: NonEmptyStr | None = None


class NodeStarted(HatchModel):
    """``node.started``: a node began executing; ``typeId`` is its node type (``core.ai.callPrompt``)."""

    node_id: NodeId
    type_id: TypeId
    attempt: NonNegativeInt | None = None


class NodeCompleted(HatchModel):
    """``node.completed``: a node finished successfully."""

    node_id: NodeId
    outputs: JsonObject | None = None
    duration_ms: _DurationMs | None = None


class NodeFailed(HatchModel):
    """``node.failed``: a node failed for good (retries exhausted, or never retried)."""

    node_id: NodeId
    error: ErrorObject
    attempts: PositiveInt | None = None


class NodeResumed(HatchModel):
    """``node.resumed``: a suspended node received its resume value and continues."""

    node_id: NodeId
    interrupt_id: TenantBoundId | None = None
    resume_value: AnyJson = None


class RunStarted(HatchModel):
    """``run.started``: execution began; ``owner`` echoes the snapshot's owner."""

    workflow_id: WorkflowId
    inputs: JsonObject | None = None
    transport: Literal["rest", "mcp", "a2a", "ui"] | None = None
    engine_version: NonNegativeInt | None = None
    owner: RunOwner | None = None
    tags: list[str] | None = None
    metadata: JsonObject | None = None


class RunCompleted(HatchModel):
    """``run.completed``: the run succeeded; ``outputs`` is required (``{}`` is fine)."""

    outputs: JsonObject
    duration_ms: _DurationMs | None = None


class RunFailed(HatchModel):
    """``run.failed``: the run failed; ``failedNodeId`` names the node when one caused it."""

    error: ErrorObject
    failed_node_id: NodeId | None = None
    duration_ms: _DurationMs | None = None


class RunCancelled(HatchModel):
    """``run.cancelled``: the run was cancelled (``reason: parent-cancelled`` for a cascade)."""

    reason: str | None = None
    cancelled_by: str | None = None
    duration_ms: _DurationMs | None = None
    parent_run_id: TenantBoundId | None = None


class AgentDecided(HatchModel):
    """``agent.decided``: an agent produced a decision, optionally with a confidence in ``[0, 1]``."""

    agent_id: AgentId
    decision: AnyJson
    confidence: Probability | None = None
    causation_host_id: NonEmptyStr | None = None


#: ``LowConfidenceData`` members the low-confidence contract also wants on ``node.suspended``.
_LOW_CONFIDENCE_MEMBERS = ("agentId", "threshold", "observed")


def node_suspended_extensions(kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """Extension members of ``node.suspended`` for an interrupt of ``kind`` with ``data``.

    The low-confidence contract (conformance-agent-low-confidence) expects ``agentId``,
    ``threshold`` and ``observed`` on ``node.suspended``, whose official def is closed; its
    extension hatch is where they may go, as ``x-agentId``, ``x-threshold`` and ``x-observed``
    (the same values as the interrupt's ``LowConfidenceData``). Other kinds get none.
    """
    if kind != "low-confidence":
        return {}
    return {f"x-{name}": data[name] for name in _LOW_CONFIDENCE_MEMBERS if name in data}
