"""The page of a ``clarification``: one input per question, made from the question's schema."""

from __future__ import annotations

import json
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
)
from wop_langgraph.kinds.review.fields import Field, Form, FormRefused, one_field, read_fields
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = ["ClarificationPage"]


class ClarificationPage(GatePage):
    """``kind: clarification``: the answers are ``{answers: {questionId: answer}}``."""

    def title(self, payload: Mapping[str, Any]) -> str:
        return "The run needs some answers" if len(_questions(payload)) > 1 else "The run needs an answer"

    def describe(self, payload: Mapping[str, Any]) -> str:
        about = data_of(payload).get("contextType")
        return f'<p class="lead">About: {escape(str(about))}</p>' if about else ""

    def forms(
        self, post_to: str, payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]
    ) -> str:
        several = len(_questions(payload)) > 1
        said = "answers; the run continues with them" if several else "answer; the run continues with it"
        return form_html(
            post_to,
            "answer",
            form_error(errors) + render_fields(_fields(payload), form, errors),
            button="Send answers" if several else "Send answer",
            explain=f"Sends your {said}.",
        )

    def value(self, payload: Mapping[str, Any], form: Form) -> Any:
        answers: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for field in _fields(payload):
            try:
                answers[field.name.removeprefix("answer.")] = read_fields([field], form, prefix=field.name)
            except FormRefused as exc:
                errors.update(exc.errors)
        if errors:
            raise FormRefused(errors)
        return {"answers": answers}

    def field_for_path(self, payload: Mapping[str, Any], path: str) -> str:
        parts = pointer_parts(path)
        return f"answer.{parts[1]}" if len(parts) >= 2 and parts[0] == "answers" else ""

    def answered(
        self, payload: Mapping[str, Any], value: Any, record: InterruptRecord | None, back: str
    ) -> Answered:
        answers: Mapping[str, Any] = value.get("answers") or {} if isinstance(value, Mapping) else {}
        rows = "".join(
            f"<dt>{escape(str(q.get('question', '')))}</dt>"
            f"<dd>{escape(_plain(answers.get(str(q.get('id')))))}</dd>"
            for q in _questions(payload)
        )
        return Answered(
            "Thank you: your answer was recorded",
            f'<dl class="answers">{rows}</dl><p>The run continues with it.</p>',
        )


def _questions(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [q for q in data_of(payload).get("questions") or [] if isinstance(q, Mapping)]


def _fields(payload: Mapping[str, Any]) -> list[Field]:
    # The question is the label (a schema's title would only repeat it); one value per question.
    return [
        one_field(
            q.get("schema"), name=f"answer.{q.get('id')}", label=str(q.get("question", "")), titled=False
        )
        for q in _questions(payload)
    ]


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    return json.dumps(value, ensure_ascii=False)
