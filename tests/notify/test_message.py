"""What a delivered message says: a clarification's questions, long text shortened, an operator's templates.

Each message is rendered by the outbox for a real run on a real host and read back from the
SMTP server that accepted it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.notify.conftest import Clock, Smtp, body_html, body_text
from tests.notify.graphs import gate_graph, questions_graph
from tests.notify.test_outbox import OWNER, links_in, notifier, run
from tests.server.conftest import PUBLIC_URL, make_settings
from wop_langgraph.host import WopHost
from wop_langgraph.notify import NotifyPolicy
from wop_langgraph.server.notifying import notifier_from_settings
from wop_langgraph.tokens import verify


@pytest.fixture
def host(db_url: str, clock: Clock) -> Iterator[WopHost]:
    host = WopHost.from_url(db_url, clock=clock)
    try:
        yield host
    finally:
        host.saver.close()


def question(n: int, text: str | None = None) -> dict[str, Any]:
    return {"id": f"q{n}", "question": text or f"Question number {n}?", "schema": {"type": "string"}}


def test_a_clarification_lists_its_questions_shortened_and_capped(host: WopHost, smtp: Smtp) -> None:
    long_question = "Which of these regions should the <rollout> reach first " + "and then next " * 30 + "?"
    questions = [question(1), question(2, long_question)] + [question(n) for n in range(3, 13)]
    notes = notifier(smtp, host, NotifyPolicy(default_recipients={"clarify": ["bob"]}))
    host.register("clarify", questions_graph(questions, timeout=600))
    run_id = str(host.create_run("clarify", {}, owner=OWNER)["runId"])
    assert host.snapshot(run_id)["status"] == "waiting-input"
    assert notes.deliver_due() == 1
    (mail,) = smtp.mailbox.to("bob@example.test")
    assert mail["Subject"] == "[clarify] Your input is requested: Questions"
    text = body_text(mail).replace("\r\n", "\n")
    asked = text.split("What is asked:\n", 1)[1].split("\n\nWorkflow:", 1)[0].splitlines()
    assert len(asked) == 11  # ten questions, then how many more
    assert asked[0] == "- Question number 1?"
    assert asked[2:10] == [f"- Question number {n}?" for n in range(3, 11)]
    assert asked[10] == "(and 2 more)"
    assert "Question number 11?" not in text and "Question number 12?" not in text
    shortened = asked[1].removeprefix("- ")
    assert shortened.endswith("…") and len(shortened) <= 200
    assert long_question.startswith(shortened.removesuffix("…"))
    assert "&lt;rollout&gt;" in body_html(mail) and "<rollout>" not in body_html(mail)
    assert run_id in text and "Step: clarify" in text


def test_long_title_description_and_artifact_are_shortened(host: WopHost, smtp: Smtp) -> None:
    title = "Ship " + "the very long release name " * 12
    description = "The description " + " ".join(f"word{n}" for n in range(400)) + " END-OF-DESCRIPTION"
    artifact = {"changes": [f"change number {n}" for n in range(200)] + ["END-OF-ARTIFACT"]}
    notes = notifier(smtp, host)
    host.register(
        "long",
        gate_graph(title=title, description=description, artifact_data=artifact, approvers=["alice"]),
    )
    run_id = str(host.create_run("long", {}, owner=OWNER)["runId"])
    assert notes.deliver_due() == 1
    (mail,) = smtp.mailbox.to("alice@example.test")
    text = body_text(mail).replace("\r\n", "\n")
    lines = text.splitlines()
    # The title: cut to 200 characters at a word boundary, in the subject and the body.
    shown_title = lines[2]
    assert shown_title.endswith("…") and len(shown_title) <= 200
    assert title.startswith(shown_title.removesuffix("…")) and not shown_title.endswith(" …")
    assert mail["Subject"] == f"[long] Your input is requested: {shown_title}"
    # The description: cut to 600 characters at a word boundary.
    shown_description = lines[3]
    assert shown_description.endswith("…") and len(shown_description) <= 600
    assert description.startswith(shown_description.removesuffix("…"))
    assert "END-OF-DESCRIPTION" not in text
    # What is asked (the artifact): cut to 600 characters as a whole.
    asked = text.split("What is asked:\n", 1)[1].split("\n\nWorkflow:", 1)[0]
    assert asked.startswith("release release-7") and asked.endswith("…") and len(asked) <= 600
    assert "END-OF-ARTIFACT" not in text and "Choices:" not in asked  # the tail was cut
    assert "END-OF-DESCRIPTION" not in body_html(mail) and "END-OF-ARTIFACT" not in body_html(mail)
    assert run_id in text


def test_the_operators_templates_render_the_message(
    host: WopHost, smtp: Smtp, clock: Clock, tmp_path: Path
) -> None:
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "subject.txt").write_text("Decide by $deadline: $title ($workflow)\n", encoding="utf-8")
    (folder / "body.txt").write_text(
        "Hello $recipient,\n$heading.\n$asked\nAnswer: $link\nKept as written: $unknown\n", encoding="utf-8"
    )
    (folder / "body.html").write_text("<p>$description</p><p>$link_html</p>", encoding="utf-8")
    settings = make_settings(
        "sqlite://",
        notify_directory=json.dumps({"alice": {"email": "alice@example.test"}}),
        notify_smtp_host=smtp.host,
        notify_smtp_port=smtp.port,
        notify_templates=str(folder),
    )
    made = notifier_from_settings(settings)
    assert made is not None
    notes = made.attach(host)
    run(host, "custom", approvers=["alice"], timeout=3600)
    assert notes.deliver_due() == 1
    (mail,) = smtp.mailbox.to("alice@example.test")
    assert mail["Subject"] == "Decide by 2026-01-05T10:00:00.000Z: Ship release 7? (custom)"
    text = body_text(mail).replace("\r\n", "\n")
    assert PUBLIC_URL == "https://wop.example.test"  # the links the tests' LINK pattern finds
    (link,) = links_in(text)
    assert text == (
        "Hello alice,\n"
        "Your input is requested.\n"
        "release release-7\n"
        '{\n "changes": [\n  "login fix",\n  "faster search"\n ]\n}\n'
        "Choices: accept, reject\n"
        f"Answer: {PUBLIC_URL}/interrupts/{link}\n"
        "Kept as written: $unknown\n"
    )
    claims = verify(settings.keyring(), link, now=clock())
    assert claims.approver == "alice"
    html = body_html(mail)
    assert html.startswith("<p>Version 7 &lt;b&gt;fixes&lt;/b&gt; the login bug.</p><p><a href=")
    assert f"/interrupts/{link}" in html
