"""A reviewer's inbox: ``GET /inbox/{inboxToken}`` lists what waits for one approver, as plain HTML.

The token is a signed inbox link (:mod:`wop_langgraph.inbox_tokens`): it names an approver and
their tenant, and only lists. The page shows that approver's pending interrupts exactly as
``GET /interrupts`` would for them (their tenant only, approver lists applied, no second vote,
no passed deadline), oldest first, each with a fresh review link minted for them (view-only for
a gate only a signed-in reviewer may answer); a "more" link pages on. ``POST /inbox-links`` mints
the caller's own inbox link (how a notification or an application hands it out). An expired or
forged link gets a page saying so in a reviewer's words. Works without JavaScript.
"""

from __future__ import annotations

from html import escape
from typing import Annotated, Any, Final
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query
from fastapi.responses import HTMLResponse

from wop_langgraph._clock import iso_z
from wop_langgraph.host import Principal
from wop_langgraph.host.eligibility import bearer_only
from wop_langgraph.host.listing import PendingItem
from wop_langgraph.inbox_tokens import mint_inbox, verify_inbox
from wop_langgraph.kinds import page_for
from wop_langgraph.protocol.errors import WopError
from wop_langgraph.server.auth import require_scopes
from wop_langgraph.server.html import html_page, readable_time
from wop_langgraph.server.interrupt_lookup import mint_for
from wop_langgraph.server.state import ServerState, server_state

__all__ = ["router"]

router = APIRouter()
State = Annotated[ServerState, Depends(server_state)]
_PAGE_SIZE: Final = 25
_FAILURES: Final = {
    "interrupt_expired": (
        "This inbox link has expired",
        "Inbox links work for a limited time. Open the link in your latest notification, "
        "or ask for a new one.",
    ),
    "interrupt_token_invalid": (
        "This inbox link is not valid",
        "The link may be incomplete or changed, for example cut off when it was copied. "
        "Open the link in your latest notification, or ask for a new one.",
    ),
}


@router.get("/inbox/{inboxToken}", response_class=HTMLResponse)
def inbox(
    inboxToken: str,
    state: State,
    cursor: Annotated[str | None, Query(description="The 'More requests' link's cursor.")] = None,
) -> HTMLResponse:
    """The approver's pending interrupts, each with its own review link; or why the link is refused."""
    token = inboxToken
    now = state.host.clock()
    try:
        claims = verify_inbox(state.signing_keys, token, now=now)
    except WopError as exc:
        title, advice = _FAILURES.get(exc.code, _FAILURES["interrupt_token_invalid"])
        return html_page(title, f"<p>{escape(advice)}</p>", status=exc.status)
    reviewer = Principal(tenant=claims.tenant, subject_id=claims.subject)
    try:  # the cursor is checked here, so that a bad one gets a page rather than JSON
        found = state.host.answerable_interrupts(reviewer, cursor=cursor, limit=_PAGE_SIZE)
    except WopError:  # a "more" link edited by hand, or of another inbox
        more = f'<a href="/inbox/{quote(token, safe="")}">Go back to the start of your list</a>'
        return html_page("This page of your list is not valid", f"<p>{more}.</p>", status=400)
    rows = [row for row in (_row(state, item, claims.subject) for item in found.items) if row]
    intro = (
        f"<p>Requests waiting for <strong>{escape(claims.subject)}</strong>, oldest first. "
        f"This list link works until {escape(readable_time(claims.expires_at))}; each request "
        "opens its own page, where you answer it.</p>"
    )
    if rows:
        listed = f'<ol class="inbox">{"".join(rows)}</ol>'
    elif cursor:
        listed = "<p>No more requests.</p>"
    else:
        listed = '<p class="note">Nothing is waiting for you. New requests will appear here.</p>'
    more = ""
    if found.next_cursor is not None:
        href = f"/inbox/{quote(token, safe='')}?cursor={quote(found.next_cursor, safe='')}"
        more = f'<p><a href="{escape(href, quote=True)}">More requests</a></p>'
    return html_page("Your requests", intro + listed + more)


def _row(state: ServerState, item: PendingItem, subject: str) -> str | None:
    """One request: its title, workflow, step, when it was asked and its deadline, and its page."""
    record = item.record
    intent = "inspect" if bearer_only(record.profiles) else "resolve"
    try:
        minted = mint_for(
            state.signing_keys,
            record,
            intent=intent,
            now=state.host.clock(),
            ttl=state.token_ttl,
            approver=subject,
        )
    except WopError:  # its deadline passed between the list and the link
        return None
    title = page_for(record.payload).title(record.payload)
    facts = [
        ("Workflow", item.workflow_id),
        ("Step", record.node_id),
        ("Asked", readable_time(record.created_at)),
    ]
    if record.deadline is not None:
        facts.append(("Answer by", readable_time(record.deadline)))
    described = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    action = "View" if intent == "inspect" else "Open and answer"
    href = escape(f"/interrupts/{minted.token}", quote=True)
    return (
        f'<li class="item"><h2>{escape(title)}</h2><dl class="meta">{described}</dl>'
        f'<p><a class="open" href="{href}">{action}</a></p></li>'
    )


@router.post("/inbox-links", status_code=201)
def mint_inbox_link(
    state: State, principal: Annotated[Principal, Depends(require_scopes("approvals:respond"))]
) -> dict[str, Any]:
    """``201 {token, url, expiresAt}``: the caller's own inbox link, on ``WOP_PUBLIC_URL``."""
    base = state.link_base()
    minted = mint_inbox(
        state.signing_keys, tenant=principal.tenant, subject=principal.subject_id, now=state.host.clock()
    )
    return {
        "token": minted.token,
        "url": f"{base}/inbox/{minted.token}",
        "expiresAt": iso_z(minted.claims.expires_at),
    }
