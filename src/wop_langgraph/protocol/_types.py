"""Small annotated types shared by the wire models: bounded strings, JSON numbers, dates, URLs.

Each type carries its JSON Schema keywords so the generated contract (``schemas/``) states the
same bound the model enforces.
"""

from __future__ import annotations

import calendar
import re
from typing import Annotated, Any, Final, TypeVar
from urllib.parse import urlsplit

from annotated_types import Ge, Le
from pydantic import AfterValidator, BeforeValidator, JsonValue, StringConstraints, WithJsonSchema

__all__ = [
    "AS_INT",
    "DateTimeStr",
    "HttpsUrl",
    "JsonInt",
    "JsonObject",
    "NonEmptyStr",
    "NonNegativeInt",
    "PositiveInt",
    "Probability",
    "ShortReason",
    "is_rfc3339_datetime",
    "json_equal",
    "require_unique",
]

T = TypeVar("T")

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
"""A string with at least one character (``minLength: 1``)."""

ShortReason = Annotated[str, StringConstraints(min_length=1, max_length=64)]
"""The host-grown cause axis of ``node.suspended`` / ``interrupt.resolved`` (1..64 chars)."""


def _integral_float_to_int(value: Any) -> Any:
    # JSON Schema's "integer" is a number with a zero fractional part, so 5.0 is an integer.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


AS_INT: Final = BeforeValidator(_integral_float_to_int)
"""Annotation metadata turning an integral float (``5.0``) into an ``int``, as JSON Schema allows."""

# Bounds go before the coercion so pydantic applies them to the integer schema itself (and
# states them as `minimum` in the JSON Schema), with the coercion wrapped around it.
JsonInt = Annotated[int, AS_INT]
"""A JSON Schema ``integer``: an ``int``, or a float such as ``5.0`` with no fractional part."""
NonNegativeInt = Annotated[int, Ge(0), AS_INT]
PositiveInt = Annotated[int, Ge(1), AS_INT]

Probability = Annotated[float, Ge(0), Le(1)]
"""A number in ``[0, 1]``: confidences and thresholds. NaN and infinities never pass."""

JsonObject = dict[str, JsonValue]
"""A JSON object whose members are any JSON values."""

# RFC 3339 §5.6 ``date-time``, the grammar JSON Schema's ``format: date-time`` names.
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)


def is_rfc3339_datetime(value: str) -> bool:
    """Whether ``value`` is an RFC 3339 ``date-time`` with an explicit offset.

    Field ranges are checked as well as the shape (no month 13, no February 30), and a leap
    second (``:60``) is admitted as RFC 3339 allows.
    """
    match = _RFC3339.fullmatch(value)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
        return False
    if hour > 23 or minute > 59 or second > 60:
        return False
    # A numeric offset must itself be a valid hh:mm.
    return match.group(9) is None or (int(match.group(10)) <= 23 and int(match.group(11)) <= 59)


def _check_datetime(value: str) -> str:
    if not is_rfc3339_datetime(value):
        raise ValueError("must be an RFC 3339 date-time with an offset, e.g. 2025-06-01T12:00:00Z")
    return value


DateTimeStr = Annotated[
    str,
    AfterValidator(_check_datetime),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""An ISO 8601 / RFC 3339 timestamp kept as the exact string the producer wrote.

Kept as text, not ``datetime``, so a recorded event re-serialises byte-for-byte.
"""


def _check_https_url(value: str) -> str:
    # The schema's own pattern is only `^https://`; the parse below also refuses a URL with no
    # host or with whitespace, which no host could serve as its own origin.
    if not value.startswith("https://"):
        raise ValueError("must be an https:// URL")
    if any(ch.isspace() or ord(ch) < 0x20 for ch in value):
        raise ValueError("must not contain whitespace or control characters")
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        raise ValueError(f"is not a valid URL: {exc}") from exc
    if not parts.hostname:
        raise ValueError("must name a host")
    return value


HttpsUrl = Annotated[
    str,
    AfterValidator(_check_https_url),
    WithJsonSchema({"type": "string", "format": "uri", "pattern": "^https://"}),
]
"""An absolute ``https://`` URI with a host."""


def json_equal(left: Any, right: Any) -> bool:
    """JSON equality: like ``==`` but ``true`` is never ``1`` and ``false`` never ``0``.

    Python's ``True == 1`` would let a schema ``const`` match a value JSON Schema refuses.
    """
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, (dict, list)) or isinstance(right, (dict, list)):
        return False
    return bool(left == right)


def require_unique(items: list[T]) -> list[T]:
    """Refuse a sequence holding the same JSON value twice (``uniqueItems: true``)."""
    for index, item in enumerate(items):
        if any(json_equal(item, earlier) for earlier in items[:index]):
            raise ValueError(f"items must be unique; {item!r} appears more than once")
    return items
