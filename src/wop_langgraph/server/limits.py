"""Request limits, enforced before any route runs: body size, and JSON bodies the store can hold.

:class:`RequestLimitsMiddleware` reads a request body once (refusing it with ``413
payload_too_large`` as soon as it passes the configured size), parses a JSON body and runs the
host's storability check over all of it (64-bit integers, no NUL, no lone surrogates, nesting
depth, string length), then hands the same bytes to the route. So every client value a route
stores (inputs, metadata, tags, configurable, resume values, reasons, mint bodies) has passed
one check, and a refusal happens before anything is written. The parsed document rides in the
request's scope (:func:`parsed_body`), so a route that reads the body as JSON itself need not
parse it again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wop_langgraph.protocol.errors import PayloadTooLarge, ValidationError, WopError
from wop_langgraph.protocol.storable import require_storable
from wop_langgraph.server.errors import error_response

__all__ = ["RequestLimits", "RequestLimitsMiddleware", "parse_json_body", "parsed_body"]

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: The scope key of the JSON document the middleware parsed (absent: it parsed none).
_PARSED = "wop.parsed_body"


@dataclass(frozen=True)
class RequestLimits:
    """What one request may carry (see :class:`~wop_langgraph.server.settings.Settings`)."""

    max_body_bytes: int
    max_json_depth: int
    max_string_chars: int


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def parse_json_body(raw: bytes, limits: RequestLimits) -> Any:
    """The JSON document in ``raw``, checked to be storable within ``limits``.

    Raises:
        ValidationError: not UTF-8 JSON (``NaN`` and ``Infinity`` included), nested too deep for
            the parser, or not storable (the member is named in ``details.path``).
    """
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError covers malformed JSON and integers past Python's digit limit.
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise ValidationError(
            f"the request body is not valid JSON: {reason}", details={"path": "", "rule": "json"}
        ) from None
    require_storable(document, "", max_depth=limits.max_json_depth, max_string_chars=limits.max_string_chars)
    return document


class RequestLimitsMiddleware:
    """Bound and check request bodies before routing (pure ASGI); see the module docstring."""

    def __init__(self, app: ASGIApp, limits: RequestLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        try:
            raw = await self._read_body(scope, receive)
            if raw and _is_json(scope):
                scope[_PARSED] = parse_json_body(raw, self.limits)
        except WopError as exc:
            await error_response(exc)(scope, receive, send)
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": raw, "more_body": False}

        await self.app(scope, replay, send)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        limit = self.limits.max_body_bytes
        declared = _header(scope, b"content-length")
        # A malformed Content-Length never gets here: the HTTP server refuses it.
        if declared is not None and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
            raise _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def parsed_body(scope: Scope) -> tuple[bool, Any]:
    """``(True, document)`` when :class:`RequestLimitsMiddleware` parsed the request's body as
    JSON (a fresh document of this request's own), else ``(False, None)``."""
    if _PARSED in scope:
        return True, scope[_PARSED]
    return False, None


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the request body is larger than {limit} bytes", details={"maxBodyBytes": limit})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1").strip())
    return None


def _is_json(scope: Scope) -> bool:
    content_type = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
    # FastAPI reads a body without a Content-Type as JSON too.
    return content_type in ("", "application/json") or content_type.endswith("+json")
