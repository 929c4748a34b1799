"""What every gate's page provides (:class:`GatePage`), and the HTML pieces the pages share.

A page turns one interrupt payload into what a reviewer reads (title, description), the forms
that answer it, and back: the resume value a submitted form makes, the field a host refusal
points at, and what to say once the answer is recorded. Pages are plain HTML forms that POST
``application/x-www-form-urlencoded`` (no JavaScript); everything a payload carries is escaped.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

from wop_langgraph.kinds.review.fields import Field, Form, render_field
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = [
    "Answered",
    "GatePage",
    "Options",
    "data_of",
    "form_error",
    "form_html",
    "pointer_parts",
    "render_fields",
    "show",
    "show_members",
]


@dataclass(frozen=True)
class Options:
    """What the server lets a reviewer page do beyond answering questions.

    ``event_form``: a reviewer may deliver an ``external-event`` interrupt's event from its page
    (``WOP_REVIEW_EVENT_FORM``); off by default, because the event normally comes from a system.
    """

    event_form: bool = False


@dataclass(frozen=True)
class Answered:
    """The page shown once an answer is recorded: its heading and body (HTML)."""

    title: str
    body: str


class GatePage(ABC):
    """One kind (or shape) of gate on the reviewer page; the defaults suit a gate with no form."""

    def title(self, payload: Mapping[str, Any]) -> str:
        """The page heading (plain text; escaped when rendered)."""
        return "The run is waiting for your answer"

    def describe(self, payload: Mapping[str, Any]) -> str:
        """What is asked, as escaped HTML."""
        return ""

    def why_no_form(self, payload: Mapping[str, Any], options: Options) -> str:
        """'' when the page may answer this gate; else a note saying why not and what happens."""
        return ""

    def forms(
        self, post_to: str, payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]
    ) -> str:
        """The forms answering ``payload``; ``form`` and ``errors`` re-show a refused submission."""
        return ""

    @abstractmethod
    def value(self, payload: Mapping[str, Any], form: Form) -> Any:
        """The resume value ``form`` makes (the host validates it like any other); every kind says.

        Raises:
            FormRefused: a field is missing or unreadable; the messages are for the reviewer.
        """

    def field_for_path(self, payload: Mapping[str, Any], path: str) -> str:
        """The form field a host error's JSON pointer (``details.path``) points at, or '' for the form."""
        return ""

    def answered(
        self, payload: Mapping[str, Any], value: Any, record: InterruptRecord | None, back: str
    ) -> Answered:
        """The page after ``value`` was recorded (``record``: the interrupt as it is now)."""
        return Answered(
            "Thank you: your answer was recorded",
            f"<h2>Your answer</h2>{show(value)}<p>The run continues with it.</p>",
        )

    def progress(self, record: InterruptRecord) -> list[tuple[str, str]]:
        """Rows the page's header adds about the gate's progress (e.g. votes so far)."""
        return []

    def decided(self, payload: Mapping[str, Any], record: InterruptRecord) -> str:
        """What a used link says was recorded (plain text), e.g. ``Accepted``; '' for "an answer"."""
        return ""


def data_of(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The payload's ``data`` (an empty mapping when absent)."""
    data = payload.get("data")
    return data if isinstance(data, Mapping) else {}


def show(value: Any) -> str:
    """A value as a reviewer reads it: text as text, anything else as indented JSON."""
    if isinstance(value, str):
        return f'<div class="text">{escape(value)}</div>'
    return f'<pre class="code">{escape(json.dumps(value, indent=2, ensure_ascii=False))}</pre>'


def show_members(value: Any) -> str:
    """An object as a list of its members (text with its own line breaks); anything else as :func:`show`."""
    if not isinstance(value, Mapping) or not value:
        return show(value)
    rows = "".join(f"<dt>{escape(str(key))}</dt><dd>{_inline(member)}</dd>" for key, member in value.items())
    return f'<dl class="members">{rows}</dl>'


def _inline(value: Any) -> str:
    if isinstance(value, str):
        return f'<span class="text-inline">{escape(value)}</span>'
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) or value is None:
        return escape(json.dumps(value))
    return show(value)


def form_error(errors: Mapping[str, str]) -> str:
    """The form-wide message ('' key), if any."""
    return f'<p class="error" role="alert">{escape(errors[""])}</p>' if errors.get("") else ""


def form_html(
    post_to: str,
    anchor: str,
    body: str,
    *,
    button: str,
    explain: str = "",
    hidden: Mapping[str, str] | None = None,
    danger: bool = False,
    css: str = "",
) -> str:
    """One form: hidden members, a one-line explanation, the fields and one submit button.

    The fragment brings a refused form back into view; ``novalidate`` leaves every judgement to
    the server, whose reasons appear beside the field.
    """
    target = escape(f"{post_to}#{anchor}", quote=True)
    inputs = "".join(
        f'<input type="hidden" name="{escape(k, quote=True)}" value="{escape(v, quote=True)}">'
        for k, v in (hidden or {}).items()
    )
    said = f'<p class="explain">{explain}</p>' if explain else ""
    klass = f' class="{escape(css, quote=True)}"' if css else ""
    red = ' class="danger"' if danger else ""
    return (
        f'<form{klass} id="{escape(anchor, quote=True)}" method="post" action="{target}" novalidate>'
        f'{inputs}{said}{body}<button type="submit"{red}>{escape(button)}</button></form>'
    )


def render_fields(fields: list[Field], form: Form | None, errors: Mapping[str, str]) -> str:
    """The fields' HTML, each with its error."""
    return "".join(render_field(f, form, errors.get(f.name)) for f in fields)


def pointer_parts(path: str) -> list[str]:
    """The members of a host error's pointer below ``/resumeValue``, unescaped."""
    parts = path.removeprefix("/resumeValue").strip("/").split("/") if path else []
    return [p.replace("~1", "/").replace("~0", "~") for p in parts if p]
