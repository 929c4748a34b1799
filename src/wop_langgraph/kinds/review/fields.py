"""Reviewer-page form fields generated from a JSON Schema, and the JSON values read back from them.

Plain HTML only (the page runs with JavaScript off): ``enum`` becomes choices (radio buttons, or
a select for long lists), ``boolean`` a checkbox, ``integer``/``number`` a number input,
``string`` a text input (an email, web address, date or time input for those ``format``s),
``object``/``array`` a JSON text area, and a value with no usable schema a text area whose
answer is sent as text (a developer may tick "read it as JSON" under "More options"). A
schema's ``title`` labels the field, its ``description`` is the hint, its ``default`` the
initial value. Reading a field back gives the JSON value, or :class:`FormRefused` with a
message for a person beside the field that names the field and says what is allowed; the host
still validates the whole value against the schema afterwards.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, Final, Literal

from wop_langgraph.kinds.review.reasons import allowed, choices_text, option_text, refused
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.jsonschema_check import validate_against_schema

__all__ = [
    "Field",
    "Form",
    "FormRefused",
    "fields_for",
    "initial_text",
    "one_field",
    "read_fields",
    "render_field",
    "reviewer_message",
    "submitted",
    "widget_for",
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
# The HTML input of a string ``format``; datetime-local sends no zone: read back as UTC.
_FORMAT_INPUTS: Final[Mapping[str, str]] = {
    "email": "email",
    "uri": "url",
    "date": "date",
    "date-time": "datetime-local",
    "time": "time",
}


class FormRefused(Exception):
    """The form cannot become a resume value; ``errors`` maps a field name ('' for the form) to a message."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__("; ".join(errors.values()))
        self.errors = dict(errors)


@dataclass(frozen=True)
class Field:
    """One form field: its form ``name``, the ``label`` a reviewer reads, and the schema of its value.

    ``initial`` is the text shown before anything was submitted (for choices: the index of
    the option chosen first; for a checkbox: ``"true"``); ``text_only`` makes a schema-less
    field send text alone (no "read it as JSON" option); ``input`` overrides the input the
    schema would get; ``missing`` is the message when a required field is left empty;
    ``empty_text`` makes an emptied text field the empty string rather than a missing answer;
    ``choices`` are the words shown for each ``enum`` option (else the option itself).
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
    empty_text: bool = False
    choices: tuple[str, ...] = ()

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


def initial_text(schema: Mapping[str, Any] | None, value: Any) -> str:
    """The text a field for ``schema`` shows for ``value`` (a default, or a value being edited)."""
    widget = widget_for(schema)
    if widget == "choice":
        options = list((schema or {}).get("enum") or [])
        return str(options.index(value)) if value in options else ""
    if widget == "checkbox":
        return "true" if value is True else ""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if widget == "json" or widget == "free":
        return json.dumps(value, indent=2, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def fields_for(schema: Mapping[str, Any] | None, *, name: str, label: str, initial: str = "") -> list[Field]:
    """The fields for one value: one per property of an object of simple members, else one field.

    A member's ``title`` (else its name) labels it, its ``description`` is the hint, its
    ``default`` fills it in.
    """
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
                hint=str(sub["description"]) if sub.get("title") and sub.get("description") else "",
                initial=initial_text(sub, sub["default"]) if "default" in sub else "",
            )
            for prop, sub in properties.items()
        ]
    return [one_field(schema, name=name, label=label, initial=initial)]


def one_field(
    schema: Mapping[str, Any] | None, *, name: str, label: str, initial: str = "", titled: bool = True
) -> Field:
    """One field for a whole value: the schema's ``title`` labels it (unless ``titled`` is false),
    its ``description`` is the hint, its ``default`` fills it in."""
    hint = ""
    if isinstance(schema, Mapping):
        label = str(schema.get("title") or label) if titled else label
        hint = str(schema.get("description") or "")
        if not initial and "default" in schema:
            initial = initial_text(schema, schema["default"])
    return Field(name=name, label=label, schema=schema, initial=initial, hint=hint)


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
                errors[field.name] = _schema_refusal(field, value, exc)
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
        return _render_choice(field, text, label + hint, message, described)
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
        kind = _FORMAT_INPUTS.get(str((field.schema or {}).get("format")), "text")
        if kind == "datetime-local":
            text = text.removesuffix("Z")[:16]
        control = f'<input type="{kind}" name="{name}" value="{escape(text, quote=True)}"{described}>'
    else:
        rows = max(4 if field.required else 2, min(20, text.count("\n") + 2))
        css = ' class="code"' if widget == "json" else ""
        # HTML drops one newline right after <textarea>: write one so the text keeps its own.
        control = f'<textarea name="{name}" rows="{rows}"{css}{described}>\n{escape(text)}</textarea>'
        if widget == "free" and not field.text_only:
            after = _render_as_json(field, form)  # its own label: outside the field's label
    return f'<div class="field"><label>{label}{hint}{message}{control}</label>{after}</div>'


def _render_choice(field: Field, chosen: str, label: str, message: str, described: str) -> str:
    options = list((field.schema or {}).get("enum") or [])
    words = [field.choices[i] if i < len(field.choices) else option_text(o) for i, o in enumerate(options)]
    name = escape(field.name, quote=True)
    if len(options) <= _RADIO_LIMIT:
        radios = "".join(
            f'<label class="check"><input type="radio" name="{name}" value="{i}"'
            f"{' checked' if chosen == str(i) else ''}{described}> {escape(text)}</label>"
            for i, text in enumerate(words)
        )
        return f'<fieldset class="field"><legend>{label}</legend>{message}{radios}</fieldset>'
    choices = "".join(
        f'<option value="{i}"{" selected" if chosen == str(i) else ""}>{escape(text)}</option>'
        for i, text in enumerate(words)
    )
    return (
        f'<div class="field"><label>{label}{message}<select name="{name}"{described}>'
        f'<option value="">Choose…</option>{choices}</select></label></div>'
    )


def _render_as_json(field: Field, form: Form | None) -> str:
    # Folded away: a reviewer answers in words; a developer testing a gate may send data.
    as_json = submitted(form, f"{field.name}.as") == "json"
    name = escape(f"{field.name}.as", quote=True)
    return (
        f'<details class="more"{" open" if as_json else ""}><summary>More options</summary>'
        f'<label class="check"><input type="checkbox" name="{name}" value="json"'
        f"{' checked' if as_json else ''}> Read my answer as JSON data (for developers: a number, "
        "true/false, a list or an object)</label></details>"
    )


class _Refused(Exception):
    """One field's value cannot be read; the message is for the reviewer."""


_OMITTED: Final = object()


def _named(field: Field, reason: str) -> str:
    return f"“{field.label}”: {reason}" if field.label else reason[:1].upper() + reason[1:]


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
            raise _Refused(field.missing or _named(field, f"choose {choices_text(options)}."))
        if not raw.isdigit() or int(raw) >= len(options):
            raise _Refused(_named(field, f"choose one of the options shown: {choices_text(options)}."))
        return options[int(raw)]
    # Browsers send a text area's line breaks as CRLF; the value keeps the reviewer's text otherwise.
    text = (raw or "").replace("\r\n", "\n")
    if widget != "free":
        text = text.strip()
    if not text.strip():
        if field.empty_text and widget in ("text", "free"):
            return ""
        if not field.required:
            return _OMITTED
        if field.missing:
            raise _Refused(field.missing)
        raise _Refused(_named(field, f"this is empty; enter {allowed(field.schema)}."))
    if widget == "integer":
        try:
            return int(text)
        except ValueError:
            raise _Refused(
                _named(field, f"“{text}” is not a whole number; enter digits only, like 3.")
            ) from None
    if widget == "number":
        return _number(field, text)
    if widget == "json" or (widget == "free" and submitted(form, f"{field.name}.as") == "json"):
        return _json(field, text)
    if (field.schema or {}).get("format") == "date-time" and len(text) == 16 and text[10:11] == "T":
        return text + ":00Z"  # a datetime-local input's value, read as UTC (the hint says so)
    return text


def _schema_refusal(field: Field, value: Any, exc: ValidationError) -> str:
    details = exc.details or {}
    listed = details.get("errors")
    first = listed[0] if isinstance(listed, list) and listed and isinstance(listed[0], dict) else {}
    rule = str(first.get("rule") or details.get("rule") or "")
    message = str(first.get("message") or exc.message)
    if first.get("path"):  # inside a list or object: say where
        return _named(field, f"not accepted at {first['path']}: {message}.")
    return refused(field.label, field.schema, value, rule, message)


def _number(field: Field, text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise _Refused(_named(field, f"“{text}” is not a number; enter one like 2.5.")) from None
    if not math.isfinite(value):
        raise _Refused(_named(field, "enter a finite number, like 2.5."))
    return value


def _json(field: Field, text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise _Refused(
            _named(field, f"this is not valid JSON ({exc}). Check quotes, commas and brackets.")
        ) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
