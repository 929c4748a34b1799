"""Valid interrupt payloads: every kind round-trips through our models and the official schema accepts it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.official import official_errors, validate_official
from tests.protocol.strategies import CREDENTIAL_RESUME_SCHEMA, KINDS, PAYLOADS
from wop_langgraph.protocol import (
    CREDENTIAL_RESUME_SCHEMA as OUR_CREDENTIAL_SCHEMA,
)
from wop_langgraph.protocol import (
    INTERRUPT_KINDS,
    INTERRUPT_PAYLOAD_MODELS,
    ApprovalData,
    ApprovalInterrupt,
    ConversationCloseInterrupt,
    ConversationStartInterrupt,
    CredentialData,
    CredentialInterrupt,
    CustomData,
    CustomInterrupt,
    ValidationError,
    parse_interrupt_payload,
)

SUSPEND = "suspend-request.schema.json"
GENERATED = Path(__file__).resolve().parents[2] / "schemas" / "interrupt-payload.schema.json"


def generated_validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(GENERATED.read_text(encoding="utf-8")))


def test_kinds_are_the_official_enum() -> None:
    from tests.official import official_schema

    assert list(INTERRUPT_KINDS) == official_schema(SUSPEND)["properties"]["kind"]["enum"] == KINDS
    assert set(INTERRUPT_PAYLOAD_MODELS) == set(KINDS)


def test_credential_resume_schema_is_the_official_const() -> None:
    from tests.official import official_schema

    branch = next(
        rule["then"]
        for rule in official_schema(SUSPEND)["allOf"]
        if rule["if"]["properties"]["kind"]["const"] == "credential"
    )
    assert (
        branch["properties"]["resumeSchema"]["const"]
        == dict(OUR_CREDENTIAL_SCHEMA)
        == CREDENTIAL_RESUME_SCHEMA
    )
    assert branch["required"] == ["resumeSchema"]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_generated_payloads_round_trip_and_pass_the_official_schema(kind: str, data: st.DataObject) -> None:
    doc = data.draw(PAYLOADS[kind], label="payload")
    original = copy.deepcopy(doc)

    validate_official(SUSPEND, doc)  # the strategy really produces official-valid documents
    payload = parse_interrupt_payload(doc)

    assert payload.kind == kind
    assert isinstance(payload, INTERRUPT_PAYLOAD_MODELS[kind])
    assert payload.to_wire() == original
    assert doc == original  # parsing never mutates the caller's document
    assert not official_errors(SUSPEND, payload.to_wire())
    assert generated_validator().is_valid(doc), "our generated contract must accept what the models accept"


def test_explicit_null_of_any_json_members_survives() -> None:
    doc: dict[str, Any] = {
        "kind": "approval",
        "key": "run:gate:0",
        "data": {
            "artifactId": "a1",
            "artifactType": "doc",
            "title": "T",
            "actions": ["accept"],
            "artifactData": None,
        },
    }
    assert parse_interrupt_payload(doc).to_wire() == doc
    validate_official(SUSPEND, doc)
    absent = copy.deepcopy(doc)
    del absent["data"]["artifactData"]
    assert parse_interrupt_payload(absent).to_wire() == absent


def test_python_construction_emits_official_documents() -> None:
    approval = ApprovalInterrupt(
        key="acme/r-0123456789abcdef:gate:0",
        timeout_ms=0,
        data=ApprovalData(
            artifact_id="a1",
            artifact_type="doc",
            title="Publish?",
            actions=["accept", "reject", "refine"],
            required_approvals=2,
            rejection_policy="majority",
        ),
    )
    wire = approval.to_wire()
    assert wire["kind"] == "approval" and wire["timeoutMs"] == 0 and "description" not in wire["data"]
    validate_official(SUSPEND, wire)
    assert approval.data.quorum == 2 and approval.data.policy == "majority"

    credential = CredentialInterrupt(
        key="k",
        resume_schema=dict(OUR_CREDENTIAL_SCHEMA),
        data=CredentialData(
            provider="github", scopes=["repo"], reason="missing", connect_url="https://host.example/c"
        ),
    )
    validate_official(SUSPEND, credential.to_wire())
    custom = CustomInterrupt(key="k", data=CustomData(custom_kind="x", payload=None))
    assert custom.to_wire()["data"] == {"customKind": "x", "payload": None}
    validate_official(SUSPEND, custom.to_wire())


def test_minimal_conversation_start_and_close_are_told_apart_by_kind() -> None:
    # Their data shapes coincide ({conversationId}); only `kind` decides (2.36.0's fix).
    start = parse_interrupt_payload(
        {"kind": "conversation.start", "key": "k", "data": {"conversationId": "c"}}
    )
    close = parse_interrupt_payload(
        {"kind": "conversation.close", "key": "k", "data": {"conversationId": "c"}}
    )
    assert isinstance(start, ConversationStartInterrupt)
    assert isinstance(close, ConversationCloseInterrupt)
    for doc in (start.to_wire(), close.to_wire()):
        validate_official(SUSPEND, doc)


def test_with_key_revalidates() -> None:
    payload = CustomInterrupt(key="placeholder", data=CustomData(custom_kind="x"))
    assert payload.with_key("run:node:1").key == "run:node:1"
    with pytest.raises(Exception, match="at most 256"):
        payload.with_key("k" * 257)


def test_integral_floats_are_integers_as_in_json_schema() -> None:
    doc = {"kind": "custom", "key": "k", "timeoutMs": 5.0, "data": {"customKind": "x"}}
    assert not official_errors(SUSPEND, doc)
    assert parse_interrupt_payload(doc).timeout_ms == 5


def test_payload_errors_name_path_and_rule() -> None:
    doc = {"kind": "clarification", "key": "k", "data": {"questions": [{"id": "q1", "question": ""}]}}
    with pytest.raises(ValidationError) as caught:
        parse_interrupt_payload(doc)
    error = caught.value
    assert error.code == "validation_error" and error.status == 400
    assert error.details is not None
    assert error.details["path"] == "/data/questions/0/question"
    assert error.details["rule"] == "minLength"
    assert error.envelope()["error"] == "validation_error"


def test_kind_errors_point_at_kind() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_interrupt_payload({"kind": "approve", "key": "k", "data": {}})
    assert caught.value.details is not None
    assert (caught.value.details["path"], caught.value.details["rule"]) == ("/kind", "enum")
