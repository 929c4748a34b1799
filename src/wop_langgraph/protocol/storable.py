"""What every backend can store and serve back unchanged: the one check for client JSON values.

Pure: no I/O. The host applies it to everything it stores from a caller (inputs, metadata, tags,
configurable, resume values); the server applies it to whole request bodies with its configured
limits, before any route runs.
"""

from __future__ import annotations

from typing import Any, Final, NoReturn

from wop_langgraph.protocol.errors import ValidationError

__all__ = ["INT64_MAX", "INT64_MIN", "STORABLE_MAX_DEPTH", "require_storable"]

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
#: The deepest nesting any stored value may have: the serializers on the way to the store give
#: up between 254 and 975 levels, and no OpenWOP document comes near this.
STORABLE_MAX_DEPTH: Final = 128


def require_storable(
    value: Any,
    path: str,
    *,
    max_depth: int = STORABLE_MAX_DEPTH,
    max_string_chars: int | None = None,
) -> None:
    """Refuse a value that every backend could not store and serve back unchanged.

    Allowed: ``None``, booleans, numbers in the signed 64-bit range, strings and
    object keys that are valid Unicode without NUL, lists and string-keyed objects nested at
    most ``max_depth`` levels. PostgreSQL's ``jsonb`` refuses NUL, lone surrogates and
    non-finite numbers deep inside a transaction; the checkpoint serializer refuses integers
    beyond 64 bits after a decision was recorded; deep nesting exceeds the serializers' depth.
    Checking first turns each of those into a ``validation_error`` before anything is written.

    Args:
        path: JSON pointer of ``value`` in the request, used in the error's ``details.path``.
        max_depth: deepest nesting allowed (a scalar is depth 0, ``[1]`` is depth 1); at most
            :data:`STORABLE_MAX_DEPTH`.
        max_string_chars: longest string or key allowed (no bound when ``None``).

    Raises:
        ValidationError: the first offending member, named in ``details.path``.
    """
    depth_cap = min(max_depth, STORABLE_MAX_DEPTH)
    # Iterative walk: a hostile value may be nested far deeper than Python's recursion limit.
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, str):
            _check_string(item, where, max_string_chars)
        elif isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                _refuse(where, "int64", "an integer outside the signed 64-bit range")
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                _refuse(where, "json", "NaN or Infinity (not JSON)")
            # One rule for every number, however it was spelled: 1e19 and 10**19 alike.
            if not INT64_MIN <= item <= INT64_MAX:
                _refuse(where, "int64", "a number outside the signed 64-bit range")
        elif isinstance(item, (list, tuple, dict)):
            if depth >= depth_cap:
                _refuse(where, "depth", f"nesting deeper than {depth_cap} levels")
            if isinstance(item, dict):
                for key, member in item.items():
                    if not isinstance(key, str):
                        _refuse(where, "json", "an object key that is not a string")
                    _check_string(key, where, max_string_chars, what="key")
                    stack.append((member, f"{where}/{_pointer_token(key)}", depth + 1))
            else:
                stack.extend((member, f"{where}/{i}", depth + 1) for i, member in enumerate(item))
        else:
            _refuse(where, "json", f"a {type(item).__name__} (not a JSON value)")


def _check_string(text: str, where: str, max_chars: int | None, what: str = "string") -> None:
    if max_chars is not None and len(text) > max_chars:
        _refuse(where, "maxLength", f"a {what} longer than {max_chars} characters")
    if "\x00" in text:
        _refuse(where, "nul", f"a {what} containing NUL (\\u0000)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        _refuse(where, "unicode", f"a {what} containing a lone surrogate (not Unicode text)")


def _pointer_token(key: str) -> str:
    # Keep the pointer printable and short: it is echoed in the error message.
    token = key.replace("~", "~0").replace("/", "~1")
    return token if len(token) <= 64 and token.isprintable() else "<key>"


def _refuse(where: str, rule: str, problem: str) -> NoReturn:
    raise ValidationError(
        f"{where or 'the value'} holds {problem}; it cannot be stored",
        details={"path": where, "rule": rule},
    )
