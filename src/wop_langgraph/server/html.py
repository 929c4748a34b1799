"""The reviewer page: a plain server-rendered HTML view of one interrupt, with forms (no JavaScript).

``GET /interrupts/{token}`` with ``Accept: text/html`` shows who asked (workflow, step, run), when
the link expires, what is asked and one form per possible answer. The forms POST
``application/x-www-form-urlencoded`` to ``/interrupts/{token}/form``, which resolves through the
same path as the JSON surface. A refused answer re-shows the page filled in with what the
reviewer typed, the reason beside the field; an accepted one shows the decision recorded. A bad,
expired or used link says what happened and what to do, in a reviewer's words. HTML responses
never carry ``OpenWOP-Version`` (they are not protocol responses).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from html import escape
from typing import Annotated, Any, Final
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from wop_langgraph._clock import as_utc
from wop_langgraph.kinds import Options, page_for
from wop_langgraph.kinds.review.fields import Form, FormRefused, reviewer_message
from wop_langgraph.proof.chain import json_digest
from wop_langgraph.protocol.errors import ValidationError, WopError
from wop_langgraph.server.state import ServerState, server_state
from wop_langgraph.server.token_actions import TokenReview, resolve_with_token, review_token

__all__ = ["html_page", "readable_time", "review_page", "router", "wants_html"]

router = APIRouter()
_MAX_FORM_BYTES: Final = 64 * 1024
_STYLE: Final = (
    "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5;"
    "color:#1d1d1f}h1{font-size:1.6rem;margin-bottom:.5rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}"
    "h2 small{font-weight:normal;color:#666;font-size:.85rem}"
    ".meta{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:0 0 1rem;color:#444;"
    "font-size:.92rem}.meta dt{font-weight:600}.meta dd{margin:0;overflow-wrap:anywhere}"
    "pre,.text{background:#f5f5f7;border:1px solid #e2e2e6;border-radius:6px;padding:.75rem;overflow:auto}"
    ".text{white-space:pre-wrap;overflow-wrap:anywhere}"
    "form{border:1px solid #d8d8de;border-radius:8px;padding:.25rem 1rem 1rem;margin:1rem 0}"
    ".field{margin:.75rem 0;border:0;padding:0}.field>label,.label{display:block}"
    "legend,.label{font-weight:600;padding:0}.hint{color:#666;font-size:.9rem;font-weight:normal}"
    ".check{display:block;margin:.2rem 0}.check.inline{display:inline;margin-left:.75rem}"
    "input[type=number]{max-width:14rem}textarea,input[type=text],input[type=number],input[type=email],"
    "input[type=url],input[type=date],input[type=time],input[type=datetime-local],select{width:100%;"
    "box-sizing:border-box;font:inherit;"
    "padding:.35rem;margin-top:.25rem}textarea.code,pre{font-family:ui-monospace,monospace;font-size:.9rem}"
    "button{margin-top:.5rem;padding:.45rem 1.1rem;font:inherit;cursor:pointer}"
    "button.danger{color:#a40000}.explain{margin:.75rem 0 .25rem}"
    ".error{color:#a40000;font-weight:600;margin:.25rem 0}[aria-invalid=true]{border:2px solid #a40000}"
    ".answers dt{font-weight:600;margin-top:.5rem}.answers dd{margin:0 0 0 1rem;white-space:pre-wrap}"
    ".outcome{font-size:1.15rem}.note{background:#fff8e1;border:1px solid #f0d98c;border-radius:6px;"
    "padding:.5rem .75rem}details.more{margin-top:.25rem;font-size:.92rem;color:#444}"
    ".members,.facts{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:.5rem 0}"
    ".members dt,.facts dt{font-weight:600}.members dd,.facts dd{margin:0;overflow-wrap:anywhere}"
    ".members pre,.facts pre{margin:0}.text-inline{white-space:pre-wrap}"
    "fieldset.item{border:1px solid #d8d8de;border-radius:8px;margin:1rem 0;padding:.25rem 1rem .75rem}"
    "fieldset.item>legend{font-weight:600;padding:0 .3rem}fieldset.args{border:1px dashed #ccc;"
    "border-radius:6px;padding:.25rem .75rem}fieldset.args>legend{font-size:.92rem;color:#444}"
    "h3{font-size:1rem;margin:.75rem 0 .25rem}a.connect{font-weight:600}"
    "ol.inbox{list-style:none;padding:0}li.item{border:1px solid #d8d8de;border-radius:8px;"
    "padding:.25rem 1rem .5rem;margin:1rem 0}li.item h2{margin:.75rem 0 .5rem}a.open{font-weight:600}"
)
_FAILURES: Final[Mapping[str, tuple[str, str]]] = {
    "interrupt_token_invalid": (
        "This link is not valid",
        "The link may be incomplete or changed, for example cut off when it was copied. "
        "Ask the person who sent it for a new one.",
    ),
    "interrupt_expired": (
        "This link has expired",
        "Review links work for a limited time. Ask the person who sent it for a new one.",
    ),
    "not_found": (
        "This request is not known here",
        "The link may belong to another server, or the request was removed. "
        "Ask the person who sent it for a new one.",
    ),
    "forbidden": (
        "You cannot answer this request",
        "Only the reviewers named on this request may answer it. Ask the person who sent you this link.",
    ),
}
_UNKNOWN_FAILURE: Final = (
    "Something went wrong",
    "Your answer was not recorded. Please try again in a minute; if it keeps failing, "
    "tell the person who sent you this link.",
)


def wants_html(request: Request) -> bool:
    """Whether the client prefers HTML to JSON (a browser's ``Accept``)."""
    accept = request.headers.get("accept", "").lower()
    return "text/html" in accept and "application/json" not in accept.split(",")[0]


def review_page(state: ServerState, token: str) -> HTMLResponse:
    """The page for ``token``: the interrupt and its forms, or why it cannot be answered."""
    try:
        review = review_token(state, token)
    except WopError as exc:
        return _failure(exc)
    if not review.is_open:
        return _closed(review)
    return _review(state, token, review)


@router.post("/interrupts/{token}/form")
async def submit_form(
    token: str, request: Request, state: Annotated[ServerState, Depends(server_state)]
) -> HTMLResponse:
    """Resolve from a reviewer form: the decision recorded, or the form again with the reason."""
    raw = await request.body()
    if len(raw) > _MAX_FORM_BYTES:
        return html_page(
            "Your answer is too long", "<p>Please shorten it, go back and send it again.</p>", status=413
        )
    form = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
    return await run_in_threadpool(_submit, state, token, form)


def _submit(state: ServerState, token: str, form: Form) -> HTMLResponse:
    try:
        review = review_token(state, token)
    except WopError as exc:
        return _failure(exc)
    if not review.is_open:
        return _closed(review)
    if not review.answerable:  # a view-only link, or a gate only a signed-in reviewer may answer
        return _review(state, token, review, status=403)
    payload = review.record.payload
    page = page_for(payload)
    if page.why_no_form(payload, _options(state)):
        return _review(state, token, review, status=403)
    try:
        value = page.value(payload, form)
    except FormRefused as refused:
        return _review(state, token, review, form=form, errors=refused.errors, status=400)
    try:
        resolve_with_token(state, token, value)
    except ValidationError as exc:
        path = str((exc.details or {}).get("path", ""))
        errors = {page.field_for_path(payload, path): reviewer_message(exc)}
        return _review(state, token, review, form=form, errors=errors, status=400)
    except WopError as exc:
        if exc.code != "interrupt_already_resolved":
            return _failure(exc)
        try:  # answered meanwhile (another reviewer, a timeout, a cancel): say what happened
            return _closed(review_token(state, token))
        except WopError as again:
            return _failure(again)
    return _outcome(state, token, payload, value)


def _review(
    state: ServerState,
    token: str,
    review: TokenReview,
    *,
    form: Form | None = None,
    errors: Mapping[str, str] | None = None,
    status: int = 200,
) -> HTMLResponse:
    payload = review.record.payload
    page = page_for(payload)
    parts = [_who_asked(state, review), page.describe(payload)]
    if errors:
        parts.append(
            '<p class="note" role="alert">Your answer was not sent: please check the message '
            "beside the field and send it again.</p>"
        )
    no_form = page.why_no_form(payload, _options(state))
    if review.answerable and no_form:
        parts.append(f'<p class="note">{escape(no_form)}</p>')
    elif review.answerable:
        post_to = f"/interrupts/{token}/form"
        parts.append(page.forms(post_to, payload, form, errors or {}))
    elif review.claims.intent == "resolve":  # openwop-interrupt-auth-required
        parts.append(
            '<p class="note">This request must be answered by a signed-in reviewer, not through a '
            "link: please answer it in the application where you sign in. This link lets you view it.</p>"
        )
    else:
        parts.append(
            '<p class="note">This link lets you view the request, not answer it. To answer, ask the '
            "person who sent it for a link that allows answering.</p>"
        )
    return html_page(page.title(payload), "".join(parts), status=status)


def _options(state: ServerState) -> Options:
    return Options(event_form=state.settings.review_event_form)


def _who_asked(state: ServerState, review: TokenReview) -> str:
    now = state.host.clock()
    expires = review.claims.expires_at
    rows = [
        ("Workflow", review.workflow_id),
        ("Step", review.record.node_id),
        ("Run", review.record.run_id),
        ("Asked", readable_time(review.record.created_at)),
        ("This link expires", f"{readable_time(expires)} ({_until(expires, now)})"),
    ]
    rows.extend(page_for(review.record.payload).progress(review.record))
    if state.host.proofs.keys is not None:
        # The subject of the signed receipt of this decision: what the reviewer saw, to check later.
        rows.append(("Your decision is bound to", f"sha256:{json_digest(review.record.payload)}"))
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    return f'<dl class="meta">{items}</dl>'


def _outcome(state: ServerState, token: str, payload: Mapping[str, Any], value: Any) -> HTMLResponse:
    """The decision recorded (known at commit, whatever the run does next)."""
    try:
        record = review_token(state, token).record
    except WopError:
        record = None
    back = f'<p><a href="/interrupts/{escape(token, quote=True)}">Back to the request</a></p>'
    answered = page_for(payload).answered(payload, value, record, back)
    return html_page(answered.title, answered.body)


def _closed(review: TokenReview) -> HTMLResponse:
    """Why a link can no longer be answered, and what was decided if anything was."""
    record = review.record
    nothing = "<p>There is nothing left to do with this link.</p>"
    if record.status == "resolved":
        when = f" on {readable_time(record.resolved_at)}" if record.resolved_at is not None else ""
        decided = page_for(record.payload).decided(record.payload, record)
        if decided:
            said = f"Decision recorded{when}: <strong>{escape(decided)}</strong>."
        else:
            said = f"An answer was recorded{when}."
        return html_page(
            "This request was already answered", f'<p class="outcome">{said}</p>{nothing}', status=409
        )
    if record.status == "expired":
        # An approval's timeout is recorded as a rejection; its page says what that means here
        # (an Agent Inbox gate: ignored, and the run goes on).
        decided = page_for(record.payload).decided(record.payload, record)
        said = f"Recorded: <strong>{escape(decided)}</strong>." if decided else "It was closed."
        return html_page(
            "This request timed out",
            f"<p>Nobody answered before its deadline. {said}</p>{nothing}",
            status=409,
        )
    if review.run_status == "cancelled" or record.status == "cancelled":
        return html_page(
            "This request was withdrawn",
            f"<p>The run it belongs to was cancelled, so it needs no answer.</p>{nothing}",
            status=409,
        )
    return html_page(
        "This request is closed",
        f"<p>The run it belongs to has finished ({escape(review.run_status)}), so it needs no answer.</p>"
        + nothing,
        status=409,
    )


def _failure(exc: WopError) -> HTMLResponse:
    title, advice = _FAILURES.get(exc.code, _UNKNOWN_FAILURE)
    status = exc.status if exc.status < 500 else 500
    return html_page(title, f"<p>{escape(advice)}</p>", status=status)


def readable_time(moment: datetime) -> str:
    """A readable UTC time, e.g. ``Wed 2 Dec 2026, 17:50 UTC``."""
    m = as_utc(moment)
    return f"{m:%a} {m.day} {m:%b %Y}, {m:%H:%M} UTC"


def _until(moment: datetime, now: datetime) -> str:
    seconds = int((as_utc(moment) - as_utc(now)).total_seconds())
    if seconds < 60:
        return "in less than a minute"
    if seconds < 2 * 3600:
        minutes = seconds // 60
        return f"in {minutes} minute{'s' if minutes != 1 else ''}"
    return f"in {seconds // 3600} hours"


def html_page(title: str, content: str, *, status: int = 200) -> HTMLResponse:
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
