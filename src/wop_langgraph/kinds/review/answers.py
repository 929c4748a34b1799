"""Pages answered with a value: ``custom`` (and any kind without a page of its own) and conversations.

The page shows what the run says (text as text, an object member by member) and asks for the
answer through inputs made from the ``resumeSchema`` (a conversation turn: its
``outcomeSchema``), or a free text answer when there is no schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wop_langgraph.kinds.review.base import (
    GatePage,
    data_of,
    form_error,
    form_html,
    pointer_parts,
    render_fields,
    show,
    show_members,
)
from wop_langgraph.kinds.review.fields import Field, Form, fields_for, read_fields

__all__ = ["AnswerPage", "ConversationPage"]


class AnswerPage(GatePage):
    """``kind: custom``, and the page of any kind no other page claims."""

    LABEL = "Your answer"
    BUTTON = "Send answer"
    SENDS = "Sends your answer; the run continues with it."

    def title(self, payload: Mapping[str, Any]) -> str:
        said = data_of(payload).get("payload")
        if payload.get("kind") == "custom" and isinstance(said, str) and said.strip():
            return "The run asks a question"
        return "The run is waiting for your answer"

    def describe(self, payload: Mapping[str, Any]) -> str:
        data = data_of(payload)
        if payload.get("kind") == "custom":
            return f"<h2>What the run says</h2>{show_members(data['payload'])}" if "payload" in data else ""
        return show_members(dict(data))

    def schema(self, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The schema the answer must fit."""
        schema = payload.get("resumeSchema")
        return schema if isinstance(schema, Mapping) else None

    def fields(self, payload: Mapping[str, Any]) -> list[Field]:
        """The answer's inputs."""
        return fields_for(self.schema(payload), name="value", label=self.LABEL)

    def forms(
        self, post_to: str, payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]
    ) -> str:
        return form_html(
            post_to,
            "answer",
            form_error(errors) + render_fields(self.fields(payload), form, errors),
            button=self.BUTTON,
            explain=self.SENDS,
        )

    def value(self, payload: Mapping[str, Any], form: Form) -> Any:
        return read_fields(self.fields(payload), form, prefix="value")

    def field_for_path(self, payload: Mapping[str, Any], path: str) -> str:
        parts = pointer_parts(path)
        names = {f.name for f in self.fields(payload)}
        if parts and f"value.{parts[0]}" in names:
            return f"value.{parts[0]}"
        return "value" if "value" in names else ""


class ConversationPage(AnswerPage):
    """``conversation.start``, ``conversation.exchange`` and ``conversation.close``: one turn each."""

    LABEL = "Your reply"
    BUTTON = "Send reply"
    SENDS = "Sends your reply; the conversation goes on with it."

    def title(self, payload: Mapping[str, Any]) -> str:
        data = data_of(payload)
        if payload.get("kind") == "conversation.start":
            return str(data.get("title") or "A conversation starts")
        if payload.get("kind") == "conversation.close":
            return "The conversation is closing"
        return "Your turn in the conversation"

    def describe(self, payload: Mapping[str, Any]) -> str:
        data = data_of(payload)
        said = data.get("prompt") or data.get("initialPrompt") or data.get("reason")
        turn = data.get("turnIndex")
        heading = f"<h2>Turn {int(turn) + 1}</h2>" if isinstance(turn, int) else ""
        return heading + (show(str(said)) if said else "")

    def schema(self, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        outcome = data_of(payload).get("outcomeSchema")
        return outcome if isinstance(outcome, Mapping) else super().schema(payload)
