"""The chat-loop example: one exchange per graph step, outcome schemas, bad answers refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from wop_langgraph.examples.chat import QUESTIONS, WORKFLOW_ID, build_chat_graph, next_question
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.protocol.errors import ValidationError

CUSTOMER = Principal(tenant="acme", subject_id="customer-1", scopes=frozenset({"approvals:respond"}))
GOOD = [{"orderId": "A-1042"}, {"problem": "late"}, {"remedy": "replacement"}]


@pytest.fixture
def host(sqlite_url: str) -> Iterator[WopHost]:
    host = WopHost.from_url(sqlite_url, conversations=True)
    host.register(WORKFLOW_ID, build_chat_graph())
    try:
        yield host
    finally:
        host.saver.engine.dispose()


def _answer(host: WopHost, run_id: str, value: Any) -> dict[str, Any]:
    (pending,) = host.pending_interrupts(run_id)
    return host.resolve(run_id, pending.node_id, value, CUSTOMER)


def test_next_question_walks_the_script() -> None:
    assert next_question({}) == QUESTIONS[0]
    assert next_question({"order": {}}) == QUESTIONS[1]
    assert next_question({q.field: {} for q in QUESTIONS}) is None


def test_a_conversation_of_three_turns(host: WopHost) -> None:
    run_id = host.create_run(WORKFLOW_ID, {}, owner=CUSTOMER)["runId"]
    keys = []
    for turn, value in enumerate(GOOD):
        (pending,) = host.pending_interrupts(run_id)
        assert pending.kind == "conversation.exchange"
        assert pending.node_id == "chat_turn"
        data = pending.payload["data"]
        assert (data["turnIndex"], data["prompt"]) == (turn, QUESTIONS[turn].prompt)
        assert data["outcomeSchema"] == QUESTIONS[turn].outcome_schema
        keys.append(pending.key)
        assert host.snapshot(run_id)["status"] == "waiting-approval"
        _answer(host, run_id, value)
    assert len(set(keys)) == 3  # one execution per turn: a new key each time
    assert host.snapshot(run_id)["status"] == "completed"

    events = host.events(run_id)
    conversation = [e for e in events if e["type"].startswith("conversation.")]
    assert [e["type"] for e in conversation] == [
        "conversation.opened",
        "conversation.exchanged",
        "conversation.exchanged",
        "conversation.exchanged",
        "conversation.closed",
    ]
    ids = {e["payload"]["conversationId"] for e in conversation}
    assert len(ids) == 1
    exchanged = [e["payload"] for e in conversation[1:-1]]
    assert [(p["turnIndex"], p["outcome"]) for p in exchanged] == list(enumerate(GOOD))
    assert conversation[-1]["payload"] == {"conversationId": ids.pop(), "reason": "completed", "turnCount": 3}
    outputs = events[-1]["payload"]["outputs"]
    assert outputs["summary"] == "order A-1042: late; customer wants a replacement"
    assert outputs["answers"] == {"order": GOOD[0], "problem": GOOD[1], "remedy": GOOD[2]}


@pytest.mark.parametrize(
    ("bad", "path", "rule"),
    [
        ({"problem": "broken"}, "/problem", "enum"),
        ({}, "", "required"),
        ({"problem": "late", "details": 3}, "/details", "type"),
    ],
)
def test_a_bad_answer_is_refused_and_the_turn_stays_open(
    host: WopHost, bad: dict[str, Any], path: str, rule: str
) -> None:
    run_id = host.create_run(WORKFLOW_ID, {}, owner=CUSTOMER)["runId"]
    _answer(host, run_id, GOOD[0])
    (before,) = host.pending_interrupts(run_id)
    events_before = host.events(run_id)
    with pytest.raises(ValidationError) as refused:
        _answer(host, run_id, bad)
    assert refused.value.code == "validation_error" and refused.value.status == 400
    assert refused.value.details is not None
    assert (refused.value.details["path"], refused.value.details["rule"]) == (path, rule)
    assert host.events(run_id) == events_before  # nothing recorded
    (after,) = host.pending_interrupts(run_id)
    assert after.key == before.key
    _answer(host, run_id, GOOD[1])
    _answer(host, run_id, GOOD[2])
    assert host.snapshot(run_id)["status"] == "completed"


def test_without_conversations_enabled_the_run_fails(sqlite_url: str) -> None:
    host = WopHost.from_url(sqlite_url)
    try:
        host.register(WORKFLOW_ID, build_chat_graph())
        snapshot = host.create_run(WORKFLOW_ID, {}, owner=CUSTOMER)
        assert snapshot["status"] == "failed"
        assert snapshot["error"]["code"] == "capability_required"
    finally:
        host.saver.engine.dispose()
