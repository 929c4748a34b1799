"""Validating values against caller-supplied JSON Schemas (``resumeSchema``, ``outcomeSchema``)."""

from __future__ import annotations

from typing import Any

import pytest

from wop_langgraph.protocol import ValidationError, check_schema, validate_against_schema
from wop_langgraph.protocol.jsonschema_check import _compiled

ANSWER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["answers"],
    "properties": {"answers": {"type": "object", "properties": {"q1": {"enum": ["blue", "red"]}}}},
}


def _refusal(value: Any, schema: Any) -> dict[str, Any]:
    with pytest.raises(ValidationError) as caught:
        validate_against_schema(value, schema, what="resumeValue")
    assert caught.value.code == "validation_error" and caught.value.status == 400
    assert caught.value.details is not None
    return caught.value.details


def test_valid_values_pass() -> None:
    validate_against_schema({"answers": {"q1": "blue"}}, ANSWER, what="resumeValue")
    validate_against_schema(None, True, what="resumeValue")
    validate_against_schema("anything", {}, what="resumeValue")


@pytest.mark.parametrize(
    ("value", "path", "rule", "schema_path"),
    [
        ({"answers": {"q1": "green"}}, "/answers/q1", "enum", "/properties/answers/properties/q1/enum"),
        ({}, "", "required", "/required"),
        ({"answers": {}, "extra": 1}, "", "additionalProperties", "/additionalProperties"),
        ({"answers": []}, "/answers", "type", "/properties/answers/type"),
        ("text", "", "type", "/type"),
    ],
)
def test_failures_name_the_pointer_and_the_rule(value: Any, path: str, rule: str, schema_path: str) -> None:
    details = _refusal(value, ANSWER)
    assert (details["path"], details["rule"], details["schemaPath"]) == (path, rule, schema_path)
    assert details["schema"] == "resumeValue" and details["errors"]


def test_pointer_escapes_slash_and_tilde() -> None:
    schema = {"properties": {"a/b": {"properties": {"c~d": {"type": "integer"}}}}}
    assert _refusal({"a/b": {"c~d": "x"}}, schema)["path"] == "/a~1b/c~0d"


def test_every_failure_is_listed() -> None:
    schema = {"type": "object", "required": ["a", "b"]}
    details = _refusal({}, schema)
    assert {e["rule"] for e in details["errors"]} == {"required"}
    assert len(details["errors"]) == 2


def test_format_assertions_that_are_cheap_apply() -> None:
    assert _refusal("999.1.1.1", {"format": "ipv4"})["rule"] == "format"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": 5},
        {"minLength": -1},
        {"pattern": "("},
        {"required": "a"},
        {"$schema": "https://example.com/my-dialect"},
        [{"type": "object"}],
        "object",
        {"const": float("nan")},
    ],
)
def test_invalid_schemas_are_refused_clearly(schema: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        check_schema(schema, what="resumeSchema")
    assert caught.value.details is not None and caught.value.details["rule"] == "schema"
    assert "resumeSchema schema" in caught.value.message
    with pytest.raises(ValidationError):
        validate_against_schema({}, schema, what="resumeValue")


def test_remote_refs_are_never_fetched() -> None:
    schema = {"$ref": "https://example.com/never-fetched.json"}
    assert _refusal({}, schema)["rule"] == "$ref"


def test_local_refs_resolve() -> None:
    schema = {"$defs": {"colour": {"enum": ["blue"]}}, "properties": {"c": {"$ref": "#/$defs/colour"}}}
    validate_against_schema({"c": "blue"}, schema, what="resumeValue")
    assert _refusal({"c": "red"}, schema)["path"] == "/c"


def test_other_known_drafts_are_honoured() -> None:
    # draft-07's tuple `items` means something else in 2020-12.
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}
    validate_against_schema(["a", 1], schema, what="v")
    assert _refusal([1], schema)["path"] == "/0"


def test_validators_are_cached_by_canonical_json() -> None:
    _compiled.cache_clear()
    first = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}
    same = {"properties": {"a": {"type": "string"}}, "required": ["a"], "type": "object"}
    for _ in range(3):
        validate_against_schema({"a": "x"}, first, what="v")
        validate_against_schema({"a": "y"}, same, what="v")
    info = _compiled.cache_info()
    assert (info.misses, info.currsize) == (1, 1) and info.hits == 5
