"""What the reviewer page shows of one interrupt, the forms it offers, and the resume value a form makes.

An approval gets one small form per action it allows, each with a one-line explanation of what
the button does: accept and reject (an optional comment), edit-accept (an editor prefilled with
the artifact: a text area for text, a JSON text area for anything else; for the tool calls of
``HumanInTheLoopMiddleware``, one decision per call, see :mod:`.review_items`), refine (scope
and what to change) and ask (a question; the gate stays open). A clarification gets one input per
question, made from the question's schema; every other kind gets inputs made from its
``resumeSchema`` (or ``outcomeSchema``), or a free answer sent as text unless the reviewer picks
JSON. Everything a payload carries is escaped before it reaches the page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any, Final

from wop_langgraph.server import review_items
from wop_langgraph.server.review_fields import (
    Field,
    Form,
    FormRefused,
    fields_for,
    read_fields,
    render_field,
    submitted,
)

__all__ = [
    "ACTION_LABELS",
    "ACTION_ORDER",
    "describe",
    "field_for_path",
    "forms",
    "resume_value",
    "show",
    "show_answer",
    "title_of",
]

ACTION_ORDER: Final = ("accept", "edit-accept", "refine", "ask", "reject")
ACTION_LABELS: Final[Mapping[str, str]] = {
    "accept": "Accept",
    "edit-accept": "Accept with my edits",
    "refine": "Send back for changes",
    "ask": "Ask a question",
    "reject": "Reject",
}
_EXPLAIN: Final[Mapping[str, str]] = {
    "accept": "Approve it as shown; the run continues.",
    "edit-accept": "Approve your edited version; the run continues with your edits instead of the original.",
    "refine": "Do not approve yet: send it back with what to change; the run continues with your feedback.",
    "ask": "Ask a question without deciding; the request stays open and this link keeps working.",
    "reject": "Refuse it; this step fails, and the run stops unless it has a path for rejections.",
}
_SCOPES: Final = (
    ("whole", "The whole artifact"),
    ("section", "One section (give its path below)"),
    ("items", "Some items (give their ids below)"),
)
_ANSWER_LABEL: Final = "Your answer"


def describe(payload: Mapping[str, Any]) -> str:
    """The HTML describing what is asked (title, artifact, questions, payload), escaped."""
    kind = str(payload.get("kind", ""))
    data: Mapping[str, Any] = payload.get("data") or {}
    parts: list[str] = []
    if kind == "approval":
        if data.get("description"):
            parts.append(f'<p class="lead">{escape(str(data["description"]))}</p>')
        if "artifactData" in data:
            parts.append(
                f"<h2>The artifact <small>{escape(str(data.get('artifactId', '')))} · "
                f"{escape(str(data.get('artifactType', '')))}</small></h2>{show(data['artifactData'])}"
            )
        quorum = int(data.get("requiredApprovals") or 1)
        if quorum > 1:
            parts.append(f"<p>This request needs {quorum} reviewers to accept it.</p>")
    elif kind == "clarification":
        if data.get("contextType"):
            parts.append(f'<p class="lead">About: {escape(str(data["contextType"]))}</p>')
    elif kind == "custom":
        if "payload" in data:
            parts.append(f"<h2>What the run says</h2>{show(data['payload'])}")
    elif kind == "external-event":
        parts.append(
            '<p class="lead">The run waits for the event '
            f"<code>{escape(str(data.get('eventType', '')))}</code>; "
            "deliver it below as a JSON object that includes these members:</p>"
            f"{show(data.get('correlation', {}))}"
        )
    elif kind == "conversation.exchange":
        parts.append(show(str(data.get("prompt", ""))))
    elif kind == "credential":
        url = escape(str(data.get("connectUrl", "")), quote=True)
        parts.append(
            f'<p class="lead">Connect your {escape(str(data.get("provider", "")))} account '
            f'(<a href="{url}">connect here</a>), then say below whether you authorized it.</p>'
        )
    else:
        parts.append(show(dict(data)))
    return "".join(parts)


def title_of(payload: Mapping[str, Any]) -> str:
    """The page heading for what is asked (plain text; escaped when rendered)."""
    kind = payload.get("kind")
    data: Mapping[str, Any] = payload.get("data") or {}
    if kind == "approval":
        return str(data.get("title") or "Please review")
    if kind == "clarification":
        return "The run needs some answers"
    if kind == "custom" and isinstance(data.get("payload"), str) and data["payload"].strip():
        return "The run asks a question"
    return "The run is waiting for your answer"


def forms(
    post_to: str,
    payload: Mapping[str, Any],
    form: Form | None = None,
    errors: Mapping[str, str] | None = None,
) -> str:
    """The forms answering ``payload``; ``form`` and ``errors`` re-show a refused submission."""
    errors = errors or {}
    top = f'<p class="error" role="alert">{escape(errors[""])}</p>' if errors.get("") else ""
    if payload.get("kind") == "approval":
        actions = _actions(payload)
        if submitted(form, "action") in actions:
            top = ""  # shown inside the form that was sent
        return top + "".join(_approval_form(post_to, payload, name, form, errors) for name in actions)
    fields = _answer_fields(payload)
    body = "".join(render_field(f, form, errors.get(f.name)) for f in fields)
    several = payload.get("kind") == "clarification" and len(fields) > 1
    return (
        f"{top}<form {_form_attributes(post_to, 'answer')}>{body}"
        f'<p class="explain">Sends your {"answers" if several else "answer"}; the run continues with '
        f"{'them' if several else 'it'}.</p>"
        f'<button type="submit">{"Send answers" if several else "Send answer"}</button></form>'
    )


def _form_attributes(post_to: str, anchor: str) -> str:
    # The fragment brings a refused form back into view; novalidate leaves every judgement to
    # the server, whose reasons appear beside the field.
    target = escape(f"{post_to}#{anchor}", quote=True)
    return f'id="{escape(anchor, quote=True)}" method="post" action="{target}" novalidate'


def resume_value(payload: Mapping[str, Any], form: Form) -> Any:
    """The resume value a submitted form makes (the host validates it like any other).

    Raises:
        FormRefused: a field is missing or unreadable; the messages are for the reviewer.
    """
    kind = payload.get("kind")
    if kind == "approval":
        return _approval_value(payload, form)
    if kind == "clarification":
        return {"answers": _read_answers(payload, form)}
    return read_fields(_answer_fields(payload), form, prefix="value")


def field_for_path(payload: Mapping[str, Any], path: str) -> str:
    """The form field a host error's JSON pointer (``details.path``) points at, or '' for the form.

    An approval's refusals (an action or member the form never offers) belong to the form sent.
    """
    parts = path.removeprefix("/resumeValue").strip("/").split("/") if path else []
    if payload.get("kind") == "approval":
        return review_items.field_for_path(path) if review_items.is_per_item(payload) else ""
    if payload.get("kind") == "clarification":
        if len(parts) >= 2 and parts[0] == "answers":
            return f"answer.{_unescape_pointer(parts[1])}"
        return ""
    names = {f.name for f in _answer_fields(payload)}
    if parts and f"value.{_unescape_pointer(parts[0])}" in names:
        return f"value.{_unescape_pointer(parts[0])}"
    return "value" if "value" in names else ""


def _actions(payload: Mapping[str, Any]) -> list[str]:
    offered = set((payload.get("data") or {}).get("actions") or [])
    return [a for a in ACTION_ORDER if a in offered]


def _approval_form(
    post_to: str, payload: Mapping[str, Any], name: str, form: Form | None, errors: Mapping[str, str]
) -> str:
    mine = form is not None and submitted(form, "action") == name
    shown, errs = (form, errors) if mine else (None, {})
    explain = _EXPLAIN[name]
    if name == "edit-accept" and review_items.is_per_item(payload):
        fields, explain = review_items.render(payload, shown, errs), review_items.EXPLAIN
    else:
        fields = "".join(render_field(f, shown, errs.get(f.name)) for f in _approval_fields(payload, name))
    if name == "refine":
        fields = _scope_select(shown) + fields
    if errs.get(""):
        fields = f'<p class="error" role="alert">{escape(errs[""])}</p>' + fields
    danger = ' class="danger"' if name == "reject" else ""
    return (
        f'<form class="action" {_form_attributes(post_to, f"answer-{name}")}>'
        f'<input type="hidden" name="action" value="{escape(name, quote=True)}">'
        f'<p class="explain"><strong>{escape(ACTION_LABELS[name])}</strong>: {escape(explain)}</p>'
        f'{fields}<button type="submit"{danger}>{escape(ACTION_LABELS[name])}</button></form>'
    )


def _approval_fields(payload: Mapping[str, Any], name: str) -> list[Field]:
    data: Mapping[str, Any] = payload.get("data") or {}
    if name == "edit-accept":
        artifact = data.get("artifactData")
        if isinstance(artifact, str):
            return [
                Field(
                    "edited",
                    "Your version of the text",
                    initial=artifact,
                    text_only=True,
                    missing="Your version is empty: write the text to approve, or use Reject.",
                )
            ]
        return [
            Field(
                "edited",
                "Your version (JSON)",
                initial=json.dumps(artifact, indent=2, ensure_ascii=False),
                input="json",
                hint="Edit the JSON; it must stay valid JSON.",
            )
        ]
    if name == "refine":
        return [
            Field("sectionPath", "Section path", required=False, input="text"),
            Field("itemIds", "Item ids, separated by commas", required=False, input="text"),
            Field(
                "text",
                "What should change",
                text_only=True,
                missing="Say what should change before sending it back.",
            ),
        ]
    if name == "ask":
        return [Field("feedback", "Your question", text_only=True, missing="Type your question first.")]
    label = "Comment" if name == "accept" else "Reason"
    return [Field("feedback", label, required=False, text_only=True)]


def _scope_select(form: Form | None) -> str:
    chosen = submitted(form, "scope") or "whole"
    options = "".join(
        f'<option value="{value}"{" selected" if value == chosen else ""}>{label}</option>'
        for value, label in _SCOPES
    )
    return (
        '<div class="field"><label><span class="label">What it concerns</span>'
        f'<select name="scope">{options}</select></label></div>'
    )


def _approval_value(payload: Mapping[str, Any], form: Form) -> dict[str, Any]:
    name = submitted(form, "action") or ""
    if name not in _actions(payload):
        raise FormRefused({"": "Choose one of the buttons below."})
    if name == "edit-accept" and review_items.is_per_item(payload):
        return {"action": name, "editedArtifactData": {"decisions": review_items.decisions(payload, form)}}
    fields = _approval_fields(payload, name)
    values = read_fields(fields, form, prefix="") if fields else {}
    value: dict[str, Any] = {"action": name}
    if name == "edit-accept":
        value["editedArtifactData"] = values["edited"]
    elif name == "refine":
        value["refineFeedback"] = _refine_feedback(form, values)
    elif values.get("feedback", "").strip():
        value["feedback"] = values["feedback"]
    return value


def _refine_feedback(form: Form, values: Mapping[str, Any]) -> dict[str, Any]:
    scope = submitted(form, "scope") or "whole"
    feedback: dict[str, Any] = {"scope": scope if scope in {s for s, _ in _SCOPES} else "whole"}
    if feedback["scope"] == "section":
        if not values.get("sectionPath"):
            raise FormRefused(
                {"sectionPath": "Give the path of the section to change, or choose the whole artifact."}
            )
        feedback["sectionPath"] = values["sectionPath"]
    if feedback["scope"] == "items":
        ids = [i.strip() for i in str(values.get("itemIds", "")).split(",") if i.strip()]
        if not ids:
            raise FormRefused(
                {"itemIds": "Give the ids of the items to change, or choose the whole artifact."}
            )
        feedback["itemIds"] = ids
    feedback["text"] = values["text"]
    return feedback


def _read_answers(payload: Mapping[str, Any], form: Form) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in _answer_fields(payload):
        try:
            answers[field.name.removeprefix("answer.")] = read_fields([field], form, prefix=field.name)
        except FormRefused as exc:
            errors.update(exc.errors)
    if errors:
        raise FormRefused(errors)
    return answers


def _answer_fields(payload: Mapping[str, Any]) -> list[Field]:
    kind = payload.get("kind")
    data: Mapping[str, Any] = payload.get("data") or {}
    if kind == "clarification":
        return [
            Field(f"answer.{q.get('id')}", str(q.get("question", "")), schema=q.get("schema"))
            for q in data.get("questions", [])
        ]
    schema = payload.get("resumeSchema")
    if kind == "conversation.exchange" and data.get("outcomeSchema") is not None:
        schema = data["outcomeSchema"]
    initial = ""
    if kind == "external-event":
        schema = schema or {"type": "object"}
        initial = json.dumps(data.get("correlation", {}), indent=2, ensure_ascii=False)
    return fields_for(schema, name="value", label=_ANSWER_LABEL, initial=initial)


def show(value: Any) -> str:
    """A value as a reviewer reads it: text as text, anything else as indented JSON."""
    if isinstance(value, str):
        return f'<div class="text">{escape(value)}</div>'
    return f'<pre class="code">{escape(json.dumps(value, indent=2, ensure_ascii=False))}</pre>'


def show_answer(payload: Mapping[str, Any], value: Any) -> str:
    """The answer a reviewer gave, as they would read it (each question beside its answer)."""
    if payload.get("kind") == "clarification" and isinstance(value, Mapping):
        answers: Mapping[str, Any] = value.get("answers") or {}
        rows = "".join(
            f"<dt>{escape(str(q.get('question', '')))}</dt>"
            f"<dd>{escape(_plain(answers.get(q.get('id'))))}</dd>"
            for q in (payload.get("data") or {}).get("questions", [])
        )
        return f'<dl class="answers">{rows}</dl>'
    return f"<h2>Your answer</h2>{show(value)}"


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    return json.dumps(value, ensure_ascii=False)


def _unescape_pointer(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")
