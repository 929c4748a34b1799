"""The reviewer page of a ``HumanInTheLoopMiddleware`` gate: one row per tool call (forms in, values out)."""

from __future__ import annotations

from typing import Any

import pytest

from wop_langgraph.adapters import normalize_resume, payload_for
from wop_langgraph.kinds import page_for
from wop_langgraph.kinds.review.fields import FormRefused

SCHEMA = {
    "type": "object",
    "properties": {"to": {"title": "Recipient", "type": "string", "format": "email"}},
    "required": ["to"],
}
REQUEST = {
    "action_requests": [
        {"name": "send_email", "args": {"to": "ops@example.com"}, "description": "Mail ops?"},
        {"name": "delete_file", "args": {"path": "/tmp/a"}},
    ],
    "review_configs": [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit"], "args_schema": SCHEMA},
        {"action_name": "delete_file", "allowed_decisions": ["approve", "reject", "respond"]},
    ],
}


def _form(**fields: str) -> dict[str, list[str]]:
    return {k.replace("_", "."): [v] for k, v in fields.items()}


def _refused(payload: dict[str, Any], form: dict[str, list[str]]) -> dict[str, str]:
    with pytest.raises(FormRefused) as caught:
        page_for(payload).value(payload, form)
    return caught.value.errors


def test_each_call_gets_only_its_allowed_decisions_and_the_fields_they_use() -> None:
    html = page_for(payload_for(REQUEST)).forms("/post", payload_for(REQUEST), None, {})
    assert html.count('name="item.0.decision"') == 2 and html.count('name="item.1.decision"') == 3
    # An edit-allowed call's arguments are a form (titled by its args_schema); others are shown.
    assert '<span class="label">Recipient</span><input type="email" name="item.0.args.to"' in html
    assert 'value="ops@example.com"' in html and 'name="item.0.message"' not in html
    assert 'name="item.1.message"' in html and 'name="item.1.args' not in html
    assert '<dt>path</dt><dd><span class="text-inline">/tmp/a</span></dd>' in html
    assert "Mail ops?" in html and html.count("<button") == 1


def test_the_form_makes_one_middleware_decision_per_call_which_the_adapter_accepts() -> None:
    payload = payload_for(REQUEST)
    form = _form(
        item_0_decision="1", item_0_args_to="team@example.com", item_1_decision="2", item_1_message="later"
    )
    value = page_for(payload).value(payload, form)
    decisions = [
        {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "team@example.com"}}},
        {"type": "respond", "message": "later"},
    ]
    assert value == {"decisions": decisions}
    assert normalize_resume(payload, value) == {"action": "edit-accept", "editedArtifactData": value}
    approved = page_for(payload).value(payload, _form(item_0_decision="0", item_1_decision="0"))
    assert normalize_resume(payload, approved) == {"action": "accept"}


def test_refusals_name_the_item_field() -> None:
    payload = payload_for(REQUEST)
    assert set(_refused(payload, _form(item_0_decision="0"))) == {"item.1.decision"}
    bad_email = _refused(payload, _form(item_0_decision="1", item_0_args_to="nobody", item_1_decision="0"))
    said = "“Recipient”: “nobody” is not accepted; enter an email address, like name@example.com."
    assert bad_email == {"item.0.args.to": said}
    assert set(_refused(payload, _form(item_0_decision="0", item_1_decision="2"))) == {"item.1.message"}
    path = "/resumeValue/editedArtifactData/decisions/0/edited_action/args"
    assert page_for(payload).field_for_path(payload, path) == "item.0.decision"
    assert page_for(payload).field_for_path(payload, "/resumeValue/decisions/1/message") == "item.1.message"


def test_a_per_call_gate_makes_one_decision() -> None:
    payload = payload_for({"type": "tool_approval", "name": "delete_file", "args": {"path": "/tmp/a"}})
    page = page_for(payload)
    html = page.forms("/post", payload, None, {})
    assert html.count('name="item.0.decision"') == 4 and "Send my decision<" in html
    value = page.value(payload, _form(item_0_decision="3", item_0_message="It is gone already."))
    assert value == {"type": "respond", "message": "It is gone already."}
    assert normalize_resume(payload, value)["action"] == "edit-accept"
