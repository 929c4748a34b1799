"""The v2 ``RunSnapshot`` (``GET /runs/{runId}``) and which waiting status each interrupt kind implies.

The v2 snapshot schema is not vendored (SOURCES.md); the shape follows runs.md §Snapshot as
condensed in SPEC_NOTES §8: closed, ``owner`` with a Subject, ``eventLogSchemaVersion`` (a v2
host writes ``3``), an integer ``engineVersion``, and the v1 field bounds where v2 kept them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Final, Literal, get_args

from annotated_types import Ge, MaxLen
from pydantic import StringConstraints

from wop_langgraph.protocol._base import WIRE_REQUIRED, WireModel
from wop_langgraph.protocol._types import AS_INT as _AS_INT
from wop_langgraph.protocol._types import DateTimeStr, JsonObject, NonEmptyStr, NonNegativeInt
from wop_langgraph.protocol.ids import NodeId, TenantBoundId, WorkflowId
from wop_langgraph.protocol.payloads import InterruptKind
from wop_langgraph.protocol.subject import RunOwner

__all__ = [
    "EVENT_LOG_SCHEMA_VERSION",
    "EXTENSION_KEY_PATTERN",
    "RESULT_EXTENSION",
    "RUN_STATUSES",
    "TERMINAL_STATUSES",
    "WAITING_STATUSES",
    "RunError",
    "RunSnapshot",
    "RunStatus",
    "WaitingStatus",
    "waiting_status_for",
]

RunStatus = Literal[
    "pending",
    "running",
    "paused",
    "waiting-approval",
    "waiting-input",
    "waiting-external",
    "completed",
    "failed",
    "cancelling",
    "cancelled",
]
WaitingStatus = Literal["waiting-approval", "waiting-input", "waiting-external"]
RUN_STATUSES: Final[tuple[RunStatus, ...]] = get_args(RunStatus)
WAITING_STATUSES: Final[frozenset[RunStatus]] = frozenset(get_args(WaitingStatus))
TERMINAL_STATUSES: Final[frozenset[RunStatus]] = frozenset({"completed", "failed", "cancelled"})

EVENT_LOG_SCHEMA_VERSION: Final = 3
"""The event-log schema version a v2 host writes."""

EXTENSION_KEY_PATTERN: Final = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9]*(-[a-z0-9]+)*$"
"""Keys of the v2 snapshot's ``extensions`` seat (``<org>.<name>``, RFC 0169 §A.4; the pattern of
the official v2 ``run-snapshot.schema.json``)."""

RESULT_EXTENSION: Final = "wop-langgraph.result"
"""The ``extensions`` member that carries a completed run's ``outputs`` (``{"outputs": {...}}``):
the closed v2 snapshot has no ``outputs`` member, and ``extensions`` is its seat for host state."""

ExtensionKey = Annotated[str, StringConstraints(pattern=EXTENSION_KEY_PATTERN)]

_WAITING_STATUS: Final[Mapping[InterruptKind, WaitingStatus]] = {
    "approval": "waiting-approval",
    "low-confidence": "waiting-approval",
    "conversation.start": "waiting-approval",
    "conversation.exchange": "waiting-approval",
    "conversation.close": "waiting-approval",
    "clarification": "waiting-input",
    "credential": "waiting-input",
    # The spec names no status for `custom`; the project treats it as waiting for input.
    "custom": "waiting-input",
    "external-event": "waiting-external",
}


def waiting_status_for(kind: InterruptKind) -> WaitingStatus:
    """The snapshot status while a run waits on an interrupt of ``kind`` (ARCHITECTURE.md).

    Raises:
        KeyError: ``kind`` is not an interrupt kind.
    """
    return _WAITING_STATUS[kind]


class RunError(WireModel):
    """The snapshot's ``error`` on a failed run: a code to route on and a message."""

    code: NonEmptyStr
    message: NonEmptyStr
    details: JsonObject | None = None


class RunSnapshot(WireModel):
    """The projected state of a run."""

    run_id: TenantBoundId
    workflow_id: WorkflowId
    status: RunStatus
    owner: RunOwner
    event_log_schema_version: Annotated[int, Ge(2), _AS_INT, WIRE_REQUIRED] = EVENT_LOG_SCHEMA_VERSION
    engine_version: NonNegativeInt | None = None
    current_node_id: NodeId | None = None
    """The node holding the interrupt while the run waits."""
    error: RunError | None = None
    configurable: JsonObject | None = None
    tags: Annotated[list[Annotated[str, StringConstraints(max_length=256)]], MaxLen(100)] | None = None
    metadata: JsonObject | None = None
    started_at: DateTimeStr | None = None
    completed_at: DateTimeStr | None = None
    extensions: dict[ExtensionKey, JsonObject] | None = None
    """Host state keyed ``<org>.<name>``; this host's :data:`RESULT_EXTENSION` holds the outputs
    of a completed run."""
