"""The page of a ``low-confidence`` escalation: keep the agent's decision, or replace it.

It shows which agent asks, its decision, how confident it was and the threshold below which it
asks a person. Two forms: "Keep the agent's decision" (``{"ratify": true}``) and "Replace it
with ..." (``{"decision": ...}``), whose editor is made from the ``resumeSchema``'s
``decision`` member when it says more than "anything", else from the agent's decision itself
(text stays text, a number a number, an object member by member), prefilled with it. Both take
an optional note for the record (``feedback``).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from wop_langgraph.kinds.review.base import (
    Answered,
    GatePage,
    data_of,
    form_error,
    form_html,
    pointer_parts,
    render_fields,
    show_members,
)
from wop_langgraph.kinds.review.fields import Field, Form, FormRefused, read_fields, submitted
from wop_langgraph.kinds.review.values import editor_fields
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = ["LowConfidencePage"]

_NOTE = Field("feedback", "A note for the record", required=False, text_only=True)


class LowConfidencePage(GatePage):
    """``kind: low-confidence``."""

    def title(self, payload: Mapping[str, Any]) -> str:
        return "An agent is unsure: please decide"

    def describe(self, payload: Mapping[str, Any]) -> str:
        data = data_of(payload)
        rows = [
            ("Agent", escape(str(data.get("agentId", "")))),
            ("Its decision", show_members(data.get("decision"))),
            ("Its confidence", _percent(data.get("observed"))),
            ("It asks a person below", _percent(data.get("threshold"))),
        ]
        facts = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
        return (
            '<p class="lead">The agent made a decision but was not confident enough to act on it '
            "alone. Keep its decision, or replace it with yours.</p>"
            f'<dl class="facts">{facts}</dl>'
        )

    def forms(
        self, post_to: str, payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]
    ) -> str:
        chosen = submitted(form, "choice")
        parts = [] if chosen in ("keep", "replace") else [form_error(errors)]
        for choice, button, explain, fields in (
            (
                "keep",
                "Keep the agent's decision",
                "The run continues with the agent's decision, as shown above.",
                [_NOTE],
            ),
            (
                "replace",
                "Replace it with mine",
                "The run continues with your decision instead of the agent's.",
                [*_decision_fields(payload), _NOTE],
            ),
        ):
            mine = chosen == choice
            shown, errs = (form, errors) if mine else (None, {})
            parts.append(
                form_html(
                    post_to,
                    f"answer-{choice}",
                    form_error(errs) + render_fields(fields, shown, errs),
                    button=button,
                    explain=f"<strong>{escape(button)}</strong>: {escape(explain)}",
                    hidden={"choice": choice},
                    css="action",
                )
            )
        return "".join(parts)

    def value(self, payload: Mapping[str, Any], form: Form) -> Any:
        choice = submitted(form, "choice")
        if choice not in ("keep", "replace"):
            raise FormRefused({"": "Keep the agent's decision or replace it: use one of the buttons below."})
        value: dict[str, Any] = {"ratify": True}
        if choice == "replace":
            value = {"decision": read_fields(_decision_fields(payload), form, prefix="decision")}
        note = read_fields([_NOTE], form, prefix="feedback")
        if isinstance(note, str) and note.strip():
            value["feedback"] = note
        return value

    def field_for_path(self, payload: Mapping[str, Any], path: str) -> str:
        parts = pointer_parts(path)
        names = {f.name for f in _decision_fields(payload)}
        if len(parts) >= 2 and f"decision.{parts[1]}" in names:
            return f"decision.{parts[1]}"
        if parts[:1] == ["decision"] and "decision" in names:
            return "decision"
        return "feedback" if parts[:1] == ["feedback"] else ""

    def answered(
        self, payload: Mapping[str, Any], value: Any, record: InterruptRecord | None, back: str
    ) -> Answered:
        if isinstance(value, Mapping) and "decision" in value:
            mine = show_members(value["decision"])
            said = f'<p class="outcome">You replaced the agent\'s decision with:</p>{mine}'
        else:
            said = '<p class="outcome">You kept the agent\'s decision.</p>'
        return Answered("Thank you: your decision was recorded", f"{said}<p>The run continues with it.</p>")


def _decision_fields(payload: Mapping[str, Any]) -> list[Field]:
    schema = ((payload.get("resumeSchema") or {}).get("properties") or {}).get("decision")
    useful = schema if isinstance(schema, Mapping) and schema else None
    decision = data_of(payload).get("decision")
    return editor_fields(decision, useful, name="decision", label="Your decision")


def _percent(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g} ({value * 100:.0f}%)"
    return escape(str(value))
