"""An approval's page (forms in, values out): the artifact edited member by member, refine's sections."""

from __future__ import annotations

from typing import Any

import pytest

from wop_langgraph.kinds import page_for
from wop_langgraph.kinds.review.fields import FormRefused

PAYLOAD: dict[str, Any] = {
    "kind": "approval",
    "key": "k",
    "data": {
        "artifactId": "plan",
        "artifactType": "application/json",
        "title": "Approve the plan?",
        "actions": ["accept", "edit-accept", "refine", "ask", "reject"],
        "artifactData": {"title": "Q1", "budget": 1200.5, "steps": ["a", "b"], "a/b": True},
    },
}


def test_every_action_gets_its_form_in_the_page_order() -> None:
    html = page_for(PAYLOAD).forms("/post", PAYLOAD, None, {})
    order = [html.index(f'value="{a}"') for a in ("accept", "edit-accept", "refine", "ask", "reject")]
    assert order == sorted(order)
    # The artifact's members, each by its type, prefilled.
    assert 'type="text" name="edited.title" value="Q1"' in html
    assert 'type="number" name="edited.budget" step="any" value="1200.5"' in html
    assert '<textarea name="edited.steps" rows="5" class="code">' in html
    # Refine's section is a choice among the members (as JSON pointers).
    assert 'name="sectionPath" value="3"> a/b' in html


def test_values_of_the_forms() -> None:
    page = page_for(PAYLOAD)
    edit = {
        "action": ["edit-accept"],
        "edited.title": ["Q2"],
        "edited.budget": ["900"],
        "edited.steps": ['["a"]'],
    }
    assert page.value(PAYLOAD, edit) == {
        "action": "edit-accept",
        "editedArtifactData": {"title": "Q2", "budget": 900, "steps": ["a"], "a/b": False},
    }
    refine = {"action": ["refine"], "scope": ["section"], "sectionPath": ["3"], "text": ["Split it."]}
    assert page.value(PAYLOAD, refine)["refineFeedback"] == {
        "scope": "section",
        "sectionPath": "/a~1b",
        "text": "Split it.",
    }
    with pytest.raises(FormRefused) as caught:
        page.value(PAYLOAD, {"action": ["refine"], "scope": ["section"], "text": ["x"]})
    assert set(caught.value.errors) == {"sectionPath"}
    with pytest.raises(FormRefused) as caught:
        page.value(PAYLOAD, {"action": ["timeout"]})
    said = caught.value.errors[""]
    assert said.startswith("This request can be answered only with: Accept, Accept with my edits,")
