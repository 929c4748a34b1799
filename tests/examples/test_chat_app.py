"""The terminal chat app, end to end against a real server process (``serve --conversations``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
from openwop_client import OpenwopClient

from tests.server.process import served
from wop_langgraph.examples.chat import QUESTIONS
from wop_langgraph.examples.chat_app import (
    ChatApp,
    expected,
    explain_refusal,
    main,
    parse_answer,
    status_words,
)

TARGET = "wop_langgraph.examples.chat_app:WORKFLOWS"
GOOD = [{"orderId": "A-1042"}, {"problem": "late"}, {"remedy": "replacement"}]


@pytest.fixture
def base_url(db_url: str) -> Iterator[str]:
    with served(db_url, target=TARGET, extra_args=["--conversations"]) as base:
        yield base


def test_parse_answer() -> None:
    schema = QUESTIONS[1].outcome_schema
    assert parse_answer(" late ", schema) == {"problem": "late"}
    assert parse_answer('{"problem": "other", "details": "x"}', schema) == {
        "problem": "other",
        "details": "x",
    }
    with pytest.raises(ValueError, match="JSON"):
        parse_answer("{nope", schema)
    with pytest.raises(ValueError, match="JSON object"):
        parse_answer("late", {"type": "object", "required": ["a", "b"]})


def test_questions_and_refusals_are_worded_from_the_schema() -> None:
    order, problem, remedy = (q.outcome_schema for q in QUESTIONS)
    assert expected(order) == "The id on your receipt: answer with text in the form A-1042."
    assert expected(remedy) == "Answer with one of refund or replacement."
    assert expected({"type": "object", "required": ["a", "b"]}) is None  # needs JSON: nothing to say
    assert (
        expected({"type": "object", "required": ["note"], "properties": {"note": {"type": "string"}}}) is None
    )
    # Named by the title, or by the property's name in words when there is none.
    untitled = {"type": "object", "required": ["orderId"], "properties": {"orderId": {"enum": ["x"]}}}
    assert explain_refusal({"path": "/orderId", "rule": "enum"}, {"orderId": "y"}, untitled) == (
        "“Order id”: “y” is not accepted; enter one of x."
    )
    too_long = {"problem": "late", "details": "x" * 501}
    assert explain_refusal({"path": "/details", "rule": "maxLength"}, too_long, problem).startswith(
        "“Details”: “xxx"
    )
    assert "too long; enter text of at most 500 characters." in explain_refusal(
        {"path": "/details", "rule": "maxLength"}, too_long, problem
    )
    assert explain_refusal({"path": "", "rule": "required"}, {"details": "x"}, problem) == (
        "“Problem” is missing: please give one of damaged, late, wrong-item or other."
    )
    assert "does not ask for" in explain_refusal(
        {"path": "", "rule": "additionalProperties"}, {"remedy": "refund", "extra": 1}, remedy
    )
    assert (
        explain_refusal(None, {"orderId": "A-7"}, order) == "That answer is not accepted (no reason given)."
    )
    assert status_words("waiting-approval") == status_words("waiting-input") == "waiting for your answer"
    assert status_words("failed") == "stopped by an error"


@pytest.mark.slow
def test_a_scripted_conversation_with_refused_answers(base_url: str) -> None:
    client = OpenwopClient(base_url, "alice-key")
    # turns 0 and 1 each get a bad answer first ("A-7" breaks the pattern, "broken" is not in the
    # enum), then a good plain-text one; the last turn uses JSON
    answers = iter(["A-7", "A-1042", "broken", "late", '{"remedy": "replacement"}'])
    prompts: list[str] = []
    said: list[str] = []
    sequences: list[int] = []  # the log's last sequence each time the app asks

    def ask(prompt: str) -> str:
        assert app.run_id is not None
        sequences.append(client.runs_poll_events(app.run_id, timeout_seconds=0).lastSequence)
        prompts.append(prompt)
        return next(answers)

    app = ChatApp(client, ask=ask, say=said.append, poll_timeout=5)
    outputs = app.run()

    assert outputs is not None
    assert outputs["summary"] == "order A-1042: late; customer wants a replacement"
    assert outputs["answers"] == {"order": GOOD[0], "problem": GOOD[1], "remedy": GOOD[2]}
    assert [p.splitlines()[0] for p in prompts] == [
        QUESTIONS[0].prompt,
        QUESTIONS[0].prompt,  # re-asked after the refusal
        QUESTIONS[1].prompt,
        QUESTIONS[1].prompt,
        QUESTIONS[2].prompt,
    ]
    # What each question takes is said before any wrong answer, from the schema.
    assert "(The id on your receipt: answer with text in the form A-1042.)" in prompts[0]
    assert "(Answer with one of damaged, late, wrong-item or other.)" in prompts[2]
    assert "(Answer with one of refund or replacement.)" in prompts[4]
    refusals = [line for line in said if line.startswith("! ")]
    assert refusals == [
        "! “Order id”: “A-7” is not accepted; enter text in the form A-1042.",
        "! “Problem”: “broken” is not accepted; enter one of damaged, late, wrong-item or other.",
    ]
    for line in said + prompts:  # no schema jargon reaches the person
        assert not any(
            word in line for word in ("outcomeSchema", "resumeValue", "^A-", "/orderId", "/problem")
        )
    assert sequences[0] == sequences[1] and sequences[2] == sequences[3]  # refusals appended nothing
    assert any("Thanks! order A-1042" in line for line in said)

    assert app.run_id is not None
    assert client.runs_get(app.run_id).status == "completed"
    page = client.runs_poll_events(app.run_id, timeout_seconds=0)
    assert page.isTerminal and page.status == "completed"
    events = page.events
    assert [e.sequence for e in events] == list(range(len(events)))
    types = [e.type for e in events]
    assert types.count("conversation.opened") == 1
    assert types.count("conversation.closed") == 1
    exchanged: list[dict[str, Any]] = [e.payload for e in events if e.type == "conversation.exchanged"]
    assert [p["outcome"] for p in exchanged] == GOOD
    turns = [p["turnIndex"] for p in exchanged]
    assert len(turns) == 3 and all(a < b for a, b in pairwise(turns))
    # the refused answer left no trace: three requests, three resolutions, all with good values
    assert types.count("interrupt.requested") == 3
    resolved = [e.payload["resumeValue"] for e in events if e.type == "interrupt.resolved"]
    assert resolved == GOOD
    closed = next(e.payload for e in events if e.type == "conversation.closed")
    assert (closed["reason"], closed["turnCount"]) == ("completed", 3)
    assert types[-1] == "run.completed"


@pytest.mark.slow
def test_main_stops_on_end_of_input(
    base_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def eof(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", eof)
    assert main(["--server", base_url, "--api-key", "alice-key"]) == 1
    assert "still waiting" in capsys.readouterr().out


@pytest.mark.slow
def test_run_continues_a_waiting_conversation(
    base_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    typed = iter(["A-1042"])

    def first_answer_then_stop(prompt: str) -> str:
        try:
            return next(typed)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", first_answer_then_stop)
    assert main(["--server", base_url, "--api-key", "alice-key"]) == 1
    out = capsys.readouterr().out
    (run_id,) = re.findall(r"continue it with --run (\S+)\]", out)
    client = OpenwopClient(base_url, "alice-key")
    # On the wire a waiting conversation turn is waiting-approval (OpenWOP's status table maps
    # conversation.* interrupts there); the person reads words, never the raw status.
    assert client.runs_get(run_id).status == "waiting-approval"
    assert "waiting-approval" not in out

    prompts: list[str] = []
    rest = iter(["late", "refund"])

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return next(rest)

    monkeypatch.setattr("builtins.input", answer)
    assert main(["--server", base_url, "--api-key", "alice-key", "--run", run_id]) == 0
    out = capsys.readouterr().out
    assert f"[continuing run {run_id}: waiting for your answer]" in out
    assert "waiting-approval" not in out
    # It picks up at the turn that waits: the order is not asked again.
    assert [p.splitlines()[0] for p in prompts] == [QUESTIONS[1].prompt, QUESTIONS[2].prompt]
    assert "Thanks! order A-1042: late; customer wants a refund" in out
    assert client.runs_get(run_id).status == "completed"
