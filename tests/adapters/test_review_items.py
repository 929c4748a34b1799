"""The reviewer page's per-item form for ``HumanInTheLoopMiddleware`` approvals (forms in, values out)."""

from __future__ import annotations

from typing import Any

import pytest

from wop_langgraph.adapters import normalize_resume, payload_for
from wop_langgraph.server import review_forms
from wop_langgraph.server.review_fields import FormRefused

SCHEMA = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
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
    return {"action": ["edit-accept"], **{k.replace("_", "."): [v] for k, v in fields.items()}}


def _refused(payload: dict[str, Any], form: dict[str, list[str]]) -> dict[str, str]:
    with pytest.raises(FormRefused) as caught:
        review_forms.resume_value(payload, form)
    return caught.value.errors


def test_each_call_gets_only_its_allowed_decisions_and_the_fields_they_use() -> None:
    html = review_forms.forms("/post", payload_for(REQUEST))
    assert html.count('name="item.0.decision"') == 2 and html.count('name="item.1.decision"') == 3
    assert 'name="item.0.args"' in html and 'name="item.0.message"' not in html
    assert 'name="item.1.message"' in html and 'name="item.1.args"' not in html
    assert "Mail ops?" in html and "&quot;ops@example.com&quot;" in html


def test_the_form_makes_one_middleware_decision_per_call_which_the_adapter_accepts() -> None:
    payload = payload_for(REQUEST)
    form = _form(
        item_0_decision="1",
        item_0_args='{"to": "team@example.com"}',
        item_1_decision="2",
        item_1_message="later",
    )
    value = review_forms.resume_value(payload, form)
    decisions = [
        {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "team@example.com"}}},
        {"type": "respond", "message": "later"},
    ]
    assert value == {"action": "edit-accept", "editedArtifactData": {"decisions": decisions}}
    assert normalize_resume(payload, value) == value
    approved = review_forms.resume_value(payload, _form(item_0_decision="0", item_1_decision="0"))
    assert approved["editedArtifactData"]["decisions"] == [{"type": "approve"}, {"type": "approve"}]


def test_refusals_name_the_item_field() -> None:
    payload = payload_for(REQUEST)
    assert set(_refused(payload, _form(item_0_decision="0"))) == {"item.1.decision"}
    assert set(_refused(payload, _form(item_0_decision="1", item_0_args="{}", item_1_decision="0"))) == {
        "item.0.args"  # the call's args_schema requires "to"
    }
    assert set(_refused(payload, _form(item_0_decision="1", item_0_args="[1]", item_1_decision="0"))) == {
        "item.0.args"
    }
    assert set(_refused(payload, _form(item_0_decision="0", item_1_decision="2"))) == {"item.1.message"}
    path = "/resumeValue/editedArtifactData/decisions/0/edited_action/args"
    assert review_forms.field_for_path(payload, path) == "item.0.args"
