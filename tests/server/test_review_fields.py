"""Reviewer-page fields: which input a schema gets, and the JSON value read back (no browser needed)."""

from __future__ import annotations

from typing import Any

import pytest

from wop_langgraph.kinds.review.fields import (
    Field,
    FormRefused,
    fields_for,
    read_fields,
    render_field,
    widget_for,
)
from wop_langgraph.nodes.questions import CREDENTIAL_RESUME_SCHEMA


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


def test_refusals_name_the_field_and_say_what_is_allowed() -> None:
    assert refusal({"enum": ["a", "b", "c"]}, {}) == "“Your answer”: choose a, b or c."
    tampered = refusal({"enum": ["a"]}, {"value": ["5"]})
    assert tampered == "“Your answer”: choose one of the options shown: a."
    assert "not a whole number" in refusal({"type": "integer"}, {"value": ["2.5"]})
    assert "not a number" in refusal({"type": "number"}, {"value": ["two"]})
    assert (
        refusal({"type": "number"}, {"value": ["nan"]}) == "“Your answer”: enter a finite number, like 2.5."
    )
    assert "not valid JSON" in refusal({"type": "object"}, {"value": ["{a: 1}"]})
    assert "not valid JSON" in refusal(None, {"value": ["NaN"], "value.as": ["json"]})
    assert refusal(None, {"value": ["  "]}) == "“Your answer”: this is empty; enter an answer."
    assert (
        refusal({"type": "integer", "minimum": 1}, {})
        == "“Your answer”: this is empty; enter a whole number at least 1."
    )
    # The schema's own rules are checked per field too (the host checks them again).
    short = refusal({"type": "string", "minLength": 3}, {"value": ["ab"]})
    assert short == "“Your answer”: “ab” is too short; enter text of at least 3 characters."
    small = refusal({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, {"value": ["0"]})
    assert small == "“Your answer”: “0” is too small; enter a number over 0 and at most 1."
    fmt = refusal({"type": "string", "format": "date"}, {"value": ["tomorrow"]})
    assert fmt == "“Your answer”: “tomorrow” is not accepted; enter a date, like 2026-12-31."


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


def test_titles_descriptions_defaults_and_formats_shape_the_fields() -> None:
    schema = {
        "type": "object",
        "properties": {
            "when": {"title": "When", "type": "string", "format": "date-time", "description": "In UTC."},
            "size": {"title": "Size", "enum": ["S", "M", "L"], "default": "M"},
            "site": {"type": "string", "format": "uri"},
        },
    }
    fields = fields_for(schema, name="value", label="Your answer")
    assert [(f.label, f.hint, f.initial) for f in fields] == [
        ("When", "In UTC.", ""),
        ("Size", "", "1"),
        ("site", "", ""),
    ]
    html = "".join(render_field(f, None, None) for f in fields)
    assert '<input type="datetime-local" name="value.when"' in html and 'type="url"' in html
    assert 'value="1" checked> M' in html
    # A datetime-local value has no zone: it is read as UTC.
    form = {"value.when": ["2026-12-24T18:30"], "value.size": ["2"], "value.site": ["https://x.test"]}
    assert read_fields(fields, form, prefix="value") == {
        "when": "2026-12-24T18:30:00Z",
        "size": "L",
        "site": "https://x.test",
    }


def test_a_free_answer_is_text_unless_a_developer_asks_for_json() -> None:
    html = render_field(Field("value", "Your answer"), None, None)
    assert "Send as" not in html and "<details" in html and 'type="checkbox" name="value.as"' in html
