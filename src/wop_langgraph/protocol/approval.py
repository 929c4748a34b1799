"""Approval resume values (``ApprovalResume``, interrupt.md §Approval): what a resolver sends back.

One class per action, discriminated by ``action``:

==============  =========================================
``accept``      ``feedback?``
``reject``      ``feedback?``
``refine``      ``refineFeedback`` (required)
``edit-accept`` ``editedArtifactData`` (required, any JSON)
``ask``         ``feedback?`` (the question); does not exit the suspend
==============  =========================================

Every variant requires ``decidedAt`` (an RFC 3339 date-time) and may carry ``decidedBy`` (opaque)
and ``voter`` (the quorum tests tell voters apart by it). ``timeout`` is never a resume: only
the host's own timer records it, so :func:`parse_approval_resume` refuses it from a caller.

The official v2 schemas contain no ``ApprovalResume`` schema; these rules come from
interrupt.md's table and v1's ``ApprovalResume`` type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

import pydantic
from pydantic import Field, TypeAdapter

from wop_langgraph.protocol._base import WIRE_CONTEXT, AnyJson, WireModel, validation_error_from
from wop_langgraph.protocol._types import DateTimeStr, NonEmptyStr
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.payloads import ApprovalAction, ApprovalData

__all__ = [
    "AcceptResume",
    "ApprovalResume",
    "AskResume",
    "EditAcceptResume",
    "RefineFeedback",
    "RefineResume",
    "RejectResume",
    "check_action_allowed",
    "normalize_legacy_decision",
    "parse_approval_resume",
]


class RefineFeedback(WireModel):
    """Structured feedback for ``refine`` (closed in v2): what to change, and where."""

    scope: Literal["whole", "section", "items"]
    section_path: str | None = None
    """JSON path into ``artifactData`` when ``scope`` is ``section``."""
    item_ids: list[str] | None = None
    """Item identifiers when ``scope`` is ``items``."""
    tags: list[str] | None = None
    text: str | None = None


class _Resume(WireModel):
    decided_at: DateTimeStr
    """When the decision was made (RFC 3339); every resume carries it."""
    decided_by: NonEmptyStr | None = None
    """Who decided, as the caller states it; opaque. The host records its own Subject anyway
    (and counts the vote for it, unless the caller holds ``approvals:delegate``: host/delegation.py)."""
    voter: NonEmptyStr | None = None
    """The voter a delegate casts the vote for (``approvals:delegate``; the conformance suite casts
    a quorum's votes with one credential); from anyone else it is recorded and ignored."""
    feedback: str | None = None


class AcceptResume(_Resume):
    """Grant the gate."""

    action: Literal["accept"] = "accept"


class RejectResume(_Resume):
    """Reject the gate."""

    action: Literal["reject"] = "reject"


class RefineResume(_Resume):
    """Send the artifact back with structured feedback."""

    action: Literal["refine"] = "refine"
    refine_feedback: RefineFeedback


class EditAcceptResume(_Resume):
    """Grant the gate with an edited artifact (any JSON, ``null`` included)."""

    action: Literal["edit-accept"] = "edit-accept"
    edited_artifact_data: AnyJson


class AskResume(_Resume):
    """Ask a question about the artifact; the gate stays pending."""

    action: Literal["ask"] = "ask"


ApprovalResume = Annotated[
    AcceptResume | RejectResume | RefineResume | EditAcceptResume | AskResume,
    Field(discriminator="action"),
]
"""Any approval resume value; ``action`` selects the class."""

_RESUME_ADAPTER: Final[TypeAdapter[ApprovalResume]] = TypeAdapter(ApprovalResume)
_LEGACY_HOST_INTERNAL: Final = frozenset({"timeout", "cancelled"})


def parse_approval_resume(value: object, *, default_decided_at: str | None = None) -> ApprovalResume:
    """Validate an approval ``resumeValue`` sent by a resolver.

    Args:
        value: The ``resumeValue`` document.
        default_decided_at: If given, used as ``decidedAt`` when the caller sent none (a host
            that chooses to stamp the time of receipt). By default ``decidedAt`` is required.

    Returns:
        The typed resume value.

    Raises:
        ValidationError: The value is not an object, its ``action`` is ``timeout`` (host-internal,
            never a resume), unknown or missing, or its members do not fit the action
            (``refine`` without ``refineFeedback``, ``edit-accept`` without
            ``editedArtifactData``, a missing ``decidedAt``, an unknown member, ...).
    """
    if not isinstance(value, Mapping):
        raise ValidationError(
            "an approval resumeValue must be a JSON object",
            details={"schema": "approval resume", "path": "", "rule": "type"},
        )
    if value.get("action") == "timeout":
        raise ValidationError(
            "action 'timeout' is recorded only by the host's own timer and is never accepted in a resume",
            details={"schema": "approval resume", "path": "/action", "rule": "host-internal"},
        )
    if default_decided_at is not None and "decidedAt" not in value:
        value = {**value, "decidedAt": default_decided_at}
    try:
        return _RESUME_ADAPTER.validate_python(value, context=WIRE_CONTEXT, by_alias=True, by_name=False)
    except pydantic.ValidationError as exc:
        raise validation_error_from(exc, what="approval resume", union_tag="action") from exc


def check_action_allowed(resume: ApprovalResume, data: ApprovalData) -> None:
    """Refuse an action the gate does not offer (a host MUST enforce ``actions`` on resolve).

    Raises:
        ValidationError: ``resume.action`` is not in ``data.actions``.
    """
    allowed: list[ApprovalAction] = list(data.actions)
    if resume.action not in allowed:
        raise ValidationError(
            f"action {resume.action!r} is not allowed by this gate; allowed: {', '.join(allowed)}",
            details={"schema": "approval resume", "path": "/action", "rule": "enum", "allowed": allowed},
        )


def normalize_legacy_decision(value: Mapping[str, Any]) -> dict[str, Any]:
    """Map a v1 legacy ``{decision: ...}`` resume onto the five-action vocabulary.

    ``approved`` → ``accept``; ``rejected`` with a non-empty ``feedback`` → ``refine`` with
    ``refineFeedback {scope: whole, text: feedback}``; ``rejected`` otherwise → ``reject``. A
    value that already has an ``action`` is returned unchanged (as a new dict). The result still
    has to pass :func:`parse_approval_resume`.

    Raises:
        ValidationError: ``decision`` is ``timeout`` or ``cancelled`` (host-internal sentinels,
            never a resume) or any other unknown value.
    """
    if "action" in value or "decision" not in value:
        return dict(value)
    rest = {k: v for k, v in value.items() if k != "decision"}
    decision = value["decision"]
    if decision == "approved":
        return {**rest, "action": "accept"}
    if decision == "rejected":
        feedback = rest.get("feedback")
        if isinstance(feedback, str) and feedback.strip():
            del rest["feedback"]
            return {**rest, "action": "refine", "refineFeedback": {"scope": "whole", "text": feedback}}
        return {**rest, "action": "reject"}
    rule = "host-internal" if decision in _LEGACY_HOST_INTERNAL else "enum"
    raise ValidationError(
        f"legacy decision {decision!r} is not a resume; expected 'approved' or 'rejected'",
        details={"schema": "approval resume", "path": "/decision", "rule": rule},
    )
