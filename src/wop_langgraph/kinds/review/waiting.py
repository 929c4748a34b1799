"""Pages of gates a person does not answer in words: ``external-event`` and ``credential``.

An external event normally comes from another system: the page says what is awaited and for
whom (the correlation members), and offers no form unless the server lets reviewers deliver
the event by hand (``WOP_REVIEW_EVENT_FORM``); then the form asks only for the event's own
members (from the ``resumeSchema``, else a JSON object) and adds the correlation itself.

A credential gate shows which account, which permissions and why, a link to connect it, and
two buttons: "I connected it" and "I will not connect it". Nothing secret is on the page (the
gate never carries credential material; its ``credentialRef`` is not shown either).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any, Final

from wop_langgraph.kinds.review.base import (
    Answered,
    GatePage,
    Options,
    data_of,
    form_error,
    form_html,
    render_fields,
    show_members,
)
from wop_langgraph.kinds.review.fields import Field, Form, FormRefused, fields_for, read_fields, submitted
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = ["CredentialPage", "ExternalEventPage"]

_REASONS: Final[Mapping[str, str]] = {
    "missing": "it is not connected yet",
    "expired": "the connection has expired",
    "insufficient_scope": "the connection lacks a permission it needs",
}
_OUTCOMES: Final[Mapping[str, tuple[str, str]]] = {
    "authorized": ("I connected it", "Say so once you have connected the account; the run continues."),
    "declined": ("I will not connect it", "The run continues without access to the account."),
}


class ExternalEventPage(GatePage):
    """``kind: external-event``."""

    def title(self, payload: Mapping[str, Any]) -> str:
        return "The run is waiting for an event"

    def describe(self, payload: Mapping[str, Any]) -> str:
        data = data_of(payload)
        correlation = data.get("correlation")
        whom = ""
        if isinstance(correlation, Mapping) and correlation:
            whom = f"<h2>For</h2>{show_members(correlation)}"
        return (
            f'<p class="lead">It waits for the event <code>{escape(str(data.get("eventType", "")))}</code> '
            f"from another system, and continues when that event arrives.</p>{whom}"
        )

    def why_no_form(self, payload: Mapping[str, Any], options: Options) -> str:
        if options.event_form:
            return ""
        return "Nothing to do here: the event arrives on its own, and the run continues then."

    def forms(
        self, post_to: str, payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]
    ) -> str:
        return form_html(
            post_to,
            "answer",
            form_error(errors) + render_fields(_event_fields(payload), form, errors),
            button="Deliver the event",
            explain=(
                "Delivers the event by hand, as if the other system had sent it; the run continues with it."
            ),
        )

    def value(self, payload: Mapping[str, Any], form: Form) -> Any:
        event = read_fields(_event_fields(payload), form, prefix="value")
        if not isinstance(event, dict):
            raise FormRefused({"value": 'The event must be a JSON object, like {"status": "paid"}.'})
        correlation = data_of(payload).get("correlation")
        return {**event, **(correlation if isinstance(correlation, Mapping) else {})}


def _event_fields(payload: Mapping[str, Any]) -> list[Field]:
    schema = payload.get("resumeSchema")
    correlation = data_of(payload).get("correlation") or {}
    if isinstance(schema, Mapping) and isinstance(schema.get("properties"), Mapping):
        # The correlation members are the page's to add, not the reviewer's to type.
        properties = {k: v for k, v in schema["properties"].items() if k not in correlation}
        schema = {**schema, "properties": properties}
        schema["required"] = [r for r in schema.get("required") or [] if r in properties]
        if properties:
            return fields_for(schema, name="value", label="The event (JSON object)")
    return [
        Field(
            "value", "The event's other members (JSON object)", {"type": "object"}, initial="{}", input="json"
        )
    ]


class CredentialPage(GatePage):
    """``kind: credential``: the answer is ``{"outcome": "authorized" | "declined"}``."""

    def title(self, payload: Mapping[str, Any]) -> str:
        return f"Please connect your {data_of(payload).get('provider', '')} account"

    def describe(self, payload: Mapping[str, Any]) -> str:
        data = data_of(payload)
        url = escape(str(data.get("connectUrl", "")), quote=True)
        provider = escape(str(data.get("provider", "")))
        reason = escape(_REASONS.get(str(data.get("reason")), str(data.get("reason", ""))))
        scopes = "".join(f"<li><code>{escape(str(s))}</code></li>" for s in data.get("scopes") or [])
        asked = f"<p>It asks for these permissions:</p><ul>{scopes}</ul>" if scopes else ""
        return (
            f'<p class="lead">The run needs access to your {provider} account: {reason}.</p>{asked}'
            f'<p><a class="connect" href="{url}" target="_blank" rel="noopener noreferrer">'
            f"Connect your {provider} account</a> (opens {provider}'s page), then come back and say "
            "below whether you connected it.</p>"
        )

    def forms(
        self, post_to: str, payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]
    ) -> str:
        return form_error(errors) + "".join(
            form_html(
                post_to,
                f"answer-{outcome}",
                "",
                button=button,
                explain=escape(explain),
                hidden={"outcome": outcome},
                danger=outcome == "declined",
                css="action",
            )
            for outcome, (button, explain) in _OUTCOMES.items()
        )

    def value(self, payload: Mapping[str, Any], form: Form) -> Any:
        outcome = submitted(form, "outcome")
        if outcome not in _OUTCOMES:
            offered = " or ".join(f"“{b}”" for b, _ in _OUTCOMES.values())
            raise FormRefused({"": f"Answer with {offered}: use one of the buttons below."})
        return {"outcome": outcome}

    def answered(
        self, payload: Mapping[str, Any], value: Any, record: InterruptRecord | None, back: str
    ) -> Answered:
        connected = isinstance(value, Mapping) and value.get("outcome") == "authorized"
        said = (
            "You said you connected the account."
            if connected
            else "You said you will not connect the account."
        )
        return Answered(
            "Thank you: your answer was recorded", f'<p class="outcome">{said}</p><p>The run continues.</p>'
        )
