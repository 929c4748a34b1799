"""Validate a JSON value against a caller-supplied JSON Schema (``resumeSchema``, ``outcomeSchema``).

A host MUST validate a resume value against the interrupt's ``resumeSchema`` and refuse a
failing value with ``400 validation_error`` (interrupt.md §Payload). This module does that
with ``jsonschema`` (Draft 2020-12 unless the schema's ``$schema`` names another draft the
library knows), with the format assertions the library ships, and with no network access: a
``$ref`` to anything outside the schema itself is refused, never fetched.

Compiled validators are cached by the canonical JSON text of the schema, so the same
``resumeSchema`` checked on every resolve is compiled once.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Final

# jsonschema ships no type information (and types-jsonschema is not a dependency).
import jsonschema.exceptions  # type: ignore[import-untyped]
import jsonschema.validators  # type: ignore[import-untyped]
import referencing.exceptions
from jsonschema import Draft202012Validator
from referencing import Registry

from wop_langgraph.protocol.errors import ValidationError

__all__ = ["check_schema", "validate_against_schema"]

_MAX_LISTED_ERRORS: Final = 20
_CACHE_SIZE: Final = 512


def _pointer(parts: Any) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def _canonical(schema: object, what: str) -> str:
    if not isinstance(schema, (dict, bool)):
        raise ValidationError(
            f"{what} schema is not a JSON Schema: expected an object or a boolean",
            details={"schema": what, "path": "", "rule": "schema"},
        )
    try:
        return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"{what} schema is not JSON: {exc}", details={"schema": what, "path": "", "rule": "schema"}
        ) from exc


@lru_cache(maxsize=_CACHE_SIZE)
def _compiled(canonical: str) -> Any:
    # Only ever called with the output of `_canonical`; errors propagate uncached.
    schema = json.loads(canonical)
    cls = Draft202012Validator
    if isinstance(schema, dict) and "$schema" in schema:
        # With `default=None` jsonschema answers None for a dialect it does not know, instead of
        # silently validating with the latest draft.
        cls = jsonschema.validators.validator_for(schema, default=None)
        if cls is None:
            raise jsonschema.exceptions.SchemaError(f"unknown $schema dialect: {schema['$schema']!r}")
    cls.check_schema(schema)
    validator = cls(schema, registry=Registry(), format_checker=cls.FORMAT_CHECKER)
    return validator


def _validator(schema: object, what: str) -> Any:
    canonical = _canonical(schema, what)
    try:
        return _compiled(canonical)
    except jsonschema.exceptions.SchemaError as exc:
        raise ValidationError(
            f"{what} schema is not a valid JSON Schema: {exc.message}",
            details={
                "schema": what,
                "path": "",
                "rule": "schema",
                "schemaPath": _pointer(exc.absolute_path),
                "keyword": exc.validator if isinstance(exc.validator, str) else "$schema",
            },
        ) from exc


def check_schema(schema: object, *, what: str) -> None:
    """Refuse a value that is not a usable JSON Schema.

    Args:
        schema: The schema (a JSON object or boolean).
        what: A name for error messages (``"resumeSchema"``).

    Raises:
        ValidationError: The schema is not JSON, names an unknown ``$schema`` dialect, or breaks
            its meta-schema (``details.rule == "schema"``).
    """
    _validator(schema, what)


def validate_against_schema(value: object, schema: object, *, what: str) -> None:
    """Validate ``value`` against ``schema`` or raise the wire error.

    Args:
        value: The JSON value to check (e.g. a ``resumeValue``).
        schema: The JSON Schema it must satisfy.
        what: What ``value`` is, for messages and ``details.schema`` (``"resumeValue"``).

    Raises:
        ValidationError: ``value`` fails the schema. ``details.path`` is the JSON pointer of the
            most relevant failure, ``details.rule`` the failing keyword (``required``,
            ``pattern``, ...), ``details.schemaPath`` where that keyword sits in the schema, and
            ``details.errors`` lists every failure. Also raised when the schema itself is
            unusable (``details.rule == "schema"``) or ``$ref``s something outside itself
            (``details.rule == "$ref"``).
    """
    validator = _validator(schema, what)
    try:
        errors = sorted(
            validator.iter_errors(value), key=lambda e: (list(map(str, e.absolute_path)), e.message)
        )
    except referencing.exceptions.Unresolvable as exc:
        raise ValidationError(
            f"{what} schema refers to something it does not contain ({exc}); remote $refs are never fetched",
            details={"schema": what, "path": "", "rule": "$ref"},
        ) from exc
    if not errors:
        return
    best = jsonschema.exceptions.best_match(errors) or errors[0]
    listed = [
        {
            "path": _pointer(e.absolute_path),
            "rule": str(e.validator),
            "schemaPath": _pointer(e.absolute_schema_path),
            "message": e.message,
        }
        for e in errors[:_MAX_LISTED_ERRORS]
    ]
    path = _pointer(best.absolute_path)
    raise ValidationError(
        f"{what} is invalid at {path or 'the document root'}: {best.message}",
        details={
            "schema": what,
            "path": path,
            "rule": str(best.validator),
            "schemaPath": _pointer(best.absolute_schema_path),
            "errors": listed,
        },
    )
