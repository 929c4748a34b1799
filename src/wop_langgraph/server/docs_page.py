"""``GET /docs``: the API reference as one self-contained HTML page, rendered from ``/openapi.json``.

FastAPI's Swagger UI loads its script and styles from a CDN (jsDelivr), so on a closed network
it shows a blank page. This page needs nothing but the server: every operation with its
summary, parameters, request body and answers, from the same document ``/openapi.json`` serves
(which any OpenAPI tool can also read).
"""

from __future__ import annotations

import html
import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

__all__ = ["render_docs", "router"]

router = APIRouter()

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
h2{margin-top:2rem;border-bottom:1px solid #ddd}
.op{margin:1rem 0;padding:.6rem .8rem;border:1px solid #ddd;border-radius:6px}
.method{display:inline-block;min-width:4.5rem;font-weight:700;text-transform:uppercase}
.get{color:#0b6e99}.post{color:#2e7d32}.path{font-family:monospace;font-size:1.05rem}
code,pre{background:#f5f5f5;border-radius:4px;padding:.1rem .3rem}pre{padding:.5rem;overflow:auto}
td,th{text-align:left;padding:.2rem .6rem .2rem 0;vertical-align:top}
"""


@router.get("/docs", include_in_schema=False)
def docs(request: Request) -> HTMLResponse:
    """The API reference page (no script, no external resource)."""
    return HTMLResponse(render_docs(request.app.openapi()))


def render_docs(document: dict[str, Any]) -> str:
    """The HTML of the reference for an OpenAPI ``document``."""
    info = document.get("info", {})
    title = html.escape(f"{info.get('title', 'API')} {info.get('version', '')}".strip())
    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>",
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>",
        "<p>Calls that need an API key take it as <code>Authorization: Bearer &lt;key&gt;</code>. "
        "The machine-readable document is <a href='/openapi.json'>/openapi.json</a>.</p>",
    ]
    for path, item in sorted(document.get("paths", {}).items()):
        for method, operation in item.items():
            parts.append(_operation(path, method, operation, document))
    parts.append("</body></html>")
    return "".join(parts)


def _operation(path: str, method: str, operation: dict[str, Any], document: dict[str, Any]) -> str:
    secured = bool(operation.get("security"))
    out = [
        f"<div class='op' id='{html.escape(operation.get('operationId', path + method))}'>",
        f"<span class='method {html.escape(method)}'>{html.escape(method)}</span>",
        f"<span class='path'>{html.escape(path)}</span>",
        " (API key)" if secured else " (no API key)",
    ]
    if operation.get("description") or operation.get("summary"):
        text = operation.get("description") or operation.get("summary")
        out.append(f"<p>{html.escape(str(text))}</p>")
    parameters = operation.get("parameters", [])
    if parameters:
        out.append("<table><tr><th>parameter</th><th>in</th><th>schema</th></tr>")
        for parameter in parameters:
            name = html.escape(parameter["name"]) + (" *" if parameter.get("required") else "")
            grammar = html.escape(json.dumps(parameter.get("schema", {}), sort_keys=True))
            out.append(f"<tr><td><code>{name}</code></td><td>{html.escape(parameter['in'])}</td>")
            out.append(f"<td><code>{grammar}</code></td></tr>")
        out.append("</table>")
    body = operation.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        schema = _resolve(content.get("schema", {}), document)
        shown = html.escape(json.dumps(schema, indent=1))
        out.append(f"<p>Body ({html.escape(media)}):</p><pre>{shown}</pre>")
    answers = ", ".join(
        f"{html.escape(status)} {html.escape(str(answer.get('description', '')))}"
        for status, answer in sorted(operation.get("responses", {}).items())
    )
    out.append(f"<p>Answers: {answers}</p></div>")
    return "".join(out)


def _resolve(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """A ``#/components/schemas/...`` reference replaced by what it names (one level)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        resolved = document.get("components", {}).get("schemas", {}).get(ref.rsplit("/", 1)[-1])
        if isinstance(resolved, dict):
            return resolved
    return schema
