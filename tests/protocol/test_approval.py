"""Approval resume values: the five actions, their required members, and the refusals.

The official v2 schemas carry no ``ApprovalResume`` schema, so interrupt.md's table (and v1's
``ApprovalResume`` type) is the reference here; the recorded side of the same rules
(``interrupt.resolved``) is judged by the official schema in test_events.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.official import official_files
from tests.protocol.strategies import json_values, refine_feedback, timestamps
from wop_langgraph.protocol import (
    AcceptResume,
    ApprovalData,
    AskResume,
    EditAcceptResume,
    RefineResume,
    RejectResume,
    ValidationError,
    check_action_allowed,
    normalize_legacy_decision,
    parse_approval_resume,
)

AT = "2025-06-01T12:00:00Z"
CLASSES = {
    "accept": AcceptResume,
    "reject": RejectResume,
    "refine": RefineResume,
    "edit-accept": EditAcceptResume,
    "ask": AskResume,
}


def test_the_official_schemas_define_no_resume_shape() -> None:
    # If a future vendored schema defines ApprovalResume, these tests should use it as the judge.
    for path in official_files():
        assert '"ApprovalResume"' not in path.read_text(encoding="utf-8"), path


@st.composite
def resumes(draw: st.DrawFn) -> dict[str, Any]:
    action = draw(st.sampled_from(list(CLASSES)))
    doc: dict[str, Any] = {"action": action, "decidedAt": draw(timestamps)}
    doc.update(
        draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "decidedBy": st.text(min_size=1, max_size=20),
                    "voter": st.text(min_size=1, max_size=20),
                    "feedback": st.text(max_size=20),
                },
            )
        )
    )
    if action == "refine":
        doc["refineFeedback"] = draw(refine_feedback)
    if action == "edit-accept":
        doc["editedArtifactData"] = draw(json_values)
    return doc


@settings(max_examples=150, deadline=None)
@given(resumes())
def test_valid_resumes_round_trip(doc: dict[str, Any]) -> None:
    parsed = parse_approval_resume(doc)
    assert isinstance(parsed, CLASSES[doc["action"]])
    assert parsed.to_wire() == doc


@pytest.mark.parametrize(
    ("doc", "path", "rule"),
    [
        pytest.param(
            {"action": "timeout", "decidedAt": AT}, "/action", "host-internal", id="timeout-from-caller"
        ),
        pytest.param(
            {"action": "refine", "decidedAt": AT}, "/refineFeedback", "required", id="refine-no-feedback"
        ),
        pytest.param(
            {"action": "edit-accept", "decidedAt": AT}, "/editedArtifactData", "required", id="edit-no-data"
        ),
        pytest.param({"action": "accept"}, "/decidedAt", "required", id="missing-decidedAt"),
        pytest.param(
            {"action": "accept", "decidedAt": "yesterday"}, "/decidedAt", "invalid", id="bad-decidedAt"
        ),
        pytest.param(
            {"action": "accept", "decidedAt": "2025-06-01"}, "/decidedAt", "invalid", id="date-only"
        ),
        pytest.param(
            {"action": "accept", "decidedAt": 1717243200}, "/decidedAt", "type", id="epoch-decidedAt"
        ),
        pytest.param({"action": "approve", "decidedAt": AT}, "/action", "enum", id="unknown-action"),
        pytest.param({"action": "", "decidedAt": AT}, "/action", "enum", id="empty-action"),
        pytest.param({"decidedAt": AT}, "/action", "required", id="missing-action"),
        pytest.param(
            {"action": "accept", "decidedAt": AT, "x": 1}, "/x", "additionalProperties", id="extra-member"
        ),
        pytest.param(
            {"action": "accept", "decidedAt": AT, "refineFeedback": {"scope": "whole"}},
            "/refineFeedback",
            "additionalProperties",
            id="refineFeedback-on-accept",
        ),
        pytest.param(
            {"action": "refine", "decidedAt": AT, "refineFeedback": {"scope": "page"}},
            "/refineFeedback/scope",
            "enum",
            id="refine-bad-scope",
        ),
        pytest.param(
            {"action": "refine", "decidedAt": AT, "refineFeedback": {"scope": "whole", "x": 1}},
            "/refineFeedback/x",
            "additionalProperties",
            id="refine-extra-member",
        ),
        pytest.param(
            {"action": "accept", "decidedAt": AT, "voter": ""}, "/voter", "minLength", id="empty-voter"
        ),
        pytest.param(
            {"action": "accept", "decidedAt": AT, "decidedBy": 7}, "/decidedBy", "type", id="decidedBy-num"
        ),
        pytest.param(
            {"action": "accept", "decidedAt": AT, "feedback": None}, "/feedback", "type", id="null-feedback"
        ),
        pytest.param(["accept"], "", "type", id="not-an-object"),
        pytest.param({"action": "accept", "decided_at": AT}, "/decidedAt", "required", id="python-name"),
    ],
)
def test_refused_resumes_name_path_and_rule(doc: Any, path: str, rule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_approval_resume(doc)
    assert caught.value.details is not None
    assert (caught.value.details["path"], caught.value.details["rule"]) == (path, rule)
    assert caught.value.status == 400


def test_edit_accept_keeps_a_null_edit() -> None:
    doc = {"action": "edit-accept", "decidedAt": AT, "editedArtifactData": None}
    parsed = parse_approval_resume(doc)
    assert isinstance(parsed, EditAcceptResume) and parsed.edited_artifact_data is None
    assert parsed.to_wire() == doc


def test_default_decided_at_is_opt_in() -> None:
    assert parse_approval_resume({"action": "accept"}, default_decided_at=AT).decided_at == AT
    kept = parse_approval_resume(
        {"action": "accept", "decidedAt": "2024-01-01T00:00:00Z"}, default_decided_at=AT
    )
    assert kept.decided_at == "2024-01-01T00:00:00Z"
    with pytest.raises(ValidationError):
        parse_approval_resume({"action": "timeout"}, default_decided_at=AT)


def test_check_action_allowed() -> None:
    data = ApprovalData(artifact_id="a", artifact_type="t", title="T", actions=["accept", "reject"])
    check_action_allowed(parse_approval_resume({"action": "accept", "decidedAt": AT}), data)
    refine = parse_approval_resume(
        {"action": "refine", "decidedAt": AT, "refineFeedback": {"scope": "whole"}}
    )
    with pytest.raises(ValidationError) as caught:
        check_action_allowed(refine, data)
    assert caught.value.details is not None and caught.value.details["allowed"] == ["accept", "reject"]


@pytest.mark.parametrize(
    ("legacy", "normalized"),
    [
        ({"decision": "approved", "decidedAt": AT}, {"action": "accept", "decidedAt": AT}),
        ({"decision": "rejected", "decidedAt": AT}, {"action": "reject", "decidedAt": AT}),
        (
            {"decision": "rejected", "feedback": "  ", "decidedAt": AT},
            {"action": "reject", "feedback": "  ", "decidedAt": AT},
        ),
        (
            {"decision": "rejected", "feedback": "tighten section 2", "decidedAt": AT},
            {
                "action": "refine",
                "refineFeedback": {"scope": "whole", "text": "tighten section 2"},
                "decidedAt": AT,
            },
        ),
        ({"action": "accept", "decidedAt": AT}, {"action": "accept", "decidedAt": AT}),
    ],
)
def test_legacy_decisions_normalize(legacy: dict[str, Any], normalized: dict[str, Any]) -> None:
    result = normalize_legacy_decision(legacy)
    assert result == normalized
    assert parse_approval_resume(result).to_wire() == normalized


@pytest.mark.parametrize("decision", ["timeout", "cancelled", "maybe"])
def test_legacy_sentinels_are_not_resumes(decision: str) -> None:
    with pytest.raises(ValidationError):
        normalize_legacy_decision({"decision": decision, "decidedAt": AT})
