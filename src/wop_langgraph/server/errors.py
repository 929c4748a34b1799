"""Every refusal as the OpenWOP error envelope, and the ``OpenWOP-Version`` header on every response.

:func:`install_error_handlers` maps :class:`~wop_langgraph.protocol.errors.WopError`, FastAPI's own
404/405/422 and any unexpected exception to ``{error, message, details?}`` (``application/json``).
:class:`ProtocolVersionMiddleware` refuses an unsupported ``OpenWOP-Version`` major with 406 and
stamps ``OpenWOP-Version: 2.0`` on every protocol response (errors and 304 included), never on an
HTML page.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wop_langgraph.protocol.errors import (
    InternalError,
    NotFound,
    ProtocolVersionUnsupported,
    ValidationError,
    WopError,
)

__all__ = [
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "ProtocolVersionMiddleware",
    "error_response",
    "install_error_handlers",
]

PROTOCOL_VERSION = "2.0"
SUPPORTED_VERSIONS = ("2.0",)
_VERSION_HEADER = b"openwop-version"
# Bounded digits: int() of a 4,300-digit header raises; nine digits cover any real version.
_VERSION = re.compile(r"^\s*(0|[1-9][0-9]{0,8})(?:\.(0|[1-9][0-9]{0,8}))?\s*$")
_log = logging.getLogger("wop_langgraph.server")


def error_response(error: WopError, headers: dict[str, str] | None = None) -> JSONResponse:
    """The envelope of ``error`` with its registered status (and ``Retry-After`` if it has one)."""
    all_headers = dict(headers or {})
    if error.retry_after is not None:
        all_headers.setdefault("Retry-After", str(error.retry_after))
    if error.status == 401 and error.code == "unauthenticated":
        all_headers.setdefault("WWW-Authenticate", "Bearer")
    return JSONResponse(error.envelope(), status_code=error.status, headers=all_headers)


class MethodNotAllowed(WopError):
    """The path exists but not with this method (no registered code: a vendor code)."""

    code = "wop-langgraph.method_not_allowed"
    status = 405
    retryable = False


def install_error_handlers(app: FastAPI, routes: Sequence[BaseRoute] = ()) -> None:
    """Route every exception the app can raise to an error envelope.

    Args:
        routes: the app's routes, for the ``Allow`` header of a 405 (and of ``OPTIONS``).
    """

    async def on_wop_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, WopError)
        if exc.status >= 500:
            _log.error("internal error on %s %s: %r", request.method, request.url.path, exc)
            exc = InternalError("the host failed to process the request; retry later")
        return error_response(exc)

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        headers = dict(exc.headers or {})
        error: WopError
        if exc.status_code == 404:
            error = NotFound(f"no resource at {request.url.path}")
        elif exc.status_code == 405:
            # Starlette's Allow names the first route matching the path; list every route's methods.
            allowed = allowed_methods(routes, request.scope)
            headers["Allow"] = ", ".join(allowed)
            if request.method == "OPTIONS":
                return Response(status_code=204, headers=headers)
            error = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}")
        elif 400 <= exc.status_code < 500:
            error = ValidationError(str(exc.detail) or "bad request")
        else:
            error = InternalError("the host failed to process the request; retry later")
        return error_response(error, headers)

    async def on_validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = "/".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = f"{first.get('msg', 'invalid request')}" + (f" at {where}" if where else "")
        details: dict[str, Any] = {"path": "/" + where if where else ""}
        return error_response(ValidationError(message, details=details))

    app.add_exception_handler(WopError, on_wop_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """Every method some route serves at the request's path, ``HEAD`` and ``OPTIONS`` included."""
    methods: set[str] = {"OPTIONS"}
    for route in routes:
        if getattr(route, "include_in_schema", True) is False:
            continue  # a route that only refuses methods (routes_fork.py) serves none
        match, child = route.matches({**scope, "method": "GET"})
        # A runId never holds ':' on the wire, so "/runs/{runId}" does not serve "/runs/x:fork".
        if match is not Match.NONE and ":" not in str(child.get("path_params", {}).get("runId", "")):
            methods |= set(getattr(route, "methods", None) or ())
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def requested_major(value: str) -> int | None:
    """The major an ``OpenWOP-Version`` value names (``2`` and ``2.0`` alike), or ``None`` if malformed."""
    match = _VERSION.match(value)
    return int(match.group(1)) if match else None


class ProtocolVersionMiddleware:
    """Negotiate ``OpenWOP-Version`` and stamp it on every non-HTML response (pure ASGI).

    It is the outermost layer, so it also turns an unexpected exception into ``500
    internal_error`` (logged with its stack, sent without it).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = _version_refusal(scope)
        if refusal is not None:
            response = error_response(refusal)
            response.headers["OpenWOP-Version"] = PROTOCOL_VERSION
            await response(scope, receive, send)
            return

        started = False

        async def stamped(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                has_version = any(k.lower() == _VERSION_HEADER for k, _ in headers)
                if not content_type.startswith(b"text/html") and not has_version:
                    headers.append((b"OpenWOP-Version", PROTOCOL_VERSION.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, stamped)
        except Exception:
            # Unexpected: log it with its stack, answer 500 without one (if nothing was sent yet).
            _log.exception("unexpected error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                return
            failure = error_response(InternalError("the host failed to process the request; retry later"))
            await failure(scope, receive, stamped)


def _version_refusal(scope: Scope) -> WopError | None:
    for name, raw in scope.get("headers", []):
        if name.lower() != _VERSION_HEADER:
            continue
        value = raw.decode("latin-1")
        major = requested_major(value)
        if major is None:
            return ValidationError(
                "OpenWOP-Version must be <major> or <major>.<minor>",
                details={"header": "OpenWOP-Version", "protocolVersions": list(SUPPORTED_VERSIONS)},
            )
        if major != 2:
            return ProtocolVersionUnsupported(
                f"protocol major {major} is not served by this host",
                details={"protocolVersions": list(SUPPORTED_VERSIONS)},
            )
    return None
