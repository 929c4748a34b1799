"""The page of a ``HumanInTheLoopMiddleware`` gate: one row per tool call, each decided on its own.

The middleware's approval lists the tool calls of one model turn as ``artifactData.items``
(see :mod:`wop_langgraph.adapters.hitl_middleware`). The page shows each call's tool, its
description and arguments (text with its own line breaks, not JSON), and offers, among the
decisions the call allows: approve (run it as shown), edit (run it with the arguments changed
in a form, one field per argument, checked against the call's ``args_schema``), reject (do not
run it; an optional message tells the agent why) and respond (do not run it; the message is
the tool's answer). One button sends every call's decision, so a batch can approve one call and
reject another. The form makes the middleware's own ``{"decisions": [...]}`` (a single decision
for a ``per_call`` gate), which the adapter checks and records like any resolver's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from html import escape
from typing import Any, ClassVar, Final

from wop_langgraph.adapters.hitl_middleware import PER_CALL_ARTIFACT_TYPE
from wop_langgraph.kinds.review.approval import ApprovalPage
from wop_langgraph.kinds.review.base import (
    Answered,
    data_of,
    form_error,
    form_html,
    render_fields,
    show_members,
)
from wop_langgraph.kinds.review.fields import Field, Form, FormRefused, read_fields
from wop_langgraph.kinds.review.values import editor_fields
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = ["ToolCallsPage"]

_CHOICES: Final[Mapping[str, str]] = {
    "approve": "Approve: run it as shown",
    "edit": "Edit: run it with the arguments as changed below",
    "reject": "Reject: do not run it (the message, if any, tells the agent why)",
    "respond": "Respond: do not run it; the message below is the tool's answer",
}
_DONE: Final[Mapping[str, str]] = {
    "approve": "approved",
    "edit": "run with your arguments",
    "reject": "rejected",
    "respond": "answered with your message",
}
_DEFAULT_PREFIX: Final = "Tool execution requires approval"  # the middleware's description_prefix
_PATH: Final = re.compile(r"^/resumeValue(?:/editedArtifactData)?/decisions/(\d+)(?:/([^/]+))?")


class ToolCallsPage(ApprovalPage):
    """An approval built from the middleware's tool calls (batched or ``per_call``)."""

    DECISIONS: ClassVar[Mapping[str, tuple[str, str]]] = {
        "accept": ("Every tool call approved", "The agent runs them; the run continues."),
        "edit-accept": ("Your decisions were recorded", "The agent goes on with them."),
        "reject": ("Every tool call rejected", "The agent is told; the run continues."),
        "timeout": ("Timed out (every call rejected)", "Nobody answered before the deadline."),
    }

    def describe(self, payload: Mapping[str, Any]) -> str:
        quorum = int(data_of(payload).get("requiredApprovals") or 1)
        lead = (
            '<p class="lead">The agent wants to run the tool calls below. Decide each one; the agent '
            "goes on when you send your decisions.</p>"
        )
        return lead + (f"<p>This request needs {quorum} reviewers to accept it.</p>" if quorum > 1 else "")

    def forms(
        self, post_to: str, payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]
    ) -> str:
        rows = "".join(_row(index, item, form, errors) for index, item in enumerate(_items(payload)))
        several = len(_items(payload)) > 1
        return form_html(
            post_to,
            "answer-decisions",
            form_error(errors) + rows,
            button="Send my decisions" if several else "Send my decision",
            css="action",
        )

    def value(self, payload: Mapping[str, Any], form: Form) -> Any:
        made: list[dict[str, Any]] = []
        errors: dict[str, str] = {}
        for index, item in enumerate(_items(payload)):
            try:
                made.append(_decision(index, item, form))
            except FormRefused as exc:
                errors.update(exc.errors)
        if errors:
            raise FormRefused(errors)
        if data_of(payload).get("artifactType") == PER_CALL_ARTIFACT_TYPE:
            return made[0]
        return {"decisions": made}

    def field_for_path(self, payload: Mapping[str, Any], path: str) -> str:
        found = _PATH.match(path)
        if found is None:
            return ""
        index, member = found.group(1), found.group(2)
        # The arguments as a whole, or the decision itself: said beside the call's decision.
        return f"item.{index}.message" if member == "message" else f"item.{index}.decision"

    def answered(
        self, payload: Mapping[str, Any], value: Any, record: InterruptRecord | None, back: str
    ) -> Answered:
        if record is not None and record.is_pending:
            return super().answered(payload, {"action": "accept"}, record, back)  # a vote toward a quorum
        listed = value.get("decisions") if isinstance(value, Mapping) else None
        decisions: list[Any] = listed if isinstance(listed, list) else [value]
        rows = "".join(
            f"<dt>{index + 1}. <code>{escape(str(item.get('name', '')))}</code></dt>"
            f"<dd>{escape(_DONE.get(str(d.get('type')), str(d.get('type'))))}"
            f"{': ' + escape(str(d['message'])) if d.get('message') else ''}</dd>"
            for index, (item, d) in enumerate(zip(_items(payload), decisions, strict=False))
        )
        return Answered(
            "Thank you: your decisions were recorded",
            f'<dl class="answers">{rows}</dl><p>The agent goes on with your decisions.</p>',
        )


def _items(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    artifact = data_of(payload).get("artifactData")
    items = artifact.get("items") if isinstance(artifact, Mapping) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _allowed(item: Mapping[str, Any]) -> list[str]:
    return [str(d) for d in item.get("allowedDecisions") or [] if d in _CHOICES]


def _choice(index: int, item: Mapping[str, Any]) -> Field:
    allowed = _allowed(item)
    return Field(
        f"item.{index}.decision",
        "Your decision",
        schema={"enum": allowed},
        choices=tuple(_CHOICES[d] for d in allowed),
        missing="Choose a decision for this tool call.",
    )


def _args_fields(index: int, item: Mapping[str, Any]) -> list[Field]:
    schema = item.get("argsSchema")
    args = item.get("args")
    return editor_fields(
        args if isinstance(args, dict) else {},
        schema if isinstance(schema, Mapping) else None,
        name=f"item.{index}.args",
        label="Arguments",
    )


def _message(index: int, item: Mapping[str, Any]) -> Field:
    allowed = _allowed(item)
    used = " or ".join(w for w in ("Reject", "Respond") if w.lower() in allowed)
    return Field(f"item.{index}.message", f"Message (for {used})", required=False, text_only=True)


def _row(index: int, item: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]) -> str:
    allowed = _allowed(item)
    parts = [render_fields([_choice(index, item)], form, errors)]
    if "edit" in allowed:
        fields = render_fields(_args_fields(index, item), form, errors)
        parts.append(
            f'<fieldset class="args"><legend>Arguments (used if you choose Edit)</legend>{fields}</fieldset>'
        )
    else:
        parts.append(f"<h3>Arguments</h3>{show_members(item.get('args'))}")
    if "reject" in allowed or "respond" in allowed:
        parts.append(render_fields([_message(index, item)], form, errors))
    said = _description(item)
    about = f'<p class="explain">{escape(said)}</p>' if said else ""
    return (
        f'<fieldset class="item" id="item-{index}"><legend>Tool call {index + 1}: '
        f"<code>{escape(str(item.get('name', '')))}</code></legend>{about}{''.join(parts)}</fieldset>"
    )


def _description(item: Mapping[str, Any]) -> str:
    """The call's description without the middleware's default tail (``Tool: ...`` and ``Args:
    {...}`` as a Python dict): the row shows the arguments themselves."""
    text = str(item.get("description") or "")
    tail = text.find(f"\n\nTool: {item.get('name')}\nArgs: ")
    if tail >= 0:
        text = text[:tail]
    return "" if text.strip() == _DEFAULT_PREFIX else text.strip()


def _decision(index: int, item: Mapping[str, Any], form: Form) -> dict[str, Any]:
    choice = _choice(index, item)
    kind = read_fields([choice], form, prefix=choice.name)
    if kind == "approve":
        return {"type": "approve"}
    if kind == "edit":
        name = f"item.{index}.args"
        args = read_fields(_args_fields(index, item), form, prefix=name)
        if not isinstance(args, dict):
            raise FormRefused({name: 'The arguments must be a JSON object, like {"key": "value"}.'})
        return {"type": "edit", "edited_action": {"name": item.get("name"), "args": args}}
    field = _message(index, item)
    message = read_fields([field], form, prefix=field.name)
    if kind == "respond" and not (isinstance(message, str) and message.strip()):
        raise FormRefused({field.name: "Write the answer the agent should get instead of the tool's."})
    decision: dict[str, Any] = {"type": kind}
    if isinstance(message, str) and message.strip():
        decision["message"] = message
    return decision
