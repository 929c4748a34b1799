"""Build the message about one interrupt for one recipient: what is asked, by when, and the link."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wop_langgraph._clock import iso_z
from wop_langgraph.notify.templates import Templates
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = ["HEADINGS", "Message", "build_message", "shorten"]

#: The first line of each purpose (``reminder-*`` share one).
HEADINGS = {
    "request": "Your input is requested",
    "reminder": "Reminder: still waiting for your input",
    "escalation": "Escalation: a gate reached its deadline without a decision",
}
_MAX_FIELD = 600
_MAX_QUESTIONS = 10


@dataclass(frozen=True)
class Message:
    """A rendered notification."""

    subject: str
    text: str
    html: str
    link: str | None


def shorten(text: str, limit: int = _MAX_FIELD) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, with an ellipsis when cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def _asked(payload: dict[str, Any]) -> tuple[str, str]:
    """(title, what is asked) of an interrupt payload, shortened."""
    kind = str(payload.get("kind"))
    data = payload.get("data") or {}
    if kind == "approval":
        lines = [f"{data.get('artifactType')} {data.get('artifactId')}"]
        if data.get("artifactData") is not None:
            value = data["artifactData"]
            lines.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1))
        lines.append("Choices: " + ", ".join(str(a) for a in data.get("actions") or []))
        return str(data.get("title") or "Approval"), shorten("\n".join(lines))
    if kind == "clarification":
        questions = [str(q.get("question")) for q in data.get("questions") or [] if isinstance(q, dict)]
        more = len(questions) - _MAX_QUESTIONS
        listed = [f"- {shorten(q, 200)}" for q in questions[:_MAX_QUESTIONS]]
        if more > 0:
            listed.append(f"(and {more} more)")
        return "Questions", "\n".join(listed)
    title = str(data.get("title") or kind)
    return title, shorten(json.dumps(data, ensure_ascii=False, indent=1))


def build_message(
    templates: Templates,
    *,
    record: InterruptRecord,
    workflow_id: str,
    purpose: str,
    recipient: str,
    link: str | None,
    deadline: datetime | None,
    inbox: str | None = None,
) -> Message:
    """The message for ``recipient`` about ``record``; ``inbox`` is their inbox link, if any."""
    title, asked = _asked(record.payload)
    description = shorten(str((record.payload.get("data") or {}).get("description") or ""))
    heading = HEADINGS.get(purpose.split("-")[0], HEADINGS["request"])
    if link:
        link_line = (
            f"Open your personal link to answer (it counts as your own answer; do not forward it):\n{link}"
        )
    elif purpose == "escalation":
        link_line = "The gate was rejected by its timeout; nothing was granted."
    else:
        link_line = "Answer it in the application that runs this workflow."
    values = {
        "heading": heading,
        "workflow": workflow_id,
        "run_id": record.run_id,
        "node_id": record.node_id,
        "kind": record.kind,
        "title": shorten(title, 200),
        "description": description,
        "asked": asked,
        "deadline": iso_z(deadline) if deadline is not None else "none",
        "link": link or "",
        "link_line": link_line,
        "recipient": recipient,
        "inbox": inbox or "",
        "inbox_line": f"Everything waiting for you: {inbox}" if inbox else "",
    }
    escaped = {name: html.escape(value) for name, value in values.items()}
    if link:
        href = html.escape(link, quote=True)
        escaped["link_html"] = f'<a href="{href}">Open your personal link to answer</a> (do not forward it)'
    else:
        escaped["link_html"] = html.escape(link_line)
    escaped["inbox_html"] = (
        f'<a href="{html.escape(inbox, quote=True)}">See everything waiting for you</a>' if inbox else ""
    )
    subject, text, body = templates.render({**values, "link_html": "", "inbox_html": ""}, escaped)
    return Message(subject=subject, text=text, html=body, link=link)
