"""LangChain's ``HumanInTheLoopMiddleware``: each reviewed tool call is an item with its own decision.

Batched mode (the default) raises one interrupt per model turn::

    {"action_requests": [{"name", "args" | "arguments", "description"?}, ...],
     "review_configs": [{"action_name", "allowed_decisions", "args_schema"?}, ...]}

and resumes with ``{"decisions": [...]}``, one decision per action request, in order
(``approve``; ``edit`` with ``edited_action {name, args}``; ``reject`` with ``message?``;
``respond`` with ``message``). ``per_call`` mode raises one ``{"type": "tool_approval", ...}``
interrupt per tool call, with a ``response_schema``, resumed with a single decision.

Both become an ``approval`` whose ``artifactData.items`` lists the calls (tool name, arguments,
description, allowed decisions). The gate resolves only when every item is decided:

* ``{"action": "accept"}``: approve every call (offered when every call allows ``approve``);
* ``{"action": "reject", "feedback"?}``: reject every call, the feedback as the message
  (offered when every call allows ``reject``);
* ``{"action": "edit-accept", "editedArtifactData": {"decisions": [...]}}``: one decision per
  call, each checked against that call's allowed decisions and, for an edit, its ``args_schema``;
* or the middleware's own ``{"decisions": [...]}`` (a single decision in ``per_call`` mode).

Both spellings the middleware has used for arguments (``args``, ``arguments``) are accepted;
the agent gets its decisions back in the spelling its request used.
"""

from __future__ import annotations

from typing import Any, Final

from wop_langgraph.adapters._shape import Classified, invalid, readable, usable_schema
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.jsonschema_check import validate_against_schema

__all__ = ["BATCH_ARTIFACT_TYPE", "PER_CALL_ARTIFACT_TYPE", "HitlMiddlewareInterrupt"]

#: ``artifactType`` of an approval built from a batched ``HITLRequest``.
BATCH_ARTIFACT_TYPE: Final = "langchain.hitl-request"
#: ``artifactType`` of an approval built from a ``per_call`` ``ToolApprovalRequest``.
PER_CALL_ARTIFACT_TYPE: Final = "langchain.tool-approval"
_DECISIONS: Final = ("approve", "edit", "reject", "respond")


class HitlMiddlewareInterrupt:
    """``HumanInTheLoopMiddleware`` interrupts (batched and per call) as an OpenWOP approval."""

    def classify(self, value: Any, response_schema: Any = None) -> Classified | None:
        if not isinstance(value, dict):
            return None
        if value.get("type") == "tool_approval":
            return _per_call(value, response_schema)
        return _batched(value)

    def owns(self, payload: dict[str, Any]) -> bool:
        data = payload.get("data") or {}
        return payload.get("kind") == "approval" and data.get("artifactType") in (
            BATCH_ARTIFACT_TYPE,
            PER_CALL_ARTIFACT_TYPE,
        )

    def normalize(self, payload: dict[str, Any], value: Any) -> Any:
        """The OpenWOP approval resume for ``value``; every item's decision is checked here."""
        data = payload["data"]
        items: list[dict[str, Any]] = data["artifactData"]["items"]
        per_call = data["artifactType"] == PER_CALL_ARTIFACT_TYPE
        if isinstance(value, dict) and "action" not in value:
            if per_call and "type" in value:
                native: Any = [value]
            elif not per_call and "decisions" in value:
                native = value["decisions"]
            else:
                raise invalid(_usage(per_call), "")
            return _summarize(_check_decisions(items, native, "" if per_call else "/decisions"))
        if isinstance(value, dict) and value.get("action") == "edit-accept":
            edited = value.get("editedArtifactData")
            if not isinstance(edited, dict) or set(edited) != {"decisions"}:
                raise invalid("edit-accept carries {decisions: [...]}, one per item", "/editedArtifactData")
            decisions = _check_decisions(items, edited["decisions"], "/editedArtifactData/decisions")
            return {**value, "editedArtifactData": {"decisions": decisions}}
        return value

    def node_value(self, payload: dict[str, Any], resolution: dict[str, Any], resume_value: Any) -> Any:
        data = payload["data"]
        items: list[dict[str, Any]] = data["artifactData"]["items"]
        action = resolution.get("action")
        if action == "edit-accept":
            decisions = list(resolution["editedArtifactData"]["decisions"])
        elif resolution.get("decision") in ("granted", "overridden"):
            decisions = [{"type": "approve"} for _ in items]
        else:  # a reject, or a timeout
            feedback = resume_value.get("feedback") if isinstance(resume_value, dict) else None
            reject: dict[str, Any] = {"type": "reject"}
            if feedback:
                reject["message"] = feedback
            decisions = [dict(reject) for _ in items]
        spelling = data["artifactData"].get("argsKey", "args")
        decisions = [_respelled(d, spelling) for d in decisions]
        if data["artifactType"] == PER_CALL_ARTIFACT_TYPE:
            return decisions[0]
        return {"decisions": decisions}


def _batched(value: dict[str, Any]) -> Classified | None:
    requests, configs = value.get("action_requests"), value.get("review_configs")
    if not (isinstance(requests, list) and requests and isinstance(configs, list)):
        return None
    if not all(isinstance(c, dict) for c in configs):
        return None
    by_name = {c.get("action_name"): c for c in configs}
    items: list[dict[str, Any]] = []
    spelling = "args"
    for index, request in enumerate(requests):
        if not isinstance(request, dict) or not isinstance(request.get("name"), str):
            return None
        if "arguments" in request and "args" not in request:
            spelling = "arguments"
        args = request.get("args", request.get("arguments"))
        config = configs[index] if len(configs) == len(requests) else by_name.get(request["name"])
        if not isinstance(args, dict) or config is None:
            return None
        item = _item(request["name"], args, request.get("description"), config.get("allowed_decisions"))
        if item is None:
            return None
        schema = usable_schema(config.get("args_schema"))
        if schema is not None:
            item["argsSchema"] = schema
        items.append(item)
    return _approval(BATCH_ARTIFACT_TYPE, items, spelling)


def _per_call(value: dict[str, Any], response_schema: Any) -> Classified | None:
    name, args = value.get("name"), value.get("args")
    if not isinstance(name, str) or not isinstance(args, dict):
        return None
    schema = usable_schema(response_schema)
    allowed = sorted(_type_consts(schema), key=_DECISIONS.index) if schema else list(_DECISIONS)
    item = _item(name, args, value.get("description"), allowed)
    if item is None:
        return None
    if isinstance(value.get("tool_call_id"), str):
        item["toolCallId"] = value["tool_call_id"]
    if schema is not None:
        item["decisionSchema"] = schema
    return _approval(PER_CALL_ARTIFACT_TYPE, [item], "args")


def _item(name: str, args: dict[str, Any], description: Any, allowed: Any) -> dict[str, Any] | None:
    if not name or not isinstance(allowed, list) or not allowed or not set(allowed) <= set(_DECISIONS):
        return None
    item: dict[str, Any] = {"name": name, "args": readable(args), "allowedDecisions": list(allowed)}
    if isinstance(description, str) and description:
        item["description"] = description
    return item


def _approval(artifact_type: str, items: list[dict[str, Any]], spelling: str) -> Classified:
    names = ", ".join(dict.fromkeys(item["name"] for item in items))
    count = f"{len(items)} tool call" + ("s" if len(items) != 1 else "")
    actions = ["accept"] if all("approve" in i["allowedDecisions"] for i in items) else []
    if all("reject" in i["allowedDecisions"] for i in items):
        actions.append("reject")
    actions.append("edit-accept")  # the general form: one decision per item
    artifact: dict[str, Any] = {"items": items}
    if spelling != "args":
        artifact["argsKey"] = spelling
    data: dict[str, Any] = {
        "artifactId": "tool-calls",
        "artifactType": artifact_type,
        "title": f"Review {count}: {names}",
        "actions": actions,
        "artifactData": artifact,
    }
    descriptions = [i["description"] for i in items if "description" in i]
    if descriptions:
        data["description"] = "\n\n".join(descriptions)
    return Classified("approval", data)


def _check_decisions(items: list[dict[str, Any]], decisions: Any, path: str) -> list[dict[str, Any]]:
    """Every item's decision, checked and in the canonical ``args`` spelling."""
    if not isinstance(decisions, list) or len(decisions) != len(items):
        raise invalid(f"send one decision per tool call ({len(items)}), in order", path)
    return [
        _check_decision(item, d, f"{path}/{i}")
        for i, (item, d) in enumerate(zip(items, decisions, strict=True))
    ]


def _check_decision(item: dict[str, Any], decision: Any, path: str) -> dict[str, Any]:
    if not isinstance(decision, dict) or decision.get("type") not in _DECISIONS:
        raise invalid("a decision is {type: approve | edit | reject | respond, ...}", path + "/type")
    kind = decision["type"]
    if kind not in item["allowedDecisions"]:
        allowed = ", ".join(item["allowedDecisions"])
        raise invalid(f"{kind!r} is not allowed for {item['name']!r}; allowed: {allowed}", path + "/type")
    if kind == "approve":
        return {"type": "approve"}
    if kind in ("reject", "respond"):
        message = decision.get("message")
        if message is None and kind == "reject":
            return {"type": "reject"}
        if not isinstance(message, str) or (kind == "respond" and not message):
            raise invalid(f"a {kind} carries a text message", path + "/message")
        return {"type": kind, "message": message}
    edited = decision.get("edited_action")
    if not isinstance(edited, dict):
        raise invalid("an edit carries edited_action {name, args}", path + "/edited_action")
    args = edited.get("args", edited.get("arguments"))
    if not isinstance(args, dict):
        raise invalid("the edited arguments must be an object", path + "/edited_action/args")
    name = edited.get("name", item["name"])
    if name != item["name"]:
        raise invalid(f"an edit keeps the tool {item['name']!r}", path + "/edited_action/name")
    if "argsSchema" in item:
        validate_against_schema(args, item["argsSchema"], what=f"the edited arguments of {name!r}")
    checked = {"type": "edit", "edited_action": {"name": name, "args": args}}
    if "decisionSchema" in item:
        try:
            validate_against_schema(checked, item["decisionSchema"], what="the decision")
        except ValidationError as exc:
            raise invalid(exc.message, path) from exc
    return checked


def _summarize(decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """The plainest OpenWOP value that says the same: accept, reject, else per-item edit-accept."""
    if all(d["type"] == "approve" for d in decisions):
        return {"action": "accept"}
    messages = {d.get("message") for d in decisions}
    if all(d["type"] == "reject" for d in decisions) and len(messages) == 1:
        (message,) = messages
        return {"action": "reject", "feedback": message} if message else {"action": "reject"}
    return {"action": "edit-accept", "editedArtifactData": {"decisions": decisions}}


def _respelled(decision: dict[str, Any], spelling: str) -> dict[str, Any]:
    if decision.get("type") != "edit" or spelling == "args":
        return decision
    action = decision["edited_action"]
    return {**decision, "edited_action": {"name": action["name"], spelling: action["args"]}}


def _type_consts(schema: Any) -> set[str]:
    """The decision types a per-call ``response_schema`` admits (every ``type`` const in it)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        prop = (schema.get("properties") or {}).get("type")
        if isinstance(prop, dict):
            if isinstance(prop.get("const"), str):
                found.add(prop["const"])
            found.update(v for v in prop.get("enum") or () if isinstance(v, str))
        for sub in schema.values():
            found |= _type_consts(sub)
    elif isinstance(schema, list):
        for sub in schema:
            found |= _type_consts(sub)
    return found & set(_DECISIONS)


def _usage(per_call: bool) -> str:
    if per_call:
        return "send one decision {type: ...} or an approval resume {action: ...}"
    return "send {decisions: [...]} or an approval resume {action: ...}"
