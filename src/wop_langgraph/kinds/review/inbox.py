"""The page of an Agent Inbox gate (``interrupt([HumanInterrupt])``): accept, edit, respond, ignore.

The gate is an approval underneath (see :mod:`wop_langgraph.adapters.agent_inbox`), but the
agent decides what happens next, so the page speaks the Agent Inbox's words and says what the
agent receives: accept runs the action as shown, edit runs it with the arguments edited in a
form (one field per argument), respond sends the agent a reply instead, and ignore sends it an
``ignore`` (the run goes on; it does not fail). Only the actions the gate's ``config`` allows
are offered.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any, ClassVar

from wop_langgraph.kinds.review.approval import ApprovalPage
from wop_langgraph.kinds.review.base import data_of
from wop_langgraph.kinds.review.fields import Field, Form, read_fields
from wop_langgraph.kinds.review.values import editor_fields

__all__ = ["AgentInboxPage"]


class AgentInboxPage(ApprovalPage):
    """An approval built from a ``HumanInterrupt``."""

    ORDER: ClassVar[tuple[str, ...]] = ("accept", "edit-accept", "refine", "reject")
    LABELS: ClassVar[Mapping[str, str]] = {
        "accept": "Accept",
        "edit-accept": "Run with my edits",
        "refine": "Respond instead",
        "reject": "Ignore",
    }
    _EXPLAIN: ClassVar[Mapping[str, str]] = {
        "accept": "Let the agent run {tool} with the arguments shown.",
        "edit-accept": "Let the agent run {tool} with the arguments as you change them here.",
        "refine": "Do not run {tool}; the agent gets your reply instead and goes on with it.",
        "reject": (
            "Do not run {tool} and send no reply; the agent is told you ignored it and goes on "
            "(the run does not fail)."
        ),
    }
    _DECISIONS: ClassVar[Mapping[str, tuple[str, str]]] = {
        "accept": ("Accepted", "The agent runs {tool} as shown; the run continues."),
        "edit-accept": ("Accepted with your edits", "The agent runs {tool} with your arguments."),
        "refine": ("Responded", "The agent got your reply instead of running {tool}."),
        "reject": ("Ignored", "{tool} was not run; the agent goes on without it."),
        "timeout": ("Timed out (ignored)", "Nobody answered before the deadline; {tool} was not run."),
    }
    DECISIONS: ClassVar[Mapping[str, tuple[str, str]]] = _DECISIONS
    ARTIFACT_HEADING: ClassVar[str] = "What the agent wants to do"

    def artifact_heading(self, payload: Mapping[str, Any]) -> str:
        return f"{escape(self.ARTIFACT_HEADING)}: <code>{escape(_tool(payload))}</code>"

    def explain(self, payload: Mapping[str, Any], name: str) -> str:
        return self._EXPLAIN[name].format(tool=_tool(payload))

    def decision(self, payload: Mapping[str, Any], action: str) -> tuple[str, str]:
        label, then = self._DECISIONS.get(action, (action, ""))
        return label, then.format(tool=_tool(payload))

    def fields(self, payload: Mapping[str, Any], name: str) -> list[Field]:
        if name == "edit-accept":
            return self.edit_fields(payload)
        if name == "refine":
            return [
                Field("text", "Your reply to the agent", text_only=True, missing="Write your reply first.")
            ]
        return []  # accept and ignore carry nothing the agent would receive

    def edit_fields(self, payload: Mapping[str, Any]) -> list[Field]:
        args = data_of(payload).get("artifactData")
        return editor_fields(args if isinstance(args, dict) else {}, None, name="edited", label="Arguments")

    def action_value(self, payload: Mapping[str, Any], name: str, form: Form) -> dict[str, Any]:
        if name == "refine":
            text = read_fields(self.fields(payload, name), form, prefix="text")
            return {"action": name, "refineFeedback": {"scope": "whole", "text": text}}
        return super().action_value(payload, name, form)


def _tool(payload: Mapping[str, Any]) -> str:
    return str(data_of(payload).get("artifactId") or "the action")
