"""The reviewer page in a real headless Chromium with JavaScript off, against a real server process.

Each test drives one page state as a reviewer would (fill in, click) and checks both what the page
says and what the run received (the ``interrupt.resolved`` event). Every state is screenshotted
into the test's temporary folder, and also into ``$WOP_SCREENS_DIR`` when that is set, for a
person to look at.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from tests.browser import chromium
from tests.server.conftest import ALICE, READER
from tests.server.process import served
from tests.server.review_graphs import CONNECT_URL, EMAIL_ARGS, OBJECT_ARTIFACT, TEXT_ARTIFACT, TOOL_NODE
from wop_langgraph.protocol.ids import project_id

pytestmark = pytest.mark.slow

WAIT_SECONDS = 30.0
WAITING = ("waiting-approval", "waiting-input", "waiting-external")
# Words of a developer message that must never reach a reviewer.
DEVELOPER_WORDS = re.compile(r"Traceback|\bmac\b|base64|kid|ow2\.|interrupt_token_invalid|43 characters")


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("reviewer") / "wop.db"
    target = "tests.server.review_graphs:WORKFLOWS"
    with served(f"sqlite:///{db}", target=target, extra_args=["--credentials", "--conversations"]) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    # JavaScript off: the page must work as plain HTML forms.
    context = browser.new_context(java_script_enabled=False, viewport={"width": 900, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def shoot(tmp_path: Path) -> Callable[[Page, str], None]:
    """Screenshot the whole page as ``<name>.png`` (and copy it to ``$WOP_SCREENS_DIR``)."""
    extra = os.environ.get("WOP_SCREENS_DIR")

    def take(page: Page, name: str) -> None:
        path = tmp_path / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(extra) / path.name)

    return take


def start(base: str, workflow: str) -> str:
    """Create a run and wait (bounded) until it is suspended at its question."""
    created = httpx.post(f"{base}/runs", json={"workflowId": workflow}, headers=ALICE, timeout=60)
    assert created.status_code == 201, created.text
    run_id = str(created.json()["runId"])
    wait_for(base, run_id, WAITING)
    return run_id


def snapshot(base: str, run_id: str) -> dict[str, Any]:
    response = httpx.get(f"{base}/runs/{project_id(run_id)}", headers=READER, timeout=30)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def wait_for(base: str, run_id: str, statuses: tuple[str, ...]) -> dict[str, Any]:
    """Poll the snapshot until its status is one of ``statuses`` (the engine may answer at commit)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        snap = snapshot(base, run_id)
        if snap["status"] in statuses:
            return snap
        assert time.monotonic() < deadline, f"run stayed {snap['status']}, expected one of {statuses}"
        time.sleep(0.1)


def resolved(base: str, run_id: str) -> dict[str, Any]:
    """The payload of the run's ``interrupt.resolved`` event, waiting (bounded) for it."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        response = httpx.get(
            f"{base}/runs/{project_id(run_id)}/events/poll", params={"timeout": 1}, headers=READER, timeout=30
        )
        events = [e for e in response.json()["events"] if e["type"] == "interrupt.resolved"]
        if events:
            payload: dict[str, Any] = events[0]["payload"]
            return payload
        assert time.monotonic() < deadline, "no interrupt.resolved event"
        time.sleep(0.1)


def link(base: str, run_id: str, node: str = "ask", **body: object) -> str:
    response = httpx.post(
        f"{base}/runs/{project_id(run_id)}/interrupts/{node}/tokens", json=body, headers=ALICE, timeout=30
    )
    assert response.status_code == 201, response.text
    return str(response.json()["url"])


def meta(page: Page, label: str) -> str:
    """The value the page shows beside ``label`` in its "who asked" list."""
    return str(
        page.locator(f"xpath=//dl[@class='meta']/dt[.='{label}']/following-sibling::dd[1]").inner_text()
    )


def action_form(page: Page, action: str) -> Any:
    """The form of one approval action (each action has its own form)."""
    return page.locator(f"form:has(input[name=action][value='{action}'])")


def error_beside(page: Page, form: Any, field: str) -> str:
    """The error message shown for ``field`` in ``form``; the field is marked invalid."""
    control = form.locator(f"[name='{field}']").first
    assert control.get_attribute("aria-invalid") == "true"
    return str(form.locator(f"[id='error-{field}']").inner_text())


def test_text_approval_shows_who_asked_and_every_action(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "text-review")
    page.goto(link(base_url, run_id))
    body = page.inner_text("body")
    shoot(page, "01-approval-text")
    # Escaped title, who asked, when the link expires (readable UTC, a 30-minute default).
    assert page.inner_text("h1") == "Publish the <em>release</em> note?"
    assert (meta(page, "Workflow"), meta(page, "Step"), meta(page, "Run")) == ("text-review", "ask", run_id)
    assert re.fullmatch(
        r"\w{3} \d{1,2} \w{3} \d{4}, \d\d:\d\d UTC \(in (29|30) minutes\)", meta(page, "This link expires")
    )
    assert "It goes to every customer." in body
    # The text artifact shows as text (its markup as characters), not as JSON or HTML.
    assert page.inner_text(".text") == TEXT_ARTIFACT
    assert page.locator("script, em, b, img").count() == 0
    # One form per action, each with its one-line explanation.
    for action, words in [
        ("accept", "the run continues"),
        ("edit-accept", "continues with your edits"),
        ("refine", "send it back with what to change"),
        ("ask", "the request stays open"),
        ("reject", "this step fails"),
    ]:
        assert words in action_form(page, action).locator(".explain").inner_text().lower(), action
    # The edit-accept editor is a text area holding the artifact's text.
    assert action_form(page, "edit-accept").locator("textarea[name=edited]").input_value() == TEXT_ARTIFACT


def test_refine_refuses_empty_feedback_then_records_it(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "text-review")
    url = link(base_url, run_id)
    page.goto(url)
    form = action_form(page, "refine")
    form.locator("select[name=scope]").select_option("section")
    form.locator("input[name=sectionPath]").fill("/intro")
    form.locator("button").click()
    shoot(page, "02-refine-empty-refused")
    form = action_form(page, "refine")
    assert "Say what should change" in error_beside(page, form, "text")
    # The form is shown again as the reviewer left it; nothing was recorded.
    assert form.locator("select[name=scope]").input_value() == "section"
    assert form.locator("input[name=sectionPath]").input_value() == "/intro"
    assert snapshot(base_url, run_id)["status"] == "waiting-approval"

    form.locator("textarea[name=text]").fill("Shorter, <please>.")
    form.locator("button").click()
    assert page.inner_text(".outcome") == "Decision recorded: Sent back for changes"
    shoot(page, "03-refine-recorded")
    event = resolved(base_url, run_id)
    assert event["action"] == "refine"
    assert event["refineFeedback"] == {
        "scope": "section",
        "sectionPath": "/intro",
        "text": "Shorter, <please>.",
    }


def test_ask_keeps_the_request_open_then_edit_accept_records_the_edit(
    base_url: str, page: Page, shoot: Any
) -> None:
    run_id = start(base_url, "text-review")
    url = link(base_url, run_id)
    page.goto(url)
    action_form(page, "ask").locator("button").click()
    assert "Type your question" in error_beside(page, action_form(page, "ask"), "feedback")
    action_form(page, "ask").locator("textarea[name=feedback]").fill("Who wrote this?")
    action_form(page, "ask").locator("button").click()
    assert page.inner_text("h1") == "Your question was received"
    shoot(page, "04-ask-received")
    assert snapshot(base_url, run_id)["status"] == "waiting-approval"

    page.click("text=Back to the request")
    edited = "Dear customers,\nversion 2 is out today.\n"
    action_form(page, "edit-accept").locator("textarea[name=edited]").fill(edited)
    action_form(page, "edit-accept").locator("button").click()
    assert page.inner_text(".outcome") == "Decision recorded: Accepted with your edits"
    shoot(page, "05-edit-accept-recorded")
    event = resolved(base_url, run_id)
    assert event["action"] == "edit-accept" and event["editedArtifactData"] == edited
    wait_for(base_url, run_id, ("completed",))

    page.goto(url)  # the used link says what was decided
    assert page.inner_text("h1") == "This request was already answered"
    assert "Accepted with your edits" in page.inner_text(".outcome")
    shoot(page, "06-used-link")


def test_object_artifact_edits_member_by_member(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "object-review")
    page.goto(link(base_url, run_id))
    assert "<img src=x onerror=alert(1)>" in page.inner_text(".members") and page.locator("img").count() == 0
    form = action_form(page, "edit-accept")
    # Each member by its type: text, a JSON list, a checkbox; prefilled with the artifact.
    assert form.locator("input[type=text][name='edited.title']").input_value() == OBJECT_ARTIFACT["title"]
    assert json.loads(form.locator("textarea[name='edited.items']").input_value()) == [1, 2]
    assert form.locator("input[type=checkbox][name='edited.live']").is_checked()
    form.locator("input[name='edited.title']").fill("v2")
    form.locator("textarea[name='edited.items']").fill("[1, 2,]")
    form.locator("button").click()
    shoot(page, "07-edit-member-refused")
    form = action_form(page, "edit-accept")
    assert "“items”: this is not valid JSON" in error_beside(page, form, "edited.items")
    assert form.locator("textarea[name='edited.items']").input_value() == "[1, 2,]"
    assert snapshot(base_url, run_id)["status"] == "waiting-approval"

    form.locator("textarea[name='edited.items']").fill("[1, 2, 3]")
    form.locator("input[name='edited.live']").uncheck()
    form.locator("button").click()
    assert page.inner_text(".outcome") == "Decision recorded: Accepted with your edits"
    assert resolved(base_url, run_id)["editedArtifactData"] == {
        "title": "v2",
        "items": [1, 2, 3],
        "live": False,
    }


def test_reject_names_the_decision(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "object-review")
    page.goto(link(base_url, run_id))
    action_form(page, "reject").locator("textarea[name=feedback]").fill("Not now.")
    action_form(page, "reject").locator("button").click()
    assert page.inner_text(".outcome") == "Decision recorded: Rejected"
    shoot(page, "08-rejected")
    event = resolved(base_url, run_id)
    assert event["action"] == "reject" and event["resumeValue"]["feedback"] == "Not now."
    wait_for(base_url, run_id, ("failed",))


def test_a_vote_toward_a_quorum_says_it_was_counted(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "quorum-review")
    page.goto(link(base_url, run_id, approver="alice"))  # a gate that counts votes: a personal link
    assert "0 of 2 needed" in page.inner_text(".meta")
    action_form(page, "accept").locator("button").click()
    assert page.inner_text(".outcome") == "Your vote: Accepted"
    assert "Votes so far: 1." in page.inner_text("body")
    shoot(page, "09-vote-counted")
    assert snapshot(base_url, run_id)["status"] == "waiting-approval"


def test_clarification_inputs_follow_each_schema(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "questions")
    page.goto(link(base_url, run_id))
    shoot(page, "10-clarification")
    assert page.locator("input[type=radio][name='answer.colour']").count() == 3  # short enum: radios
    assert page.locator("select[name='answer.region'] option").count() == 8  # long enum: a select
    assert page.locator("input[type=checkbox][name='answer.urgent']").count() == 1
    count = page.locator("input[type=number][name='answer.count']")
    assert (count.get_attribute("step"), count.get_attribute("min"), count.get_attribute("max")) == (
        "1",
        "1",
        "10",
    )
    assert page.locator("input[type=number][name='answer.budget']").get_attribute("step") == "any"
    assert page.locator("input[type=text][name='answer.name']").count() == 1
    assert "Who signs it? <i>Full name</i>" in page.inner_text("form") and page.locator("i").count() == 0

    # Refused: no colour, a count over the maximum (the host's schema check), a one-letter name.
    page.select_option("select[name='answer.region']", label="ap-south")
    page.check("input[name='answer.urgent']")
    page.fill("input[name='answer.count']", "11")
    page.fill("input[name='answer.budget']", "2.5")
    page.fill("input[name='answer.name']", "<b>A</b>")
    page.click("button[type=submit]")
    shoot(page, "11-clarification-refused")
    assert "“Which colour?”: choose red, green or blue." in page.inner_text("fieldset")
    assert page.locator("select[name='answer.region']").input_value() == "4"  # kept as chosen
    assert page.is_checked("input[name='answer.urgent']")
    assert page.input_value("input[name='answer.name']") == "<b>A</b>" and page.locator("b").count() == 0
    page.check("input[name='answer.colour'] >> nth=2")
    page.click("button[type=submit]")
    count_error = page.inner_text("[id='error-answer.count']")
    assert count_error == "“How many copies?”: “11” is too large; enter a whole number from 1 to 10."
    assert page.input_value("input[name='answer.budget']") == "2.5"
    page.fill("input[name='answer.count']", "3")
    page.click("button[type=submit]")
    assert page.inner_text("h1") == "Thank you: your answer was recorded"
    shown = page.inner_text(".answers")
    assert "Is it urgent?\nyes" in shown and "Who signs it? <i>Full name</i>\n<b>A</b>" in shown
    shoot(page, "12-clarification-recorded")
    answers = resolved(base_url, run_id)["resumeValue"]["answers"]
    assert answers == {
        "colour": "blue",
        "region": "ap-south",
        "urgent": True,
        "count": 3,
        "budget": 2.5,
        "name": "<b>A</b>",
    }


def test_raw_interrupt_takes_plain_text(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "raw")
    page.goto(link(base_url, run_id))
    shown = page.inner_text(".members")  # what the run says, member by member, escaped
    assert "note\nShip it? Answer <b>yes</b> or no." in shown and page.locator("b").count() == 0
    # Text by default; no "send as" jargon: JSON is a developer's option, folded away.
    assert "Send as" not in page.inner_text("body") and not page.is_visible("input[name='value.as']")
    shoot(page, "13-raw-interrupt")
    page.fill("textarea[name=value]", "yes")
    page.click("button[type=submit]")
    assert page.inner_text("h1") == "Thank you: your answer was recorded"
    assert resolved(base_url, run_id)["resumeValue"] == "yes"
    wait_for(base_url, run_id, ("completed",))


def test_raw_interrupt_takes_json_when_asked_and_refuses_bad_json(
    base_url: str, page: Page, shoot: Any
) -> None:
    run_id = start(base_url, "raw")
    page.goto(link(base_url, run_id))
    page.click("details.more summary")  # opens without JavaScript
    page.check("input[name='value.as']")
    page.fill("textarea[name=value]", "{ships: true}")
    page.click("button[type=submit]")
    shoot(page, "14-raw-json-refused")
    assert "not valid JSON" in page.inner_text("[id='error-value']")
    assert page.input_value("textarea[name=value]") == "{ships: true}"
    assert page.is_checked("input[name='value.as']")
    page.fill("textarea[name=value]", '{"ships": true}')
    page.click("button[type=submit]")
    assert resolved(base_url, run_id)["resumeValue"] == {"ships": True}


def test_bad_links_say_what_happened_and_what_to_do(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "text-review")
    good = link(base_url, run_id)
    token = good.rsplit("/", 1)[1]
    cases = [
        ("15-invalid-link", good[:-5], "This link is not valid", "Ask the person who sent it for a new one"),
        ("16-garbage-link", f"{base_url}/interrupts/not-a-token", "This link is not valid", "new one"),
    ]
    short = link(base_url, run_id, ttlSeconds=1)
    time.sleep(1.5)
    cases.append(
        ("17-expired-link", short, "This link has expired", "Ask the person who sent it for a new one")
    )
    for name, url, title, advice in cases:
        response = page.goto(url)
        assert response is not None and response.status in (401, 410)
        text = page.inner_text("body")
        assert page.inner_text("h1") == title and advice in text
        assert not DEVELOPER_WORDS.search(text), text
        shoot(page, name)
    # The JSON surface keeps its envelope errors for clients that are not browsers.
    api = httpx.get(f"{base_url}/interrupts/{token[:-5]}", timeout=30)
    assert api.status_code == 401 and api.json()["error"] == "interrupt_token_invalid"

    viewer = link(base_url, run_id, intent="inspect")
    page.goto(viewer)
    assert "lets you view the request, not answer it" in page.inner_text(".note")
    assert page.locator("form").count() == 0
    shoot(page, "18-view-only-link")

    httpx.post(f"{base_url}/runs/{project_id(run_id)}/cancel", json={}, headers=ALICE, timeout=30)
    wait_for(base_url, run_id, ("cancelled",))
    response = page.goto(good)
    assert response is not None and response.status == 409
    assert page.inner_text("h1") == "This request was withdrawn"
    shoot(page, "19-withdrawn")


def test_the_example_review_publishes_the_reviewers_edit(
    tmp_path: Path, page: Page, shoot: Callable[[Page, str], None]
) -> None:
    # The graph the README serves (`wop_langgraph.examples.review:workflows`), edited in the page.
    with served(
        f"sqlite:///{tmp_path / 'example.db'}", target="wop_langgraph.examples.review:workflows"
    ) as base:
        created = httpx.post(
            f"{base}/runs",
            json={"workflowId": "announcement-review", "inputs": {"topic": "v1"}},
            headers=ALICE,
        )
        run_id = str(created.json()["runId"])
        wait_for(base, run_id, WAITING)
        minted = httpx.post(
            f"{base}/runs/{project_id(run_id)}/interrupts/review/tokens", json={}, headers=ALICE
        )
        page.goto(str(minted.json()["url"]))
        assert page.inner_text(".text") == "We are happy to announce v1."
        shoot(page, "20-example-review")
        page.fill("#answer-edit-accept textarea[name=edited]", "We are happy to announce v1, today.")
        page.click("#answer-edit-accept button")
        assert page.inner_text(".outcome") == "Decision recorded: Accepted with your edits"
        wait_for(base, run_id, ("completed",))
        events = httpx.get(
            f"{base}/runs/{project_id(run_id)}/events/poll", params={"timeout": 1}, headers=READER
        )
        completed = [e for e in events.json()["events"] if e["type"] == "run.completed"]
        assert completed[0]["payload"]["outputs"]["published"] == "We are happy to announce v1, today."


def test_low_confidence_keeps_or_replaces_in_words(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "low-confidence")
    page.goto(link(base_url, run_id))
    facts = page.inner_text(".facts")
    assert "refund-agent" in facts and "0.42 (42%)" in facts and "0.7 (70%)" in facts
    shoot(page, "21-low-confidence")
    # A reviewer types words, not JSON; the replacement starts from the agent's decision.
    replace = page.locator("#answer-replace")
    assert replace.locator("input[name=decision]").input_value() == "refund"
    replace.locator("input[name=decision]").fill("yes, refund is fine")
    replace.locator("button").click()
    assert "You replaced the agent's decision with:" in page.inner_text(".outcome")
    shoot(page, "22-low-confidence-replaced")
    assert resolved(base_url, run_id)["resumeValue"] == {"decision": "yes, refund is fine"}


def test_low_confidence_object_decision_refuses_beside_the_member(
    base_url: str, page: Page, shoot: Any
) -> None:
    run_id = start(base_url, "low-confidence-object")
    page.goto(link(base_url, run_id))
    shoot(page, "23-low-confidence-object")
    replace = page.locator("#answer-replace")
    replace.locator("input[name='decision.amountEuros']").fill("2.5")
    replace.locator("button").click()
    shoot(page, "24-low-confidence-object-refused")
    replace = page.locator("#answer-replace")
    said = error_beside(page, replace, "decision.amountEuros")
    assert said == "“amountEuros”: “2.5” is not a whole number; enter digits only, like 3."
    page.locator("#answer-keep button").click()
    assert page.inner_text(".outcome") == "You kept the agent's decision."
    assert resolved(base_url, run_id)["resumeValue"] == {"ratify": True}


def test_external_event_says_what_is_awaited_without_a_form(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "event")
    page.goto(link(base_url, run_id))
    shoot(page, "25-external-event")
    assert "payment.settled" in page.inner_text(".lead")
    assert "orderId\nA-1001" in page.inner_text(".members") and "customer\nacme" in page.inner_text(
        ".members"
    )
    assert page.locator("form").count() == 0 and "arrives on its own" in page.inner_text(".note")


def test_credential_links_to_connect_and_records_the_outcome(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "credential")
    page.goto(link(base_url, run_id))
    shoot(page, "26-credential")
    assert page.inner_text("h1") == "Please connect your GitHub account"
    assert page.get_attribute("a.connect", "href") == CONNECT_URL
    assert page.get_attribute("a.connect", "rel") == "noopener noreferrer"
    page.locator("#answer-authorized button").click()
    assert page.inner_text(".outcome") == "You said you connected the account."
    shoot(page, "27-credential-recorded")
    assert resolved(base_url, run_id)["resumeValue"] == {"outcome": "authorized"}


def test_conversation_turn_asks_with_its_schema(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "conversation")
    page.goto(link(base_url, run_id))
    assert page.inner_text(".text") == "Thanks for choosing us!\nWhich plan, and how many seats?"
    page.check("input[name='value.plan'] >> nth=1")
    page.fill("input[name='value.seats']", "80")
    page.click("button[type=submit]")
    shoot(page, "28-conversation-refused")
    said = page.inner_text("[id='error-value.seats']")
    assert said == "“Seats”: “80” is too large; enter a whole number from 1 to 50."
    assert page.is_checked("input[name='value.plan'] >> nth=1")
    page.fill("input[name='value.seats']", "3")
    page.click("button[type=submit]")
    assert page.inner_text("h1") == "Thank you: your answer was recorded"
    assert resolved(base_url, run_id)["resumeValue"] == {"plan": "pro", "seats": 3}


def test_schema_formats_give_their_inputs(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "survey")
    page.goto(link(base_url, run_id))
    shoot(page, "29-survey-formats")
    assert page.get_attribute("input[name='value.email']", "type") == "email"
    assert page.get_attribute("input[name='value.day']", "type") == "date"
    assert page.is_checked("input[name='value.priority'][value='1']")  # the default, "high"
    page.fill("input[name='value.email']", "nobody")
    page.fill("input[name='value.day']", "2026-12-24")
    page.fill("input[name='value.code']", "B-1")
    page.click("button[type=submit]")
    shoot(page, "30-survey-refused")
    assert page.inner_text("[id='error-value.code']") == (
        "“Order code”: “B-1” is not accepted; enter text in the form A-1234."
    )
    assert page.input_value("input[name='value.day']") == "2026-12-24"
    page.fill("input[name='value.email']", "me@example.com")
    page.fill("input[name='value.code']", "A-1234")
    page.click("button[type=submit]")
    value = resolved(base_url, run_id)["resumeValue"]
    assert value == {"email": "me@example.com", "day": "2026-12-24", "priority": "high", "code": "A-1234"}


def test_agent_inbox_gate_speaks_its_actions(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "inbox")
    page.goto(link(base_url, run_id))
    shoot(page, "31-agent-inbox")
    buttons = page.locator("button").all_inner_texts()
    assert buttons == ["Accept", "Run with my edits", "Respond instead", "Ignore"]
    assert "the run does not fail" in action_form(page, "reject").inner_text()
    assert "this step fails" not in page.inner_text("body")
    body = action_form(page, "edit-accept").locator("textarea[name='edited.body']").input_value()
    assert body == EMAIL_ARGS["body"]  # its own line breaks, not "\n"
    action_form(page, "reject").locator("button").click()
    assert page.inner_text(".outcome") == "Decision recorded: Ignored"
    assert "the agent goes on without it" in page.inner_text("body")
    shoot(page, "32-agent-inbox-ignored")
    wait_for(base_url, run_id, ("completed",))


def test_middleware_batch_is_decided_row_by_row(base_url: str, page: Page, shoot: Any) -> None:
    run_id = start(base_url, "tool-calls")
    page.goto(link(base_url, run_id, node=TOOL_NODE))
    shoot(page, "33-tool-calls")
    rows = page.locator("fieldset.item")
    assert rows.count() == 2
    assert "\\n" not in page.inner_text("body") and "{'" not in page.inner_text("body")
    subject = rows.nth(0).locator("textarea[name='item.0.args.subject']").input_value()
    assert subject == "Release 1.0\nis out"
    rows.nth(0).get_by_label("Approve: run it as shown").check()
    page.click("button[type=submit]")
    shoot(page, "34-tool-calls-refused")
    assert page.inner_text("[id='error-item.1.decision']") == "Choose a decision for this tool call."
    page.locator("fieldset.item").nth(1).get_by_label("Reject", exact=False).first.check()
    page.fill("textarea[name='item.1.message']", "Keep the log.")
    page.click("button[type=submit]")
    assert page.inner_text("h1") == "Thank you: your decisions were recorded"
    assert "rejected: Keep the log." in page.inner_text(".answers")
    shoot(page, "35-tool-calls-recorded")
    decisions = resolved(base_url, run_id)["resumeValue"]["editedArtifactData"]["decisions"]
    assert decisions == [{"type": "approve"}, {"type": "reject", "message": "Keep the log."}]
    wait_for(base_url, run_id, ("completed",))
