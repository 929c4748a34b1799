"""The page of an ``approval``: one small form per action the gate offers, each saying what it does.

Accept and reject take an optional comment; edit-accept edits the artifact as a form (text in a
text area that keeps its lines; an object member by member, see :mod:`.values`); refine takes
what it concerns (the whole artifact, a section, some items) and what should change; ask takes
a question and leaves the gate open. A vote toward a quorum says how many votes are in.
Subclasses (the Agent Inbox page) change the words and the editor, not the mechanics.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any, ClassVar

from wop_langgraph.kinds.review.base import (
    Answered,
    GatePage,
    data_of,
    form_error,
    form_html,
    pointer_parts,
    render_fields,
    show,
    show_members,
)
from wop_langgraph.kinds.review.fields import Field, Form, FormRefused, read_fields, submitted
from wop_langgraph.kinds.review.values import editor_fields
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = ["ApprovalPage"]

_SCOPES = (
    ("whole", "The whole artifact"),
    ("section", "One section (give its path below)"),
    ("items", "Some items (give their ids below)"),
)


class ApprovalPage(GatePage):
    """``kind: approval`` (the five actions, as the gate offers them)."""

    ORDER: ClassVar[tuple[str, ...]] = ("accept", "edit-accept", "refine", "ask", "reject")
    LABELS: ClassVar[Mapping[str, str]] = {
        "accept": "Accept",
        "edit-accept": "Accept with my edits",
        "refine": "Send back for changes",
        "ask": "Ask a question",
        "reject": "Reject",
    }
    EXPLAIN: ClassVar[Mapping[str, str]] = {
        "accept": "Approve it as shown; the run continues.",
        "edit-accept": (
            "Approve your edited version; the run continues with your edits instead of the original."
        ),
        "refine": (
            "Do not approve yet: send it back with what to change; the run continues with your feedback."
        ),
        "ask": "Ask a question without deciding; the request stays open and this link keeps working.",
        "reject": "Refuse it; this step fails, and the run stops unless it has a path for rejections.",
    }
    #: What a recorded decision is called, and what happens next.
    DECISIONS: ClassVar[Mapping[str, tuple[str, str]]] = {
        "accept": ("Accepted", "The run continues."),
        "edit-accept": ("Accepted with your edits", "The run continues with your edited version."),
        "refine": ("Sent back for changes", "The run continues with your feedback."),
        "reject": ("Rejected", "This step has failed; the run stops unless it has a path for rejections."),
        "timeout": ("Timed out (rejected)", "Nobody answered before the deadline."),
    }
    ARTIFACT_HEADING: ClassVar[str] = "The artifact"

    def title(self, payload: Mapping[str, Any]) -> str:
        return str(data_of(payload).get("title") or "Please review")

    def describe(self, payload: Mapping[str, Any]) -> str:
        data = data_of(payload)
        parts: list[str] = []
        if data.get("description") and str(data["description"]).strip() != self.title(payload).strip():
            parts.append(f'<p class="lead">{escape(str(data["description"]))}</p>')
        if "artifactData" in data:
            parts.append(f"<h2>{self.artifact_heading(payload)}</h2>{self.show_artifact(payload)}")
        quorum = int(data.get("requiredApprovals") or 1)
        if quorum > 1:
            parts.append(f"<p>This request needs {quorum} reviewers to accept it.</p>")
        return "".join(parts)

    def artifact_heading(self, payload: Mapping[str, Any]) -> str:
        """The HTML heading above the artifact."""
        data = data_of(payload)
        about = " · ".join(escape(str(data[k])) for k in ("artifactId", "artifactType") if data.get(k))
        return f"{escape(self.ARTIFACT_HEADING)} <small>{about}</small>"

    def show_artifact(self, payload: Mapping[str, Any]) -> str:
        """The artifact as a reviewer reads it."""
        artifact = data_of(payload).get("artifactData")
        return show_members(artifact) if isinstance(artifact, Mapping) else show(artifact)

    def actions(self, payload: Mapping[str, Any]) -> list[str]:
        """The actions this gate offers, in the page's order."""
        offered = set(data_of(payload).get("actions") or [])
        return [a for a in self.ORDER if a in offered]

    def forms(
        self, post_to: str, payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]
    ) -> str:
        actions = self.actions(payload)
        top = "" if submitted(form, "action") in actions else form_error(errors)
        return top + "".join(self._form(post_to, payload, name, form, errors) for name in actions)

    def _form(
        self,
        post_to: str,
        payload: Mapping[str, Any],
        name: str,
        form: Form | None,
        errors: Mapping[str, str],
    ) -> str:
        mine = form is not None and submitted(form, "action") == name
        shown, errs = (form, errors) if mine else (None, {})
        fields = self.fields(payload, name)
        body = form_error(errs) + render_fields(fields, shown, errs)
        if any(f.name == "sectionPath" for f in fields):  # the refine form of a plain approval
            body = _scope_select(shown) + body
        label = self.LABELS[name]
        return form_html(
            post_to,
            f"answer-{name}",
            body,
            button=label,
            explain=f"<strong>{escape(label)}</strong>: {escape(self.explain(payload, name))}",
            hidden={"action": name},
            danger=name == "reject",
            css="action",
        )

    def explain(self, payload: Mapping[str, Any], name: str) -> str:
        """What one action's button does, in a sentence."""
        return self.EXPLAIN[name]

    def decision(self, payload: Mapping[str, Any], action: str) -> tuple[str, str]:
        """What a recorded decision is called, and what happens next."""
        return self.DECISIONS.get(action, (action, ""))

    def fields(self, payload: Mapping[str, Any], name: str) -> list[Field]:
        """The fields of one action's form."""
        if name == "edit-accept":
            return self.edit_fields(payload)
        if name == "refine":
            return [
                _section_field(data_of(payload).get("artifactData")),
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

    def edit_fields(self, payload: Mapping[str, Any]) -> list[Field]:
        """The editor of the artifact: text as text, an object member by member."""
        artifact = data_of(payload).get("artifactData")
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
        return editor_fields(artifact, None, name="edited", label="Your version")

    def value(self, payload: Mapping[str, Any], form: Form) -> Any:
        name = submitted(form, "action") or ""
        actions = self.actions(payload)
        if name not in actions:
            offered = ", ".join(self.LABELS[a] for a in actions)
            raise FormRefused(
                {"": f"This request can be answered only with: {offered}. Use one of the buttons below."}
            )
        return self.action_value(payload, name, form)

    def action_value(self, payload: Mapping[str, Any], name: str, form: Form) -> dict[str, Any]:
        """The resume value of one action's form."""
        if name == "edit-accept":
            return {
                "action": name,
                "editedArtifactData": read_fields(self.edit_fields(payload), form, prefix="edited"),
            }
        values = read_fields(self.fields(payload, name), form, prefix="")
        value: dict[str, Any] = {"action": name}
        if name == "refine":
            value["refineFeedback"] = _refine_feedback(form, values)
        elif str(values.get("feedback", "")).strip():
            value["feedback"] = values["feedback"]
        return value

    def field_for_path(self, payload: Mapping[str, Any], path: str) -> str:
        parts = pointer_parts(path)
        names = {f.name for f in self.edit_fields(payload)}
        if len(parts) >= 2 and parts[0] == "editedArtifactData" and f"edited.{parts[1]}" in names:
            return f"edited.{parts[1]}"
        if parts[:1] == ["editedArtifactData"] and "edited" in names:
            return "edited"
        if parts[:2] == ["refineFeedback", "text"]:
            return "text"
        return ""  # an action or member the form never offers: the form sent

    def answered(
        self, payload: Mapping[str, Any], value: Any, record: InterruptRecord | None, back: str
    ) -> Answered:
        action = str(value.get("action"))
        if record is not None and record.is_pending:
            if action == "ask":
                return Answered(
                    "Your question was received",
                    "<p>Nothing was decided: the request is still open, and this link still works "
                    f"for a decision.</p>{back}",
                )
            needed = int(data_of(payload).get("requiredApprovals") or 1)
            votes = len(record.votes or [])
            vote = self.decision(payload, action)[0]
            return Answered(
                "Thank you: your vote was counted",
                f'<p class="outcome">Your vote: <strong>{escape(vote)}</strong></p>'
                f"<p>Votes so far: {votes}. This request needs {needed} reviewers to accept it; it stays "
                "open until enough reviewers have answered.</p>",
            )
        decided = str(((record.resolution or {}) if record is not None else {}).get("action") or action)
        label, next_step = self.decision(payload, decided)
        return Answered(
            "Thank you: your decision was recorded",
            f'<p class="outcome">Decision recorded: <strong>{escape(label)}</strong></p>'
            f"<p>{escape(next_step)}</p>",
        )

    def progress(self, record: InterruptRecord) -> list[tuple[str, str]]:
        required = int(data_of(record.payload).get("requiredApprovals") or 1)
        if required <= 1:
            return []
        return [("Votes so far", f"{len(record.votes or [])} of {required} needed")]

    def decided(self, payload: Mapping[str, Any], record: InterruptRecord) -> str:
        action = str((record.resolution or {}).get("action") or "")
        return self.decision(payload, action)[0] if action in self.DECISIONS else ""


def _section_field(artifact: Any) -> Field:
    """Which section: a choice among an object artifact's members, else a path typed in."""
    if isinstance(artifact, Mapping) and artifact:
        pointers = ["/" + str(k).replace("~", "~0").replace("/", "~1") for k in artifact]
        return Field(
            "sectionPath",
            "Which section",
            schema={"enum": pointers},
            required=False,
            choices=tuple(str(k) for k in artifact),
        )
    return Field("sectionPath", "Section path, like /intro", required=False, input="text")


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
