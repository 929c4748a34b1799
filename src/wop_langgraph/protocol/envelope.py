"""The error envelope (error-envelope.schema.json, errors.md): ``{error, message, details?}``, closed.

``error`` is a registered code or a vendor code; ``message`` is non-empty; context goes under
``details``, never at the top level. Four codes constrain their ``details`` when present, as the
official envelope's ``allOf`` does; those rules are mirrored here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Final, Self

import pydantic
from pydantic import AfterValidator, WithJsonSchema, model_validator

from wop_langgraph.protocol._base import WireModel, member_error
from wop_langgraph.protocol._types import JsonObject, NonEmptyStr
from wop_langgraph.protocol.error_codes import (
    REGISTERED_ERROR_CODES,
    VENDOR_ERROR_CODE_PATTERN,
    is_error_code,
)
from wop_langgraph.protocol.errors import WopError
from wop_langgraph.protocol.ids import EVENT_ID_PATTERN

__all__ = ["STREAM_MODES", "ErrorCode", "ErrorEnvelope"]

STREAM_MODES: Final = ("values", "updates", "messages", "debug")
_VERSION_RE: Final = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
_EVENT_ID_RE: Final = re.compile(EVENT_ID_PATTERN)


def _check_code(code: str) -> str:
    if not is_error_code(code):
        raise ValueError("must be a registered OpenWOP error code or a vendor <org>.<name> code")
    return code


ErrorCode = Annotated[
    str,
    AfterValidator(_check_code),
    WithJsonSchema(
        {
            "oneOf": [
                {"type": "string", "enum": sorted(REGISTERED_ERROR_CODES)},
                {"type": "string", "pattern": VENDOR_ERROR_CODE_PATTERN},
            ]
        }
    ),
]


def _is_int(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )


def _details_problem(code: str, details: JsonObject) -> tuple[str, str] | None:
    """The (member, message) that breaks ``code``'s details rule, if any."""
    if code == "unsupported_stream_mode":
        supported = details.get("supported")
        if not isinstance(supported, list) or not supported:
            return "details", "unsupported_stream_mode needs details.supported, a non-empty list"
        if any(mode not in STREAM_MODES for mode in supported):
            return "details", f"details.supported items must be among {', '.join(STREAM_MODES)}"
    elif code == "run_state_conflict":
        if not isinstance(details.get("runStatus"), str):
            return "details", "run_state_conflict needs details.runStatus, a string"
    elif code == "client_version_unsupported":
        floor = details.get("minClientVersion")
        if floor is not None and not (isinstance(floor, str) and _VERSION_RE.fullmatch(floor)):
            return "details", "details.minClientVersion must be <major>.<minor>"
    elif code == "payload_unprojectable":
        keys = details.get("keys")
        if set(details) - {"type", "keys", "eventId", "sequence"}:
            return "details", "payload_unprojectable details admit only type, keys, eventId, sequence"
        if not isinstance(details.get("type"), str):
            return "details", "payload_unprojectable needs details.type, a string"
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            return "details", "payload_unprojectable needs details.keys, a non-empty list of strings"
        event_id = details.get("eventId")
        if "eventId" in details and not (isinstance(event_id, str) and _EVENT_ID_RE.fullmatch(event_id)):
            return "details", "details.eventId must be an eventId"
        sequence = details.get("sequence")
        if "sequence" in details and not (_is_int(sequence) and sequence >= 0):  # type: ignore[operator]
            return "details", "details.sequence must be an integer >= 0"
    return None


def _when(code: str, details: Mapping[str, Any]) -> Mapping[str, Any]:
    return {
        "if": {"properties": {"error": {"const": code}}, "required": ["error"]},
        "then": {"properties": {"details": {"type": "object", **details}}},
    }


# The official envelope's per-code `details` rules, as JSON Schema, for the generated contract.
_DETAILS_RULES: Final[tuple[Mapping[str, Any], ...]] = (
    _when(
        "unsupported_stream_mode",
        {
            "required": ["supported"],
            "properties": {
                "supported": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "enum": list(STREAM_MODES)},
                }
            },
        },
    ),
    _when("run_state_conflict", {"required": ["runStatus"], "properties": {"runStatus": {"type": "string"}}}),
    _when(
        "client_version_unsupported",
        {"properties": {"minClientVersion": {"type": "string", "pattern": _VERSION_RE.pattern}}},
    ),
    _when(
        "payload_unprojectable",
        {
            "additionalProperties": False,
            "required": ["type", "keys"],
            "properties": {
                "type": {"type": "string"},
                "keys": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "eventId": {"type": "string", "pattern": EVENT_ID_PATTERN},
                "sequence": {"type": "integer", "minimum": 0},
            },
        },
    ),
)


class ErrorEnvelope(WireModel):
    """An error response body."""

    error: ErrorCode
    message: NonEmptyStr
    details: JsonObject | None = None

    __wire_all_of__: ClassVar[tuple[Mapping[str, Any], ...]] = _DETAILS_RULES

    @model_validator(mode="after")
    def _details_fit_code(self) -> Self:
        if self.details is not None:
            problem = _details_problem(self.error, self.details)
            if problem is not None:
                raise member_error(problem[0], problem[1], rule="allOf")
        return self

    @classmethod
    def from_error(cls, error: WopError) -> ErrorEnvelope:
        """The envelope for a :class:`WopError`.

        Raises:
            ValueError: The error's code may not appear in an envelope (for example
                ``approval_rejected``, which is only an event error code).
        """
        try:
            return cls.model_validate(error.envelope())
        except pydantic.ValidationError as exc:
            raise ValueError(f"{error.code!r} cannot be sent as an error envelope: {exc}") from exc
