"""What one interrupt kind declares, together: :class:`InterruptKind`.

A kind is the unit the host and the reviewer page look up (:mod:`wop_langgraph.kinds.registry`)
instead of branching on kind names. The nine kinds OpenWOP specifies are declared in this
package, one module each; a new kind rides OpenWOP's ``custom`` kind (the wire enum is closed)
under its own ``customKind``, and declares the same things in one module of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import pydantic

from wop_langgraph.kinds.review.base import GatePage
from wop_langgraph.protocol.approval import ApprovalResume
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.payloads import InterruptKind as WireKind
from wop_langgraph.protocol.resume_check import ResumeRule, check_with_rule, no_rule
from wop_langgraph.protocol.snapshot import WaitingStatus

__all__ = ["OTHER_TIMEOUT", "InterruptKind", "ResumeRule", "no_alias", "no_change"]

OTHER_TIMEOUT: Final[Mapping[str, Any]] = {"reason": "timeout"}
"""The resolution of a timed-out interrupt that is not a vote (it expires)."""


def no_alias(resolution: Mapping[str, Any]) -> str | None:
    """No legacy event beside ``interrupt.resolved``."""
    return None


def no_change(value: Any, received_at: datetime) -> Any:
    """The resume value is recorded as given."""
    return value


@dataclass(frozen=True, slots=True, eq=False)
class InterruptKind:
    """One interrupt kind: its payload, the status it puts a run in, how it is resumed, the
    node call that raises it and the reviewer page's form for it.

    For a kind OpenWOP specifies, ``name`` is its wire ``kind`` and ``payload_model`` its wire
    payload class; for a new kind (``wire_kind="custom"``), ``name`` is its ``customKind`` and
    ``payload_model`` the model of ``data.payload``.
    """

    name: str
    payload_model: type[pydantic.BaseModel]
    waiting_status: WaitingStatus
    """The run's status while it waits on this kind (``RunSnapshot.status``); for the kinds
    OpenWOP specifies, the spec's table (:func:`~wop_langgraph.protocol.waiting_status_for`)."""
    review: GatePage
    """How the reviewer page renders the interrupt and turns a submitted form into a resume value."""
    node_call: Callable[..., Any]
    """The node-side call that raises the interrupt (e.g. :func:`~wop_langgraph.nodes.ask`)."""
    resume_rule: ResumeRule = no_rule
    """The kind's own check of a resume value (before the payload's ``resumeSchema``); it
    returns the parsed vote when the kind is decided by a quorum (approval), else ``None``."""
    wire_kind: WireKind = "custom"
    quorum: bool = False
    """Decided by the votes of eligible approvers (``requiredApprovals``, ``approversList``,
    ``rejectionPolicy``): who may answer is checked, and the resolver tallies the votes its
    ``resume_rule`` parses. Only ``approval``'s data carries those members."""
    prepare_resume: Callable[[Any, datetime], Any] = no_change
    """The resume value as recorded (and then checked), given when it was received."""
    timeout_resolution: Mapping[str, Any] = field(default_factory=lambda: OTHER_TIMEOUT)
    """The resolution recorded when the interrupt's deadline passes."""
    requested_alias: str | None = None
    """The legacy event emitted beside ``interrupt.requested`` (``approval.requested``), if any."""
    resolved_alias: Callable[[Mapping[str, Any]], str | None] = no_alias
    """The legacy event emitted beside ``interrupt.resolved``, for a resolution."""
    suspend_reason: str = ""
    """``node.suspended``'s ``reason`` (default: the name)."""

    def __post_init__(self) -> None:
        if not self.suspend_reason:
            object.__setattr__(self, "suspend_reason", self.name)

    def check_resume(
        self, payload: Mapping[str, Any], value: Any, received_at: datetime
    ) -> ApprovalResume | None:
        """Validate ``value`` as the resume of ``payload``: the kind's rule, then ``resumeSchema``.

        Raises:
            ValidationError: the value does not fit (nothing is written; ``details.path`` names
                the member).
        """
        return check_with_rule(self.resume_rule, payload, value, received_at)

    def data_of(self, payload: Mapping[str, Any]) -> pydantic.BaseModel:
        """A new kind's ``data.payload`` as its ``payload_model`` (validated).

        Raises:
            ValidationError: the payload does not fit the model.
        """
        try:
            return self.payload_model.model_validate(payload.get("data", {}).get("payload"))
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = "/".join(str(p) for p in first["loc"])
            raise ValidationError(
                f"{self.name} payload: {first['msg']}", details={"path": f"/data/payload/{where}"}
            ) from exc
