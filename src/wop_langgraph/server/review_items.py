"""The reviewer page's per-item form for a ``HumanInTheLoopMiddleware`` approval: one decision per tool call.

The middleware's approval lists the tool calls of one model turn as ``artifactData.items``; its
``edit-accept`` resume carries one middleware decision per item. Instead of an editor over that
JSON, the page gives each call its own choice among the decisions it allows (approve, edit,
reject, respond), a JSON editor of its arguments (used by edit, checked against the call's
``args_schema``) and a message (reject, respond). The value the form makes is
``{"action": "edit-accept", "editedArtifactData": {"decisions": [...]}}``, which the host
checks like any other resolver's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from html import escape
from typing import Any, Final

from wop_langgraph.adapters.hitl_middleware import HitlMiddlewareInterrupt
from wop_langgraph.server.review_fields import Field, Form, FormRefused, read_fields, render_field

__all__ = ["EXPLAIN", "decisions", "field_for_path", "is_per_item", "render"]

EXPLAIN: Final = (
    "Decide each tool call on its own: approve it, edit its arguments, reject it or respond "
    "instead of running it. The run continues when you send the decisions."
)
_MIDDLEWARE: Final = HitlMiddlewareInterrupt()
_MEANING: Final[Mapping[str, str]] = {
    "approve": "approve: run it as shown",
    "edit": "edit: run it with the arguments below",
    "reject": "reject: do not run it (the message tells the agent why)",
    "respond": "respond: do not run it; the message is the tool's answer",
}
_DECISION_PATH: Final = re.compile(r"^/resumeValue/editedArtifactData/decisions/(\d+)(?:/([^/]+))?")


def is_per_item(payload: Mapping[str, Any]) -> bool:
    """Whether ``payload`` is a middleware approval whose edit-accept decides item by item."""
    return _MIDDLEWARE.owns(dict(payload)) and bool(_items(payload))


def render(payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]) -> str:
    """One fieldset per tool call: its name and description, then its fields."""
    parts: list[str] = []
    for index, item in enumerate(_items(payload)):
        fields = "".join(render_field(f, form, errors.get(f.name)) for f in _fields(index, item))
        about = ""
        if item.get("description"):
            about = f'<p class="explain">{escape(str(item["description"]))}</p>'
        parts.append(
            f'<fieldset class="item"><legend>Tool call {index + 1}: '
            f"<code>{escape(str(item.get('name', '')))}</code></legend>{about}{fields}</fieldset>"
        )
    return "".join(parts)


def decisions(payload: Mapping[str, Any], form: Form) -> list[dict[str, Any]]:
    """The middleware decisions the form makes, one per item, in order.

    Raises:
        FormRefused: an item has no decision, or its arguments or message cannot be read.
    """
    made: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for index, item in enumerate(_items(payload)):
        try:
            made.append(_decision(index, item, form))
        except FormRefused as exc:
            errors.update(exc.errors)
    if errors:
        raise FormRefused(errors)
    return made


def field_for_path(path: str) -> str:
    """The field a host refusal of one item's decision points at (``details.path``), or ''."""
    found = _DECISION_PATH.match(path)
    if found is None:
        return ""
    index, member = found.group(1), found.group(2)
    if member == "edited_action":
        return f"item.{index}.args"
    if member == "message":
        return f"item.{index}.message"
    return f"item.{index}.decision"


def _items(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    artifact = (payload.get("data") or {}).get("artifactData")
    items = artifact.get("items") if isinstance(artifact, Mapping) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _fields(index: int, item: Mapping[str, Any]) -> list[Field]:
    allowed = [str(d) for d in item.get("allowedDecisions") or []]
    fields = [
        Field(
            f"item.{index}.decision",
            "Decision",
            schema={"enum": allowed},
            hint=" · ".join(_MEANING.get(d, d) for d in allowed),
            missing="Choose a decision for this tool call.",
        )
    ]
    if "edit" in allowed:
        fields.append(
            Field(
                f"item.{index}.args",
                "Arguments (JSON; used when you choose edit)",
                initial=json.dumps(item.get("args", {}), indent=2, ensure_ascii=False),
                input="json",
                required=False,
            )
        )
    if "reject" in allowed or "respond" in allowed:
        fields.append(
            Field(
                f"item.{index}.message",
                "Message (used when you choose reject or respond)",
                required=False,
                text_only=True,
            )
        )
    return fields


def _decision(index: int, item: Mapping[str, Any], form: Form) -> dict[str, Any]:
    by_name = {f.name: f for f in _fields(index, item)}
    choice = f"item.{index}.decision"
    kind = read_fields([by_name[choice]], form, prefix=choice)
    if kind == "approve":
        return {"type": "approve"}
    if kind == "edit":
        name = f"item.{index}.args"
        schema = item.get("argsSchema")
        editor = Field(
            name,
            by_name[name].label,
            schema=schema if isinstance(schema, Mapping) else None,
            input="json",
            missing="Give the arguments to run the tool with.",
        )
        args = read_fields([editor], form, prefix=name)
        if not isinstance(args, dict):
            raise FormRefused({name: 'The arguments must be a JSON object, like {"key": "value"}.'})
        return {"type": "edit", "edited_action": {"name": item.get("name"), "args": args}}
    name = f"item.{index}.message"
    message = read_fields([by_name[name]], form, prefix=name) if name in by_name else None
    if kind == "respond" and not (isinstance(message, str) and message.strip()):
        raise FormRefused({name: "Write the response the agent should receive instead of the tool's."})
    decision: dict[str, Any] = {"type": kind}
    if isinstance(message, str) and message.strip():
        decision["message"] = message
    return decision
