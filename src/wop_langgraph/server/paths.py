"""Tenant-bound ids in URL paths: ``~2F`` (and ``%2F``) decoding, grammar and tenant checks.

Starlette decodes ``%2F`` to ``/`` before routing, which would split ``acme%2Fr-…`` into two
segments; :class:`SlashEscapeMiddleware` rewrites ``%2F`` in the raw path to the projection's own
``~2F`` first, so both spellings reach the route as one segment and decode the same way.

Percent-escapes are decoded exactly once, by the HTTP layer: a ``%`` left in a segment came from
``%25`` and is a literal percent sign, never a second escape (``acme%252F<id>`` is not
``acme/<id>``), so it is refused by the id grammar.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from wop_langgraph.host import Principal
from wop_langgraph.protocol.errors import IdTenantMismatch, ValidationError
from wop_langgraph.protocol.ids import AUTHOR_ID_PATTERN, TENANT_BOUND_ID_PATTERN, project_id, unproject_id
from wop_langgraph.server.state import state_of

__all__ = ["SlashEscapeMiddleware", "bounded_path_ids", "node_id_from_path", "project_id", "run_id_from_path"]

_ENCODED_SLASH = re.compile(rb"%2[fF]")
_TENANT_BOUND = re.compile(TENANT_BOUND_ID_PATTERN)
_NODE_ID = re.compile(AUTHOR_ID_PATTERN)
_NODE_PATH = re.compile(r"^[A-Za-z0-9._~:-]{1,128}(/[A-Za-z0-9._~:-]{1,128})*$")


class SlashEscapeMiddleware:
    """Rewrite ``%2F`` in the request path to ``~2F`` before routing (pure ASGI)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path")
        if scope["type"] == "http" and isinstance(raw, bytes) and _ENCODED_SLASH.search(raw):
            rewritten = _ENCODED_SLASH.sub(b"~2F", raw)
            scope = {**scope, "raw_path": rewritten, "path": unquote(rewritten.decode("latin-1"))}
        await self.app(scope, receive, send)


def run_id_from_path(segment: str, principal: Principal | None) -> str:
    """Decode a ``runId`` path segment and check it belongs to ``principal``'s tenant.

    Raises:
        ValidationError: a bad ``~`` escape, or a decoded id outside the tenant-bound grammar.
        IdTenantMismatch: the id names another tenant (whether the run exists is not disclosed).
    """
    run_id = _decode(segment)
    if not _TENANT_BOUND.fullmatch(run_id):
        raise ValidationError(
            "runId must be <tenant>/<opaque> (written <tenant>~2F<opaque> in a path)",
            details={"path": "/runId"},
        )
    if principal is not None and run_id.partition("/")[0] != principal.tenant:
        raise IdTenantMismatch("the run id names another tenant than the caller's")
    return run_id


def _decode(segment: str) -> str:
    """Decode the projection's ``~HH`` escapes only (see the module docstring)."""
    # unproject_id also reads %HH; a literal '%' is escaped first so that it stays a '%'.
    return unproject_id(segment.replace("%", "~25"))


async def bounded_path_ids(request: Request) -> None:
    """Refuse a ``runId`` or ``nodeId`` path segment longer than ``max_id_chars`` (a dependency;
    ``async``, on the event loop, since it does no I/O).

    Raises:
        ValidationError: the segment's name is in ``details.path``.
    """
    limit = state_of(request).settings.max_id_chars
    for name in ("runId", "nodeId"):
        value = request.path_params.get(name)
        if isinstance(value, str) and len(value) > limit:
            raise ValidationError(
                f"{name} is longer than {limit} characters", details={"path": f"/{name}", "rule": "maxLength"}
            )


def node_id_from_path(segment: str) -> str:
    """Decode a ``nodeId`` path segment (``~XX`` escapes decoded).

    Raises:
        ValidationError: a bad escape, or an id outside the nodeId grammar.
    """
    node_id = _decode(segment)
    if not (_NODE_ID.fullmatch(node_id) or _NODE_PATH.fullmatch(node_id)):
        raise ValidationError("nodeId is outside the nodeId grammar", details={"path": "/nodeId"})
    return node_id
