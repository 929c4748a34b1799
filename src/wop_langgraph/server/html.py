"""The reviewer page: a plain server-rendered HTML view of one interrupt, with a form (no JavaScript).

``GET /interrupts/{token}`` with ``Accept: text/html`` shows the interrupt (title, artifact,
questions, allowed actions); the form POSTs ``application/x-www-form-urlencoded`` to
``/interrupts/{token}/form``, which resolves through the same path as the JSON surface and shows
the outcome. A bad, expired or used link shows a plain message. HTML responses never carry
``OpenWOP-Version`` (they are not protocol responses).
"""

from __future__ import annotations

import json
from html import escape
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from wop_langgraph.protocol.errors import ValidationError, WopError
from wop_langgraph.server.state import ServerState, server_state
from wop_langgraph.server.token_actions import inspect_token, resolve_with_token

__all__ = ["review_page", "router", "wants_html"]

router = APIRouter()
_MAX_FORM_BYTES = 64 * 1024
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;line-height:1.5}"
    "pre{background:#f4f4f4;padding:.75rem;overflow:auto}label{display:block;margin-top:.75rem}"
    "textarea,input[type=text]{width:100%}button{margin:.75rem .5rem 0 0;padding:.4rem 1rem}"
)
_FAILURE_TITLES = {
    "interrupt_expired": "This link has expired",
    "interrupt_already_resolved": "This request was already answered",
    "interrupt_token_invalid": "This link is not valid",
    "forbidden": "This link only allows viewing",
    "not_found": "This request no longer exists",
    "validation_error": "The answer was not accepted",
}


def wants_html(request: Request) -> bool:
    """Whether the client prefers HTML to JSON (a browser's ``Accept``)."""
    accept = request.headers.get("accept", "").lower()
    return "text/html" in accept and "application/json" not in accept.split(",")[0]


def review_page(state: ServerState, token: str) -> HTMLResponse:
    """The page for ``token``: the interrupt and its form, or why it cannot be answered."""
    try:
        payload = inspect_token(state, token)
    except WopError as exc:
        return _failure(exc)
    return _page("Review request", _describe(payload) + _form(token, payload))


@router.post("/interrupts/{token}/form")
async def submit_form(
    token: str, request: Request, state: Annotated[ServerState, Depends(server_state)]
) -> HTMLResponse:
    """Resolve from the reviewer form and show the outcome."""
    raw = await request.body()
    if len(raw) > _MAX_FORM_BYTES:
        return _page("The answer is too large", "<p>Please shorten it and try again.</p>", status=413)
    fields = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
    try:
        payload = await run_in_threadpool(inspect_token, state, token)
        value = _resume_value(payload, fields)
        _, result = await run_in_threadpool(resolve_with_token, state, token, value)
    except WopError as exc:
        return _failure(exc)
    return _page(
        "Thank you — your answer was recorded",
        f"<p>The run is now <strong>{escape(str(result['status']))}</strong>.</p>",
    )


def _describe(payload: dict[str, Any]) -> str:
    kind = str(payload.get("kind", ""))
    data = payload.get("data") or {}
    parts = [f"<p>Kind: <code>{escape(kind)}</code></p>"]
    if kind == "approval":
        parts.append(f"<h2>{escape(str(data.get('title', '')))}</h2>")
        if data.get("description"):
            parts.append(f"<p>{escape(str(data['description']))}</p>")
        parts.append(
            f"<p>Artifact <code>{escape(str(data.get('artifactId', '')))}</code> "
            f"({escape(str(data.get('artifactType', '')))})</p>"
        )
        if "artifactData" in data:
            parts.append(f"<pre>{_pretty(data['artifactData'])}</pre>")
        actions = ", ".join(escape(str(a)) for a in data.get("actions", []))
        parts.append(f"<p>Allowed actions: {actions}</p>")
    elif kind == "clarification":
        parts.append("<h2>Questions</h2><ol>")
        parts.extend(f"<li>{escape(str(q.get('question', '')))}</li>" for q in data.get("questions", []))
        parts.append("</ol>")
    else:
        parts.append(f"<pre>{_pretty(data)}</pre>")
    return "".join(parts)


def _form(token: str, payload: dict[str, Any]) -> str:
    kind = payload.get("kind")
    data = payload.get("data") or {}
    action = f"/interrupts/{escape(token, quote=True)}/form"
    body: list[str] = []
    if kind == "approval":
        body.append('<label>Feedback (optional)<textarea name="feedback" rows="3"></textarea></label>')
        for name in data.get("actions", []):
            if name in ("accept", "reject", "refine", "ask"):
                label = escape(str(name)).capitalize()
                body.append(
                    f'<button type="submit" name="action" value="{escape(str(name))}">{label}</button>'
                )
    elif kind == "clarification":
        for question in data.get("questions", []):
            qid = escape(str(question.get("id", "")), quote=True)
            text = escape(str(question.get("question", "")))
            body.append(f'<label>{text}<input type="text" name="answer.{qid}" required></label>')
        body.append('<button type="submit">Send answers</button>')
    else:
        body.append('<label>Answer (JSON)<textarea name="resumeValue" rows="6" required></textarea></label>')
        body.append('<button type="submit">Send</button>')
    return f'<form method="post" action="{action}">{"".join(body)}</form>'


def _resume_value(payload: dict[str, Any], fields: dict[str, str]) -> Any:
    """Build the resume value from the form fields (validated by the host like any other)."""
    kind = payload.get("kind")
    if kind == "approval":
        action = fields.get("action", "")
        feedback = fields.get("feedback", "").strip()
        if action == "refine":
            if not feedback:
                raise ValidationError("refine needs feedback saying what to change")
            return {"action": "refine", "refineFeedback": {"scope": "whole", "text": feedback}}
        value: dict[str, Any] = {"action": action}
        if feedback:
            value["feedback"] = feedback
        return value
    if kind == "clarification":
        answers: dict[str, Any] = {}
        for question in (payload.get("data") or {}).get("questions", []):
            text = fields.get(f"answer.{question.get('id')}", "")
            answers[str(question.get("id"))] = _typed(text, question.get("schema"))
        return {"answers": answers}
    try:
        return json.loads(fields.get("resumeValue", ""))
    except ValueError:
        raise ValidationError("the answer must be valid JSON") from None


def _typed(text: str, schema: Any) -> Any:
    """Read a form text as the JSON type its question's schema expects, when that is simple."""
    wanted = schema.get("type") if isinstance(schema, dict) else None
    try:
        if wanted == "integer":
            return int(text)
        if wanted == "number":
            return float(text)
        if wanted == "boolean":
            return text.strip().lower() in ("true", "yes", "1", "on")
    except ValueError:
        return text
    return text


def _failure(exc: WopError) -> HTMLResponse:
    title = _FAILURE_TITLES.get(exc.code, "This request could not be completed")
    status = exc.status if exc.status < 500 else 500
    message = exc.message if exc.status < 500 else "Something went wrong on our side; please try again later."
    return _page(title, f"<p>{escape(message)}</p>", status=status)


def _page(title: str, content: str, *, status: int = 200) -> HTMLResponse:
    document = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{content}</body></html>"
    )
    headers = {
        "Cache-Control": "no-store",
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    }
    return HTMLResponse(document, status_code=status, headers=headers)


def _pretty(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return escape(text)
