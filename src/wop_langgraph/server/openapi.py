"""``/openapi.json``: FastAPI's document, completed so that it describes what the server really does.

FastAPI documents the routes and the closed bodies. This module adds what it cannot see: the
statuses each operation really answers (every refusal in the OpenWOP error envelope, and no
``422`` where none is returned), the bearer API key, the path and header grammars the routes
enforce, the SSE and HTML media types, and 64-bit bounds on integers. The table below is the
contract; ``tests/server/test_schemathesis.py`` holds the server to it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from wop_langgraph.host.listing import CURSOR_PATTERN
from wop_langgraph.protocol.egress import MAX_URL_LENGTH, callback_url_pattern
from wop_langgraph.protocol.official import configurable_schema
from wop_langgraph.protocol.storable import INT64_MAX, INT64_MIN
from wop_langgraph.server.idempotency import KEY_PATTERN
from wop_langgraph.server.limits import RequestLimits
from wop_langgraph.server.routes_lists import TAG_PATTERN

__all__ = ["install_openapi"]

#: Answered by any operation: a malformed ``OpenWOP-Version`` (400) or an unserved major (406).
_ANY = (400, 406)
_BODY = (413,)
_KEYED = (401, 403)

#: (path, method) -> (security, extra error statuses). ``security`` is whether an API key is needed.
_OPERATIONS: dict[tuple[str, str], tuple[bool, tuple[int, ...]]] = {
    ("/.well-known/openwop", "get"): (False, ()),
    ("/runs", "post"): (True, (*_KEYED, *_BODY, 404, 409, 422)),
    ("/runs", "get"): (True, _KEYED),
    ("/interrupts", "get"): (True, _KEYED),
    ("/runs/{runId}", "get"): (True, (*_KEYED, 404)),
    ("/runs/{runId}/receipts", "get"): (True, (*_KEYED, 404)),
    ("/.well-known/wop-receipt-keys", "get"): (False, ()),
    ("/runs/{runId}/cancel", "post"): (True, (*_KEYED, *_BODY, 404, 409)),
    ("/runs/{runId}:fork", "post"): (True, (*_KEYED, *_BODY, 404, 409, 422)),
    ("/host/effect-seams", "get"): (False, ()),
    ("/runs/{runId}/interrupts/{nodeId}", "post"): (True, (*_KEYED, *_BODY, 404, 409)),
    ("/runs/{runId}/interrupts/{nodeId}/tokens", "post"): (True, (*_KEYED, *_BODY, 404, 409, 410, 422)),
    ("/runs/{runId}/events", "get"): (True, (*_KEYED, 404, 429)),
    ("/runs/{runId}/events/poll", "get"): (True, (*_KEYED, 404, 429)),
    ("/interrupts/{token}", "get"): (False, (401, 404, 409, 410)),
    ("/interrupts/{token}", "post"): (False, (*_BODY, 401, 403, 404, 409, 410)),
    ("/interrupts/{token}/form", "post"): (False, (*_BODY, 401, 403, 404, 409, 410)),
    ("/inbox-links", "post"): (True, (*_KEYED, *_BODY, 422)),
    ("/inbox/{inboxToken}", "get"): (False, (401, 410)),
}
_HTML_ONLY = {("/interrupts/{token}/form", "post"), ("/inbox/{inboxToken}", "get")}
_FORMS = {("/interrupts/{token}/form", "post")}
_CONDITIONAL = {
    ("/.well-known/openwop", "get"),
    ("/.well-known/wop-receipt-keys", "get"),
    ("/runs/{runId}", "get"),
}
_SSE = ("/runs/{runId}/events", "get")
_BROWSER_PAGE = ("/interrupts/{token}", "get")

_RUN_ID_WIRE = r"^(anon~3A)?[A-Za-z0-9._-]{1,128}~2F[A-Za-z0-9._-]{16,128}$"
_NODE_ID_WIRE = r"^[A-Za-z0-9._:-]{1,128}$"
_TOKEN = r"^ow2\.[A-Za-z0-9._~-]{1,4096}$"
_PARAMETERS: dict[str, dict[str, Any]] = {
    "runId": {
        "type": "string",
        "pattern": _RUN_ID_WIRE,
        "description": "A tenant-bound run id, projected to one segment: <tenant>~2F<opaque>.",
    },
    "nodeId": {"type": "string", "pattern": _NODE_ID_WIRE},
    "token": {"type": "string", "pattern": _TOKEN, "description": "An ow2 interrupt token."},
    # The inbox page checks its cursor itself (a bad one gets a page, not JSON); documented here.
    "cursor": {"type": "string", "pattern": CURSOR_PATTERN, "description": "The previous page's nextCursor."},
    "inboxToken": {
        "type": "string",
        "pattern": r"^owi1\.hs256\.[A-Za-z0-9._~-]{1,4096}$",
        "description": "An owi1 inbox token (lists one approver's requests; answers nothing).",
    },
    "Idempotency-Key": {"type": "string", "pattern": KEY_PATTERN.pattern},
    "Last-Event-ID": {
        "type": "string",
        "pattern": r"^(-1|0|[1-9][0-9]{0,17})$",
        "description": "Resume after this event sequence.",
    },
    "streamMode": {"type": "string", "pattern": r"^(updates|debug)(,(updates|debug))*$"},
    "createdAfter": {"type": "string", "format": "date-time", "description": "Created at or after."},
    "createdBefore": {"type": "string", "format": "date-time", "description": "Created before."},
    "tag": {
        "anyOf": [{"type": "array", "items": {"type": "string", "pattern": TAG_PATTERN}}, {"type": "null"}],
        "description": "Runs carrying this tag (repeatable: all of them).",
    },
}
_REASONS = {
    304: "Not modified (the ETag in If-None-Match is current)",
    400: "Invalid request (validation_error, idempotency_key_invalid, unsupported_stream_mode)",
    401: "Missing or unknown credential (unauthenticated, interrupt_token_invalid)",
    403: "Not allowed (forbidden, id_tenant_mismatch)",
    404: "No such run, node or interrupt (not_found)",
    406: "Unserved protocol major (protocol_version_unsupported)",
    409: "Conflict (interrupt_already_resolved, run_terminal, idempotency_key_mismatch or _in_flight)",
    410: "The token or the interrupt has expired (interrupt_expired)",
    413: "The request body is too large (payload_too_large)",
    422: "Not offered by this host (residency_unavailable; capability_not_provided: no public URL for links; "
    "fork_point_invalid)",
    429: "Too many open streams for this caller or server (rate_limited, with Retry-After)",
}
_ERROR_ENVELOPE: dict[str, Any] = {
    "title": "ErrorEnvelope",
    "description": "The OpenWOP error envelope (error-envelope.schema.json).",
    "type": "object",
    "additionalProperties": False,
    "required": ["error", "message"],
    "properties": {
        "error": {"type": "string", "minLength": 1},
        "message": {"type": "string"},
        "details": {"type": "object"},
    },
}
_HTML = {"text/html": {"schema": {"type": "string"}}}
_BODIES = (
    "CreateRunBody",
    "CancelRunBody",
    "ResolveBody",
    "MintTokenBody",
    "ForkRunBody",
    "RunOptionsOverlay",
)
_STORABLE_REF = "#/components/schemas/StorableJson"
# No NUL; JSON text cannot carry a lone surrogate that a schema-valid client would send.
_TEXT = r"^[^\u0000]*$"
#: What the egress guard accepts at registration, as far as a pattern can say it: every URL the
#: pattern admits, the guard admits (tests/server/test_openapi.py holds the two to that).
_CALLBACK_URL: dict[str, Any] = {
    "type": "string",
    "format": "uri",
    "maxLength": MAX_URL_LENGTH,
    "pattern": callback_url_pattern(),
    "description": (
        "Where the host POSTs a suspended run's interrupts: https:// to a public DNS name "
        "(not localhost, a cloud metadata name, or a special-use domain such as .local, .internal, "
        ".test, .invalid, .onion, .alt, .home.arpa), with an optional port, path, query or fragment. "
        "Every URL this pattern admits passes the egress guard when the run is created. The guard "
        "refuses more than a pattern can express only at delivery: a name whose DNS answer holds a "
        "private, loopback, link-local or otherwise non-public address is not called. "
        "Public IP literals, upper case and percent-escapes are accepted by the guard but not described here."
    ),
}


def install_openapi(app: FastAPI, limits: RequestLimits, workflow_ids: Callable[[], list[str]]) -> None:
    """Make ``app.openapi()`` (served at ``/openapi.json``) return the completed document.

    It is built on first use, so it lists the workflows registered by then.
    """

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(title=app.title, version=app.version, routes=app.routes)
            app.openapi_schema = complete(document, limits, sorted(workflow_ids()))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def complete(document: dict[str, Any], limits: RequestLimits, workflow_ids: list[str]) -> dict[str, Any]:
    """``document`` with the statuses, security, grammars and media types of the table above."""
    document = copy.deepcopy(document)
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas["ErrorEnvelope"] = _ERROR_ENVELOPE
    schemas["StorableJson"] = _storable_json(limits)
    components["securitySchemes"] = {
        "apiKey": {"type": "http", "scheme": "bearer", "description": "An API key from WOP_API_KEYS."}
    }
    if "CreateRunBody" in schemas:
        properties = schemas["CreateRunBody"]["properties"]
        properties["configurable"] = {"anyOf": [_configurable_schema(), {"type": "null"}]}
        properties["callbackUrl"] = {"anyOf": [_CALLBACK_URL, {"type": "null"}]}
        properties["workflowId"] = {"type": "string", "enum": workflow_ids, "title": "Workflowid"}
    if "RunOptionsOverlay" in schemas:
        overlay = schemas["RunOptionsOverlay"]["properties"]
        overlay["configurable"] = {"anyOf": [_configurable_schema(), {"type": "null"}]}
    for name in _BODIES:
        if name in schemas:
            schemas[name] = _storable_members(schemas[name], limits)
    for (path, method), operation in _operations(document):
        secured, statuses = _OPERATIONS[(path, method)]
        operation["security"] = [{"apiKey": []}] if secured else []
        responses = operation["responses"]
        if responses.get("422", {}).get("description") == "Validation Error":
            del responses["422"]
        if (path, method) in _CONDITIONAL:
            responses["304"] = {"description": _REASONS[304]}
        for status in sorted({*_ANY, *statuses}):
            content = _HTML if (path, method) in _HTML_ONLY else _error_content()
            responses[str(status)] = {"description": _REASONS[status], "content": content}
        for parameter in operation.get("parameters", []):
            extra = _PARAMETERS.get(parameter["name"])
            if extra is not None:
                parameter["schema"] = {**extra, "title": parameter["schema"].get("title", parameter["name"])}
        if (path, method) in _HTML_ONLY:
            responses["200"]["content"] = _HTML
        if (path, method) in _FORMS:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}},
            }
    _media(document, _SSE, {"text/event-stream": {"schema": {"type": "string"}}})
    _media(document, _BROWSER_PAGE, {"application/json": {"schema": {"type": "object"}}, **_HTML})
    _bound_integers(document)
    return document


def _operations(document: dict[str, Any]) -> Iterator[tuple[tuple[str, str], dict[str, Any]]]:
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if (path, method) in _OPERATIONS:
                yield (path, method), operation


def _media(document: dict[str, Any], where: tuple[str, str], content: dict[str, Any]) -> None:
    operation = document["paths"].get(where[0], {}).get(where[1])
    if operation is not None:
        operation["responses"]["200"]["content"] = content


def _error_content() -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}


def _configurable_schema() -> dict[str, Any]:
    schema = copy.deepcopy(configurable_schema())
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    # This host reads escalationThreshold as a percentage (ARCHITECTURE: decisions taken).
    threshold = schema["properties"]["run"]["properties"]["escalationThreshold"]
    threshold["maximum"] = 100
    return schema


def _storable_json(limits: RequestLimits) -> dict[str, Any]:
    """Any JSON value the server stores (see ``require_storable``); nesting depth is not expressed."""
    text = {"type": "string", "pattern": _TEXT, "maxLength": limits.max_string_chars}
    return {
        "description": "Any JSON value without NUL, lone surrogates or numbers beyond 64 bits.",
        "anyOf": [
            {"type": "null"},
            {"type": "boolean"},
            {"type": "number", "minimum": INT64_MIN, "maximum": INT64_MAX},
            text,
            {"type": "array", "items": {"$ref": _STORABLE_REF}},
            {"type": "object", "propertyNames": text, "additionalProperties": {"$ref": _STORABLE_REF}},
        ],
    }


def _storable_members(node: Any, limits: RequestLimits) -> Any:
    """A body schema whose free-form members are :func:`_storable_json` and whose strings have no NUL."""
    if isinstance(node, list):
        return [_storable_members(item, limits) for item in node]
    if not isinstance(node, dict):
        return node
    if _is_free_form(node):
        return {
            **{k: v for k, v in node.items() if k in ("title", "description", "default")},
            "$ref": _STORABLE_REF,
        }
    out = {key: _storable_members(value, limits) for key, value in node.items()}
    if out.get("additionalProperties") is True:
        out["additionalProperties"] = {"$ref": _STORABLE_REF}
    if out.get("type") == "object":
        # An open object (no additionalProperties) takes any storable member under any key.
        out.setdefault("additionalProperties", {"$ref": _STORABLE_REF})
        out.setdefault("propertyNames", {"pattern": _TEXT})
    if out.get("type") == "string":
        out.setdefault("pattern", _TEXT)
        out.setdefault("maxLength", limits.max_string_chars)
    return out


def _is_free_form(node: dict[str, Any]) -> bool:
    # pydantic renders Any as a schema with no constraint, only a title or default.
    return not (set(node) - {"title", "description", "default"})


def _bound_integers(node: Any) -> None:
    """Give every integer schema the 64-bit bounds the store enforces."""
    if isinstance(node, dict):
        if node.get("type") == "integer":
            node.setdefault("minimum", INT64_MIN)
            node.setdefault("maximum", INT64_MAX)
        for value in node.values():
            _bound_integers(value)
    elif isinstance(node, list):
        for value in node:
            _bound_integers(value)
