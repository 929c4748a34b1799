"""Reviewer-page fields: which input a schema gets, and the JSON value read back (no browser needed)."""

from __future__ import annotations

from typing import Any

import pytest

from wop_langgraph.nodes.questions import CREDENTIAL_RESUME_SCHEMA
from wop_langgraph.server.review_fields import (
    Field,
    FormRefused,
    fields_for,
    read_fields,
    render_field,
    widget_for,
)


@pytest.mark.parametrize(
    ("schema", "widget"),
    [
        ({"enum": ["a", "b"]}, "choice"),
        ({"type": "string", "enum": [1, 2]}, "choice"),
        ({"type": "boolean"}, "checkbox"),
        ({"type": "integer"}, "integer"),
        ({"type": "number"}, "number"),
        ({"type": ["null", "number"]}, "number"),
        ({"type": "string"}, "text"),
        ({"type": "object"}, "json"),
        ({"type": "array"}, "json"),
        ({}, "free"),
        (None, "free"),
    ],
)
def test_each_schema_gets_its_input(schema: dict[str, Any] | None, widget: str) -> None:
    assert widget_for(schema) == widget


def read(schema: dict[str, Any] | None, form: dict[str, list[str]]) -> Any:
    return read_fields([Field("value", "Your answer", schema=schema)], form, prefix="value")


def refusal(schema: dict[str, Any] | None, form: dict[str, list[str]]) -> str:
    with pytest.raises(FormRefused) as caught:
        read(schema, form)
    return caught.value.errors["value"]


def test_values_are_read_as_their_schema_types() -> None:
    assert read({"enum": ["red", 7, None]}, {"value": ["1"]}) == 7
    assert read({"type": "boolean"}, {"value": ["yes"]}) is True
    assert read({"type": "boolean"}, {}) is False  # an unticked box is not sent at all
    assert read({"type": "integer"}, {"value": [" 12 "]}) == 12
    assert read({"type": "number"}, {"value": ["2.5"]}) == 2.5
    assert read({"type": "array"}, {"value": ["[1, 2]"]}) == [1, 2]
    # A free answer is text unless the reviewer chose JSON; text keeps its lines (CRLF as sent).
    assert read(None, {"value": ["42"]}) == "42"
    assert read(None, {"value": ["line 1\r\nline 2 "]}) == "line 1\nline 2 "
    assert read(None, {"value": ["42"], "value.as": ["json"]}) == 42


def test_refusals_speak_to_the_reviewer() -> None:
    assert refusal({"enum": ["a"]}, {}) == "Choose one of the options."
    assert refusal({"enum": ["a"]}, {"value": ["5"]}) == "Choose one of the options shown."  # a tampered form
    assert "not a whole number" in refusal({"type": "integer"}, {"value": ["2.5"]})
    assert "not a number" in refusal({"type": "number"}, {"value": ["two"]})
    assert refusal({"type": "number"}, {"value": ["nan"]}) == "Enter a finite number."
    assert "not valid JSON" in refusal({"type": "object"}, {"value": ["{a: 1}"]})
    assert "not valid JSON" in refusal(None, {"value": ["NaN"], "value.as": ["json"]})
    assert refusal(None, {"value": ["  "]}) == "Please write an answer."
    # The schema's own rules are checked per field too (the host checks them again).
    assert (
        refusal({"type": "string", "minLength": 3}, {"value": ["ab"]}) == "Not accepted: 'ab' is too short."
    )


def test_an_object_of_simple_members_gets_one_input_per_member() -> None:
    fields = fields_for(CREDENTIAL_RESUME_SCHEMA, name="value", label="Your answer")
    assert [(f.name, f.widget, f.required) for f in fields] == [("value.outcome", "choice", True)]
    assert read_fields(fields, {"value.outcome": ["1"]}, prefix="value") == {"outcome": "declined"}
    nested = {"type": "object", "properties": {"a": {"type": "object"}}}
    assert [f.widget for f in fields_for(nested, name="value", label="x")] == ["json"]


def test_rendering_escapes_and_keeps_what_was_typed() -> None:
    field = Field("answer.q<1>", 'Say "<b>hi</b>"', schema={"type": "string"})
    html = render_field(field, {"answer.q<1>": ['"><script>x</script>']}, "Bad <thing>")
    assert "<script>" not in html and "<b>" not in html and "<thing>" not in html
    assert 'value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' in html
    assert 'name="answer.q&lt;1&gt;"' in html and 'aria-invalid="true"' in html
    # A text area keeps a leading newline (HTML drops the first one after the tag).
    area = render_field(Field("edited", "Text", initial="\nindented", text_only=True), None, None)
    assert ">\n\nindented</textarea>" in area
