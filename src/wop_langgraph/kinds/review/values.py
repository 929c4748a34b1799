"""Editors for a value a reviewer changes (an artifact, a tool call's arguments, an agent's decision).

An object gets one field per member, each by its own type (text, number, checkbox, choices;
a nested list or object as a small JSON text area), labelled by the schema's ``title`` when a
schema is given, else by the member's name; any other value gets one field. Text with line
breaks gets a text area that keeps them. With no schema the value's own types are the schema,
so an edited number stays a number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wop_langgraph.kinds.review.fields import Field, initial_text, widget_for

__all__ = ["editor_fields", "schema_of"]

_LONG_TEXT = 60  # characters: longer text gets a text area


def schema_of(value: Any) -> dict[str, Any]:
    """The JSON Schema type of ``value`` (``{}`` for ``null``: any JSON)."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        return {"type": "array"}
    if isinstance(value, dict):
        return {"type": "object"}
    return {}


def editor_fields(value: Any, schema: Mapping[str, Any] | None, *, name: str, label: str) -> list[Field]:
    """The fields that edit ``value`` (named ``name`` or ``name.<member>``), prefilled with it."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    properties = properties if isinstance(properties, Mapping) else {}
    if isinstance(value, dict) and (value or properties):
        required = set(schema.get("required") or []) if isinstance(schema, Mapping) else set()
        members = list(value) + [k for k in properties if k not in value]
        return [
            _member(
                f"{name}.{key}",
                key,
                properties.get(key) if isinstance(properties.get(key), Mapping) else None,
                value.get(key),
                required=key in value or key in required,
            )
            for key in members
        ]
    return [_member(name, label, schema, value, required=True)]


def _member(name: str, key: str, schema: Mapping[str, Any] | None, value: Any, *, required: bool) -> Field:
    schema = schema if schema is not None else schema_of(value)
    label = str(schema.get("title") or key)
    hint = str(schema.get("description") or "")
    widget = widget_for(schema)
    initial = initial_text(schema, value)
    if widget == "text" and not schema.get("format") and ("\n" in initial or len(initial) > _LONG_TEXT):
        return Field(
            name, label, schema, required, initial, hint, text_only=True, input="free", empty_text=True
        )
    if widget == "free":  # any JSON (the value was null, or the schema names no type)
        return Field(name, label, schema, required, initial or "null", hint, input="json")
    return Field(name, label, schema, required, initial, hint, empty_text=widget == "text")
