"""The terminal chat app, end to end against a real server process (``serve --conversations``)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
from openwop_client import OpenwopClient

from tests.server.process import served
from wop_langgraph.examples.chat import QUESTIONS
from wop_langgraph.examples.chat_app import ChatApp, main, parse_answer

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


@pytest.mark.slow
def test_a_scripted_conversation_with_one_refused_answer(base_url: str) -> None:
    client = OpenwopClient(base_url, "alice-key")
    # turn 1 gets a bad answer first ("broken" is not in the enum), then a good plain-text one;
    # the other turns use plain text and JSON
    answers = iter(["A-1042", "broken", "late", '{"remedy": "replacement"}'])
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
        QUESTIONS[1].prompt,
        QUESTIONS[1].prompt,  # re-asked after the refusal
        QUESTIONS[2].prompt,
    ]
    refusals = [line for line in said if line.startswith("! ")]
    assert len(refusals) == 1
    assert "outcomeSchema" in refusals[0] and "/problem" in refusals[0] and "broken" in refusals[0]
    assert sequences[1] == sequences[2]  # the refused answer appended nothing
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
