"""Plain ``interrupt(value)``: a question becomes a clarification, anything else stays ``custom``.

* a non-empty string -> a ``clarification`` with one free-text question (id ``answer``);
* a dict with a ``question`` string (and optionally ``options`` or ``choices``, a list of JSON
  scalars) -> a ``clarification`` whose answer must be one of the options;
* anything else -> ``custom`` (``customKind: langgraph.interrupt``) carrying the value as JSON.

The node receives exactly what ``Command(resume=...)`` would have given it: the answer itself
for a question, the resume value as sent for a custom interrupt. A resolver may send the
OpenWOP value (``{"answers": {"answer": ...}}``) or that native value. A ``response_schema``
given to ``interrupt()`` becomes the question's schema (or the custom ``resumeSchema``), so the
host refuses a bad answer before anything is recorded.
"""

from __future__ import annotations

from typing import Any, Final

from wop_langgraph.adapters._shape import Classified, readable, usable_schema

__all__ = ["CONTEXT_TYPE", "CUSTOM_KIND", "QUESTION_ID", "PlainInterrupt"]

#: ``contextType`` marking a clarification built from a plain ``interrupt()``.
CONTEXT_TYPE: Final = "langgraph.interrupt"
#: ``customKind`` of a plain ``interrupt()`` value that is not a question.
CUSTOM_KIND: Final = "langgraph.interrupt"
#: The id of the one question of a plain-interrupt clarification.
QUESTION_ID: Final = "answer"
_SCALARS = (str, int, float, bool)


class PlainInterrupt:
    """The fallback shape: every value is either a question or a custom interrupt."""

    def classify(self, value: Any, response_schema: Any = None) -> Classified:
        """A clarification for a question, else ``custom``; never ``None``."""
        schema = usable_schema(response_schema)
        question = _question(value, schema)
        if question is not None:
            return Classified("clarification", {"questions": [question], "contextType": CONTEXT_TYPE})
        data: dict[str, Any] = {"customKind": CUSTOM_KIND}
        shown = readable(value)
        if shown is not None:
            data["payload"] = shown
        return Classified("custom", data, schema)

    def owns(self, payload: dict[str, Any]) -> bool:
        data = payload.get("data") or {}
        if payload.get("kind") == "clarification":
            return data.get("contextType") == CONTEXT_TYPE
        return payload.get("kind") == "custom" and data.get("customKind") == CUSTOM_KIND

    def normalize(self, payload: dict[str, Any], value: Any) -> Any:
        """For a question, a bare answer becomes ``{"answers": {"answer": value}}``."""
        if payload.get("kind") != "clarification":
            return value
        if isinstance(value, dict) and set(value) == {"answers"}:
            return value
        return {"answers": {QUESTION_ID: value}}

    def node_value(self, payload: dict[str, Any], resolution: dict[str, Any], resume_value: Any) -> Any:
        if payload.get("kind") == "clarification":
            return resume_value["answers"][QUESTION_ID]
        return resume_value


def _question(value: Any, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The clarification question for ``value``, or ``None`` when it is not a question."""
    if isinstance(value, str):
        text = value
        answer_schema: dict[str, Any] = schema or {"type": "string"}
    elif isinstance(value, dict) and isinstance(value.get("question"), str):
        text = value["question"]
        options = value.get("options", value.get("choices"))
        if options is None:
            answer_schema = schema or {"type": "string"}
        elif isinstance(options, list) and options and all(isinstance(o, _SCALARS) for o in options):
            answer_schema = {"enum": list(dict.fromkeys(options))}
        else:
            return None  # options we cannot offer as a choice: keep the value as custom
    else:
        return None
    if not text.strip():
        return None
    return {"id": QUESTION_ID, "question": text, "schema": answer_schema}
