"""What a JSON Schema allows, and why a value was refused, in a reviewer's words.

A refusal names the field by its title and says what is allowed (``“How many copies?”: 11 is
too large; enter a whole number from 1 to 10.``), instead of a validator's message about
``/answers/count``. Rules without a plain sentence here fall back to the validator's message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["allowed", "choices_text", "option_text", "refused"]

_FORMATS: Final[Mapping[str, str]] = {
    "email": "an email address, like name@example.com",
    "uri": "a web address, like https://example.com/page",
    "date": "a date, like 2026-12-31",
    "date-time": "a date and time, like 2026-12-31T17:30",
    "time": "a time, like 17:30",
}


def option_text(option: Any) -> str:
    """One choice as a reviewer reads it (text as is, anything else as JSON)."""
    return option if isinstance(option, str) else json.dumps(option, ensure_ascii=False)


def choices_text(options: Sequence[Any]) -> str:
    """``red, green or blue``."""
    texts = [option_text(o) for o in options]
    if len(texts) <= 1:
        return "".join(texts)
    return f"{', '.join(texts[:-1])} or {texts[-1]}"


def allowed(schema: Mapping[str, Any] | None) -> str:
    """What ``schema`` accepts, as the object of "enter ...": ``a whole number from 1 to 10``."""
    if not isinstance(schema, Mapping):
        return "an answer"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return f"one of {choices_text(schema['enum'])}"
    if "const" in schema:
        return f"exactly {option_text(schema['const'])}"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind in ("integer", "number"):
        noun = "a whole number" if kind == "integer" else "a number"
        return f"{noun} {_range(schema)}".rstrip()
    if kind == "boolean":
        return "yes or no"
    if kind == "string":
        return _text(schema)
    if kind == "array":
        return "a JSON list, like [1, 2]"
    if kind == "object":
        return 'a JSON object, like {"name": "value"}'
    return "an answer"


def refused(label: str, schema: Mapping[str, Any] | None, value: Any, rule: str, message: str) -> str:
    """The message shown beside a field whose ``value`` broke ``rule`` of ``schema``."""
    name = f"“{label}”" if label else "This answer"
    entered = f"“{option_text(value)}”"
    what = allowed(schema)
    if rule in ("minimum", "exclusiveMinimum"):
        return f"{name}: {entered} is too small; enter {what}."
    if rule in ("maximum", "exclusiveMaximum"):
        return f"{name}: {entered} is too large; enter {what}."
    if rule in ("minLength", "maxLength"):
        return f"{name}: {entered} is too {'short' if rule == 'minLength' else 'long'}; enter {what}."
    if rule in ("pattern", "format", "enum", "const", "type"):
        return f"{name}: {entered} is not accepted; enter {what}."
    if rule in ("minItems", "maxItems"):
        return f"{name}: the list has too {'few' if rule == 'minItems' else 'many'} entries."
    if rule == "required":
        return f"{name}: something is missing ({message})."
    return f"{name}: not accepted ({message})."


def _range(schema: Mapping[str, Any]) -> str:
    """``from 1 to 10``, ``at least 1``, ``over 0 and under 1``; '' without bounds."""

    def limit(key: str) -> str | None:
        value = schema.get(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return json.dumps(value) if ok else None

    low, high = limit("minimum"), limit("maximum")
    over, under = limit("exclusiveMinimum"), limit("exclusiveMaximum")
    if low is not None and high is not None:
        return f"from {low} to {high}"
    words = [
        f"{phrase} {value}"
        for phrase, value in (("at least", low), ("over", over), ("at most", high), ("under", under))
        if value is not None
    ]
    return " and ".join(words)


def _text(schema: Mapping[str, Any]) -> str:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        return _FORMATS[fmt]
    low, high = schema.get("minLength"), schema.get("maxLength")
    parts = ["text"]
    if isinstance(low, int) and isinstance(high, int):
        parts.append(f"of {low} to {high} characters")
    elif isinstance(low, int):
        parts.append(f"of at least {low} character{'s' if low != 1 else ''}")
    elif isinstance(high, int):
        parts.append(f"of at most {high} characters")
    if isinstance(schema.get("pattern"), str):
        examples = schema.get("examples")
        if isinstance(examples, list) and examples:
            parts.append(f"in the form {option_text(examples[0])}")
        else:
            parts.append(f"matching the pattern {schema['pattern']}")
    return " ".join(parts)
