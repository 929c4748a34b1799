"""Agent Inbox: ``interrupt([HumanInterrupt])`` becomes an ``approval``; the node gets ``[HumanResponse]``.

The request (``langgraph.prebuilt.interrupt.HumanInterrupt``)::

    {"action_request": {"action": str, "args": {...}},
     "config": {"allow_accept", "allow_edit", "allow_respond", "allow_ignore"},
     "description": str | None}

maps onto an approval of the action (``artifactId`` = the action, ``artifactData`` = its args)
whose actions follow the config:

=================  ==================================  ====================================
config             OpenWOP resume                      the node receives
=================  ==================================  ====================================
``allow_accept``   ``{"action": "accept"}``            ``{"type": "accept", "args": None}``
``allow_edit``     ``{"action": "edit-accept",         ``{"type": "edit", "args":
                   "editedArtifactData": {args}}``     {"action": ..., "args": {args}}}``
``allow_respond``  ``{"action": "refine",              ``{"type": "response", "args": text}``
                   "refineFeedback": {"text": ...}}``
``allow_ignore``   ``{"action": "reject"}``            ``{"type": "ignore", "args": None}``
=================  ==================================  ====================================

An ignore is recorded as a rejection but never fails the node: the node asked for the response
and handles it. A resolver may also send the ``HumanResponse`` list (or one ``HumanResponse``).
"""

from __future__ import annotations

from typing import Any, Final

from wop_langgraph.adapters._shape import Classified, invalid, readable

__all__ = ["ARTIFACT_TYPE", "AgentInboxInterrupt"]

#: ``artifactType`` marking an approval built from a ``HumanInterrupt``.
ARTIFACT_TYPE: Final = "langgraph.human-interrupt"
_ACTIONS: Final = (
    ("allow_accept", "accept"),
    ("allow_edit", "edit-accept"),
    ("allow_respond", "refine"),
    ("allow_ignore", "reject"),
)
_FROM_RESPONSE: Final = {"accept": "accept", "edit": "edit-accept", "response": "refine", "ignore": "reject"}


class AgentInboxInterrupt:
    """``interrupt([HumanInterrupt])`` as an OpenWOP approval."""

    def classify(self, value: Any, response_schema: Any = None) -> Classified | None:
        """An approval for a list of exactly one ``HumanInterrupt``; ``None`` otherwise."""
        if not (isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict)):
            return None
        request = value[0]
        action_request, config = request.get("action_request"), request.get("config")
        if not (isinstance(action_request, dict) and isinstance(config, dict)):
            return None
        action = action_request.get("action")
        args = action_request.get("args")
        if not isinstance(action, str) or not action or not isinstance(args, dict):
            return None
        actions = [name for flag, name in _ACTIONS if config.get(flag) is True]
        if not actions:
            return None  # nothing a reviewer could do: keep the value as a custom interrupt
        description = request.get("description")
        data: dict[str, Any] = {
            "artifactId": action,
            "artifactType": ARTIFACT_TYPE,
            "title": _title(action, description),
            "actions": actions,
            "artifactData": readable(args),
        }
        if isinstance(description, str) and description:
            data["description"] = description
        return Classified("approval", data)

    def owns(self, payload: dict[str, Any]) -> bool:
        data = payload.get("data") or {}
        return payload.get("kind") == "approval" and data.get("artifactType") == ARTIFACT_TYPE

    def normalize(self, payload: dict[str, Any], value: Any) -> Any:
        """The OpenWOP approval resume for a ``HumanResponse`` (list), or ``value`` checked as sent."""
        offered = [kind for kind, action in _FROM_RESPONSE.items() if action in payload["data"]["actions"]]
        if isinstance(value, list):
            if len(value) != 1:
                raise invalid("send exactly one HumanResponse for a HumanInterrupt", "")
            return _from_response(value[0], "/0", offered)
        if isinstance(value, dict) and "type" in value and "action" not in value:
            return _from_response(value, "", offered)
        if isinstance(value, dict):
            _check_openwop(value)
        return value

    def node_value(self, payload: dict[str, Any], resolution: dict[str, Any], resume_value: Any) -> Any:
        action = resolution.get("action")
        if action == "edit-accept":
            edited = {"action": payload["data"]["artifactId"], "args": resolution.get("editedArtifactData")}
            return [{"type": "edit", "args": edited}]
        if action == "refine":
            return [{"type": "response", "args": (resolution.get("refineFeedback") or {}).get("text", "")}]
        if resolution.get("decision") in ("granted", "overridden"):
            return [{"type": "accept", "args": None}]
        return [{"type": "ignore", "args": None}]  # a reject, or a timeout


def _title(action: str, description: Any) -> str:
    if isinstance(description, str) and description.strip():
        first = description.strip().splitlines()[0]
        return first if len(first) <= 120 else first[:117] + "..."
    return f"Review {action}"


def _from_response(response: Any, path: str, offered: list[str]) -> dict[str, Any]:
    if not isinstance(response, dict):
        raise invalid("a HumanResponse is an object {type, args}", path)
    kind, args = response.get("type"), response.get("args")
    if kind not in offered:  # the gate's config allows these; not every type the Agent Inbox knows
        raise invalid(f"this HumanInterrupt allows the response types {', '.join(offered)}", path + "/type")
    action = _FROM_RESPONSE[kind]
    if action == "edit-accept":
        if not isinstance(args, dict) or not isinstance(args.get("args"), dict):
            raise invalid("an edit carries args {action, args: {...}}", path + "/args")
        return {"action": action, "editedArtifactData": args["args"]}
    if action == "refine":
        if not isinstance(args, str) or not args.strip():
            raise invalid("a response carries the reviewer's text in args", path + "/args")
        return {"action": action, "refineFeedback": {"scope": "whole", "text": args}}
    return {"action": action}


def _check_openwop(value: dict[str, Any]) -> None:
    """What a HumanInterrupt needs beyond the approval resume's own rules."""
    if value.get("action") == "edit-accept" and not isinstance(value.get("editedArtifactData"), dict):
        raise invalid("edit-accept carries the edited arguments as an object", "/editedArtifactData")
    if value.get("action") == "refine":
        feedback = value.get("refineFeedback")
        text = feedback.get("text") if isinstance(feedback, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise invalid("a response needs refineFeedback.text", "/refineFeedback/text")
