"""The run snapshot, the waiting status per kind, and the error envelope."""

from __future__ import annotations

from typing import Any

import pytest

from tests.official import official_schema, validate_official
from tests.protocol.cases import RUN_ID, SUBJECT
from tests.protocol.strategies import KINDS
from wop_langgraph.protocol import (
    EVENT_LOG_SCHEMA_VERSION,
    REGISTERED_ERROR_CODES,
    ErrorEnvelope,
    RunError,
    RunOwner,
    RunSnapshot,
    Subject,
    ValidationError,
    WopError,
    waiting_status_for,
)
from wop_langgraph.protocol.errors import ApprovalRejected, UnsupportedStreamMode

V1_SNAPSHOT = "https://openwop.dev/spec/v1/run-snapshot.schema.json"
OWNER = RunOwner(tenant="acme", subject=Subject.from_wire(SUBJECT))


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("approval", "waiting-approval"),
        ("low-confidence", "waiting-approval"),
        ("conversation.start", "waiting-approval"),
        ("conversation.exchange", "waiting-approval"),
        ("conversation.close", "waiting-approval"),
        ("clarification", "waiting-input"),
        ("credential", "waiting-input"),
        ("custom", "waiting-input"),
        ("external-event", "waiting-external"),
    ],
)
def test_waiting_status_for(kind: Any, status: str) -> None:
    assert waiting_status_for(kind) == status


def test_every_kind_has_a_waiting_status() -> None:
    statuses = official_schema(V1_SNAPSHOT)["properties"]["status"]["enum"]
    for kind in KINDS:
        assert waiting_status_for(kind) in statuses


def test_status_enum_is_the_official_one() -> None:
    from wop_langgraph.protocol.snapshot import RUN_STATUSES

    assert list(RUN_STATUSES) == official_schema(V1_SNAPSHOT)["properties"]["status"]["enum"]


def test_snapshot_round_trip_and_pieces_pass_the_official_defs() -> None:
    snapshot = RunSnapshot(
        run_id=RUN_ID,
        workflow_id="review:v1",
        status="failed",
        owner=OWNER,
        engine_version=1,
        current_node_id="gate",
        error=RunError(code="approval_rejected", message="gate rejected"),
        configurable={"version": 1, "run": {"recursionLimit": 25}},
        tags=["a"],
        metadata={"m": 1},
        started_at="2025-06-01T12:00:00Z",
        completed_at="2025-06-01T12:01:00Z",
    )
    doc = snapshot.to_wire()
    assert doc["eventLogSchemaVersion"] == EVENT_LOG_SCHEMA_VERSION == 3
    assert RunSnapshot.from_wire(doc).to_wire() == doc
    # No v2 snapshot schema is vendored: judge the parts that have official definitions.
    validate_official(
        "run-event-payloads.schema.json", doc["owner"], pointer="/$defs/runStarted/properties/owner"
    )
    validate_official(V1_SNAPSHOT, doc["error"], pointer="/properties/error")
    validate_official(V1_SNAPSHOT, doc["status"], pointer="/properties/status")
    validate_official(V1_SNAPSHOT, doc["tags"], pointer="/properties/tags")
    validate_official("configurable.schema.json", doc["configurable"])


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"status": "waiting-clarification"}, "/status"),
        ({"eventLogSchemaVersion": 1}, "/eventLogSchemaVersion"),
        ({"engineVersion": "1.0"}, "/engineVersion"),
        ({"interrupt": {"interruptToken": "t"}}, "/interrupt"),
        ({"owner": {"tenant": "acme", "principal": "p"}}, "/owner/subject"),
        ({"tags": ["t"] * 101}, "/tags"),
        ({"startedAt": "noon"}, "/startedAt"),
        # The v2 extension seat: keys <org>.<name>, each value an object.
        ({"extensions": {"Bad": {}}}, "/extensions/Bad/[key]"),
        ({"extensions": {"wop-langgraph.result": 3}}, "/extensions/wop-langgraph.result"),
    ],
)
def test_snapshot_refusals(change: dict[str, Any], path: str) -> None:
    doc = {**RunSnapshot(run_id=RUN_ID, workflow_id="wf", status="running", owner=OWNER).to_wire(), **change}
    with pytest.raises(ValidationError) as caught:
        RunSnapshot.from_wire(doc)
    assert caught.value.details is not None and caught.value.details["path"] == path


def test_event_log_schema_version_is_required_on_the_wire() -> None:
    doc = RunSnapshot(run_id=RUN_ID, workflow_id="wf", status="running", owner=OWNER).to_wire()
    del doc["eventLogSchemaVersion"]
    with pytest.raises(ValidationError) as caught:
        RunSnapshot.from_wire(doc)
    assert caught.value.details is not None and caught.value.details["path"] == "/eventLogSchemaVersion"


def test_registered_codes_are_the_official_enum() -> None:
    enum = official_schema("error-envelope.schema.json")["properties"]["error"]["oneOf"][0]["enum"]
    assert set(enum) == REGISTERED_ERROR_CODES and len(enum) == len(REGISTERED_ERROR_CODES)
    assert "approval_rejected" not in REGISTERED_ERROR_CODES


def _all_errors(cls: type[WopError]) -> list[type[WopError]]:
    return [cls, *(s for sub in cls.__subclasses__() for s in _all_errors(sub))]


def _envelope_errors() -> list[type[WopError]]:
    """The package's errors that can reach an HTTP envelope.

    Not: classes defined by tests, ``ApprovalRejected`` (an event error only), and the node-level
    errors of ``wop_langgraph.definitions`` (raised inside nodes, recorded on ``node.failed``).
    """
    return [
        c
        for c in _all_errors(WopError)
        if c is not ApprovalRejected
        and c.__module__.startswith("wop_langgraph.")
        and not c.__module__.startswith("wop_langgraph.definitions.")
    ]


@pytest.mark.parametrize("cls", _envelope_errors(), ids=lambda c: c.__name__)
def test_every_envelope_error_passes_the_official_envelope(cls: type[WopError]) -> None:
    details = {"supported": ["updates", "debug"]} if cls is UnsupportedStreamMode else {"correlationId": "c1"}
    error = cls("something went wrong", details=details)
    envelope = ErrorEnvelope.from_error(error)
    assert envelope.to_wire() == error.envelope()
    validate_official("error-envelope.schema.json", envelope.to_wire())


def test_approval_rejected_cannot_be_an_envelope() -> None:
    with pytest.raises(ValueError, match="approval_rejected"):
        ErrorEnvelope.from_error(ApprovalRejected("gate rejected"))


def test_vendor_codes_are_accepted() -> None:
    doc = {"error": "acme.quota_exceeded", "message": "m", "details": {"x": 1}}
    assert ErrorEnvelope.from_wire(doc).to_wire() == doc
    validate_official("error-envelope.schema.json", doc)
