"""Reviewer-page form fields generated from a JSON Schema, and the JSON values read back from them.

Plain HTML only (the page runs with JavaScript off): ``enum`` becomes choices (radio buttons, or
a select for long lists), ``boolean`` a checkbox, ``integer``/``number`` a number input,
``string`` a text input, ``object``/``array`` a JSON text area, and a value with no usable
schema a text area whose answer is sent as text unless the reviewer picks JSON. Reading a field
back gives the JSON value, or :class:`FormRefused` with a message for a person beside the field;
the host still validates the whole value against the schema afterwards.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, Final, Literal

from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.jsonschema_check import validate_against_schema

__all__ = [
    "Field",
    "Form",
    "FormRefused",
    "fields_for",
    "read_fields",
    "render_field",
    "reviewer_message",
    "submitted",
]

Form = Mapping[str, Sequence[str]]
"""A submitted form: field name -> values, as ``urllib.parse.parse_qs`` gives it."""

Widget = Literal["choice", "checkbox", "integer", "number", "text", "json", "free"]

_RADIO_LIMIT: Final = 6  # up to this many choices as radio buttons, more as a select
_TYPE_WIDGETS: Final[Mapping[str, Widget]] = {
    "boolean": "checkbox",
    "integer": "integer",
    "number": "number",
    "string": "text",
    "object": "json",
    "array": "json",
}
_SIMPLE: Final = frozenset({"choice", "checkbox", "integer", "number", "text"})


class FormRefused(Exception):
    """The form cannot become a resume value; ``errors`` maps a field name ('' for the form) to a message."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__("; ".join(errors.values()))
        self.errors = dict(errors)


@dataclass(frozen=True)
class Field:
    """One form field: its form ``name``, the ``label`` a reviewer reads, and the schema of its value.

    ``initial`` is the text shown before anything was submitted; ``text_only`` makes a
    schema-less field send text alone (no "send as JSON" choice); ``input`` overrides the
    input the schema would get; ``missing`` is the message when a required field is left empty.
    """

    name: str
    label: str
    schema: Mapping[str, Any] | None = None
    required: bool = True
    initial: str = ""
    hint: str = ""
    text_only: bool = False
    input: Widget | None = None
    missing: str = ""

    @property
    def widget(self) -> Widget:
        """The input this field renders as."""
        return self.input or widget_for(self.schema)


def widget_for(schema: Mapping[str, Any] | None) -> Widget:
    """The input a schema gets (see the module docstring)."""
    if not isinstance(schema, Mapping):
        return "free"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "choice"
    kind = schema.get("type")
    if isinstance(kind, list):  # e.g. ["string", "null"]: the first non-null type decides
        kind = next((k for k in kind if k != "null"), None)
    return _TYPE_WIDGETS.get(kind, "free") if isinstance(kind, str) else "free"


def fields_for(schema: Mapping[str, Any] | None, *, name: str, label: str, initial: str = "") -> list[Field]:
    """The fields for one value: one per property of an object of simple members, else one field."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if (
        isinstance(schema, Mapping)
        and widget_for(schema) == "json"
        and isinstance(properties, Mapping)
        and properties
        and all(isinstance(p, Mapping) and widget_for(p) in _SIMPLE for p in properties.values())
    ):
        required = set(schema.get("required") or [])
        return [
            Field(
                name=f"{name}.{prop}",
                label=str(sub.get("title") or sub.get("description") or prop),
                schema=sub,
                required=prop in required,
            )
            for prop, sub in properties.items()
        ]
    return [Field(name=name, label=label, schema=schema, initial=initial)]


def read_fields(fields: Sequence[Field], form: Form, *, prefix: str) -> Any:
    """The JSON value of ``fields`` (made by :func:`fields_for` with ``name=prefix``).

    Raises:
        FormRefused: one message per field that cannot be read.
    """
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in fields:
        try:
            value = _read(field, form)
        except _Refused as exc:
            errors[field.name] = str(exc)
            continue
        if value is _OMITTED:
            continue
        if isinstance(field.schema, Mapping):
            # The host checks the same schema again; checking here names the field that failed.
            try:
                validate_against_schema(value, dict(field.schema), what="the answer")
            except ValidationError as exc:
                errors[field.name] = reviewer_message(exc)
                continue
        values[field.name] = value
    if errors:
        raise FormRefused(errors)
    if len(fields) == 1 and fields[0].name == prefix:
        return values.get(prefix)
    return {name.removeprefix(prefix + "."): value for name, value in values.items()}


def reviewer_message(exc: ValidationError) -> str:
    """A host refusal shortened to the part a reviewer can act on (the first failing rule)."""
    listed = (exc.details or {}).get("errors")
    if isinstance(listed, list) and listed and isinstance(listed[0], dict) and listed[0].get("message"):
        return f"Not accepted: {listed[0]['message']}."
    return f"Not accepted: {exc.message}."


def submitted(form: Form | None, name: str) -> str | None:
    """The first submitted value of ``name``, or ``None`` (no form, or the field was not sent)."""
    if form is None or not form.get(name):
        return None
    return form[name][0]


def render_field(field: Field, form: Form | None, error: str | None) -> str:
    """The HTML of ``field``, filled in with what ``form`` holds (or its initial text), with ``error``."""
    raw = submitted(form, field.name)
    text = raw if raw is not None else ("" if form is not None else field.initial)
    name = escape(field.name, quote=True)
    error_id = escape(f"error-{field.name}", quote=True)
    described = f' aria-invalid="true" aria-describedby="{error_id}"' if error else ""
    message = f'<p class="error" id="{error_id}">{escape(error)}</p>' if error else ""
    hint = f'<span class="hint">{escape(field.hint)}</span>' if field.hint else ""
    optional = "" if field.required or field.widget == "checkbox" else ' <span class="hint">(optional)</span>'
    label = f'<span class="label">{escape(field.label)}{optional}</span>'
    after = ""
    widget = field.widget
    if widget == "choice":
        return _render_choice(field, raw, label + hint, message, described)
    if widget == "checkbox":
        checked = " checked" if (raw is not None if form is not None else field.initial == "true") else ""
        return (
            f'<div class="field">{message}<label class="check"><input type="checkbox" name="{name}" '
            f'value="yes"{checked}{described}> {escape(field.label)}</label>{hint}</div>'
        )
    if widget in ("integer", "number"):
        schema = field.schema or {}
        bounds = "".join(
            f' {attr}="{escape(str(schema[key]), quote=True)}"'
            for attr, key in (("min", "minimum"), ("max", "maximum"))
            if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool)
        )
        step = "1" if widget == "integer" else "any"
        control = (
            f'<input type="number" name="{name}" step="{step}"{bounds} '
            f'value="{escape(text, quote=True)}"{described}>'
        )
    elif widget == "text":
        control = f'<input type="text" name="{name}" value="{escape(text, quote=True)}"{described}>'
    else:
        rows = max(4 if field.required else 2, min(20, text.count("\n") + 2))
        css = ' class="code"' if widget == "json" else ""
        # HTML drops one newline right after <textarea>: write one so the text keeps its own.
        control = f'<textarea name="{name}" rows="{rows}"{css}{described}>\n{escape(text)}</textarea>'
        if widget == "free" and not field.text_only:
            after = _render_send_as(field, form)  # its own labels: outside the field's label
    return f'<div class="field"><label>{label}{hint}{message}{control}</label>{after}</div>'


def _render_choice(field: Field, raw: str | None, label: str, message: str, described: str) -> str:
    options = list((field.schema or {}).get("enum") or [])
    name = escape(field.name, quote=True)
    if len(options) <= _RADIO_LIMIT:
        radios = "".join(
            f'<label class="check"><input type="radio" name="{name}" value="{i}"'
            f"{' checked' if raw == str(i) else ''}{described}> {escape(_option_text(option))}</label>"
            for i, option in enumerate(options)
        )
        return f'<fieldset class="field"><legend>{label}</legend>{message}{radios}</fieldset>'
    choices = "".join(
        f'<option value="{i}"{" selected" if raw == str(i) else ""}>{escape(_option_text(option))}</option>'
        for i, option in enumerate(options)
    )
    return (
        f'<div class="field"><label>{label}{message}<select name="{name}"{described}>'
        f'<option value="">Choose…</option>{choices}</select></label></div>'
    )


def _render_send_as(field: Field, form: Form | None) -> str:
    as_json = submitted(form, f"{field.name}.as") == "json"
    name = escape(f"{field.name}.as", quote=True)
    return (
        f'<div class="send-as">Send as: <label class="check inline"><input type="radio" name="{name}" '
        f'value="text"{"" if as_json else " checked"}> text, exactly as written</label>'
        f'<label class="check inline"><input type="radio" name="{name}" value="json"'
        f"{' checked' if as_json else ''}> JSON (a number, true/false, a list or an object)</label></div>"
    )


def _option_text(option: Any) -> str:
    return option if isinstance(option, str) else json.dumps(option, ensure_ascii=False)


class _Refused(Exception):
    """One field's value cannot be read; the message is for the reviewer."""


_OMITTED: Final = object()


def _read(field: Field, form: Form) -> Any:
    raw = submitted(form, field.name)
    widget = field.widget
    if widget == "checkbox":
        return raw is not None
    if widget == "choice":
        options = list((field.schema or {}).get("enum") or [])
        if raw is None or raw == "":
            if not field.required:
                return _OMITTED
            raise _Refused("Choose one of the options.")
        if not raw.isdigit() or int(raw) >= len(options):
            raise _Refused("Choose one of the options shown.")
        return options[int(raw)]
    # Browsers send a text area's line breaks as CRLF; the value keeps the reviewer's text otherwise.
    text = (raw or "").replace("\r\n", "\n")
    if widget != "free":
        text = text.strip()
    if not text.strip():
        if not field.required:
            return _OMITTED
        if field.missing:
            raise _Refused(field.missing)
        raise _Refused(
            "Please enter a number." if widget in ("integer", "number") else "Please write an answer."
        )
    if widget == "integer":
        try:
            return int(text)
        except ValueError:
            raise _Refused(f"“{text}” is not a whole number; enter digits only, like 3.") from None
    if widget == "number":
        return _number(text)
    if widget == "json" or (widget == "free" and submitted(form, f"{field.name}.as") == "json"):
        return _json(text)
    return text


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise _Refused(f"“{text}” is not a number; enter one like 2.5.") from None
    if not math.isfinite(value):
        raise _Refused("Enter a finite number.")
    return value


def _json(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise _Refused(f"This is not valid JSON ({exc}). Check quotes, commas and brackets.") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
