"""The reviewer page of every kind and adapter shape over HTTP, on every backend.

Each test opens a real run's page through a signed link, checks what the page offers, posts
the form a browser would send and checks what the run received (``interrupt.resolved``, the
run's outputs); a refused form names the field by its title, says what is allowed, and changes
nothing. The same pages in a real browser: ``test_reviewer_browser.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.server.conftest import ALICE, READER, assert_error, at_rest, make_settings, serving
from tests.server.review_graphs import CONNECT_URL, TOOL_NODE, WORKFLOWS
from wop_langgraph import ApprovalPolicy
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
HTML = {"Accept": "text/html"}
HOUR = timedelta(hours=1)


@pytest.fixture
def host(db_url: str) -> Iterator[WopHost]:
    host = WopHost.from_url(db_url, credentials=True, conversations=True)
    for workflow_id, graph in WORKFLOWS.items():
        host.register(workflow_id, graph)
    host.register("inbox-timeout", WORKFLOWS["inbox"], approvals={"ask": ApprovalPolicy(timeout=HOUR)})
    try:
        yield host
    finally:
        host.saver.close()


@pytest.fixture
async def client(host: WopHost, db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(create_app(host, make_settings(db_url))) as c:
        yield c


async def opened(client: httpx.AsyncClient, workflow: str, node: str = "ask") -> tuple[str, str, str]:
    """A waiting run of ``workflow``, a resolve link's token, and its page (HTML)."""
    created = await client.post("/runs", json={"workflowId": workflow}, headers=ALICE)
    assert created.status_code == 201, created.text
    run_id = str(created.json()["runId"])
    assert (await at_rest(client, run_id))["status"].startswith("waiting"), workflow
    minted = await client.post(f"/runs/{project_id(run_id)}/interrupts/{node}/tokens", json={}, headers=ALICE)
    token = str(minted.json()["token"])
    page = await client.get(f"/interrupts/{token}", headers=HTML)
    assert page.status_code == 200, page.text
    return run_id, token, page.text


async def send(client: httpx.AsyncClient, token: str, **fields: str) -> httpx.Response:
    """Post the form a browser sends (``item_0_decision`` stands for ``item.0.decision``)."""
    body = urlencode({k.replace("__", "-").replace("_", "."): v for k, v in fields.items()})
    return await client.post(f"/interrupts/{token}/form", content=body.encode(), headers=FORM)


async def events(client: httpx.AsyncClient, run_id: str, kind: str) -> list[dict[str, Any]]:
    response = await client.get(f"/runs/{project_id(run_id)}/events/poll?timeout=0", headers=READER)
    return [e["payload"] for e in response.json()["events"] if e["type"] == kind]


async def answer(client: httpx.AsyncClient, run_id: str) -> Any:
    """The run's stored answer once it completed."""
    snapshot = await at_rest(client, run_id)
    assert snapshot["status"] == "completed", snapshot
    (done,) = await events(client, run_id, "run.completed")
    return done["outputs"]["answer"]


async def unanswered(client: httpx.AsyncClient, run_id: str) -> None:
    assert (await at_rest(client, run_id))["status"].startswith("waiting")
    assert await events(client, run_id, "interrupt.resolved") == []


async def test_low_confidence_keeps_or_replaces_the_decision_in_words(client: httpx.AsyncClient) -> None:
    run_id, token, page = await opened(client, "low-confidence")
    assert "refund-agent" in page and "0.42 (42%)" in page and "0.7 (70%)" in page
    assert "Keep the agent&#x27;s decision" in page and "Replace it with mine" in page
    assert 'name="decision" value="refund"' in page  # the replacement starts from the agent's decision
    missing = await send(client, token)
    assert missing.status_code == 400 and "use one of the buttons below" in missing.text
    await unanswered(client, run_id)
    done = await send(client, token, choice="replace", decision="yes, a partial refund is fine")
    assert done.status_code == 200 and "You replaced the agent's decision" in done.text
    assert await answer(client, run_id) == "yes, a partial refund is fine"

    run_id, token, _ = await opened(client, "low-confidence")
    kept = await send(client, token, choice="keep", feedback="Looks right.")
    assert "You kept the agent's decision." in kept.text
    (resolved,) = await events(client, run_id, "interrupt.resolved")
    assert resolved["resumeValue"] == {"ratify": True, "feedback": "Looks right."}
    assert await answer(client, run_id) == "refund"


async def test_low_confidence_object_decision_is_edited_member_by_member(client: httpx.AsyncClient) -> None:
    run_id, token, page = await opened(client, "low-confidence-object")
    assert 'type="number" name="decision.amountEuros" step="1"' in page
    assert 'name="decision.notify" value="yes" checked' in page
    refused = await send(
        client, token, choice="replace", decision_action="refund", decision_amountEuros="forty"
    )
    assert refused.status_code == 400
    assert "“amountEuros”: “forty” is not a whole number" in refused.text
    assert 'value="forty"' in refused.text  # kept as typed
    await unanswered(client, run_id)
    await send(client, token, choice="replace", decision_action="refund", decision_amountEuros="25")
    assert await answer(client, run_id) == {"action": "refund", "amountEuros": 25, "notify": False}


async def test_an_external_event_page_says_what_is_awaited_and_offers_no_form(
    client: httpx.AsyncClient,
) -> None:
    run_id, token, page = await opened(client, "event")
    assert "payment.settled" in page and "orderId" in page and "A-1001" in page and "acme" in page
    assert "<form" not in page and "the event arrives on its own" in page
    forged = await send(client, token, value='{"amount": 12}')
    assert forged.status_code == 403
    await unanswered(client, run_id)


async def test_a_host_may_let_reviewers_deliver_the_event(host: WopHost, db_url: str) -> None:
    app = create_app(host, make_settings(db_url, review_event_form=True))
    async with serving(app) as client:
        run_id, token, page = await opened(client, "event")
        assert "Deliver the event" in page
        bad = await send(client, token, value="[1]")
        assert bad.status_code == 400 and "is not accepted; enter a JSON object" in bad.text
        await send(client, token, value='{"amount": 12, "orderId": "typed over"}')
        assert await answer(client, run_id) == {"amount": 12, "orderId": "A-1001", "customer": "acme"}


async def test_a_credential_page_links_to_connect_and_records_the_outcome(client: httpx.AsyncClient) -> None:
    run_id, token, page = await opened(client, "credential")
    assert 'href="https://github.example.com/login/oauth/authorize?client_id=wop&amp;state=abc"' in page
    assert CONNECT_URL.replace("&", "&amp;") in page and "<code>read:org</code>" in page
    assert "it is not connected yet" in page and "I connected it" in page and "I will not connect it" in page
    tampered = await send(client, token, outcome="stolen")
    assert tampered.status_code == 400 and "“I connected it” or “I will not connect it”" in tampered.text
    done = await send(client, token, outcome="authorized")
    assert "You said you connected the account." in done.text
    assert await answer(client, run_id) == "authorized"


async def test_a_conversation_turn_asks_with_its_outcome_schema(client: httpx.AsyncClient) -> None:
    run_id, token, page = await opened(client, "conversation")
    assert "Your turn in the conversation" in page and "Which plan, and how many seats?" in page
    assert "Pro includes support." in page and 'name="value.seats" step="1" min="1" max="50"' in page
    too_many = await send(client, token, value_plan="1", value_seats="80")
    assert too_many.status_code == 400
    assert "“Seats”: “80” is too large; enter a whole number from 1 to 50." in too_many.text
    await unanswered(client, run_id)
    await send(client, token, value_plan="1", value_seats="3")
    assert await answer(client, run_id) == {"plan": "pro", "seats": 3}


async def test_schema_titles_formats_and_defaults_shape_the_form(client: httpx.AsyncClient) -> None:
    run_id, token, page = await opened(client, "survey")
    assert "Where should we deliver?" in page
    assert '<span class="label">Your email</span><input type="email" name="value.email"' in page
    assert '<input type="date" name="value.day"' in page
    assert 'name="value.priority" value="1" checked> high' in page  # the schema's default
    refused = await send(client, token, value_email="nobody", value_code="B-1", value_priority="1")
    assert refused.status_code == 400
    assert "“Order code”: “B-1” is not accepted; enter text in the form A-1234." in refused.text
    await unanswered(client, run_id)
    await send(client, token, value_email="me@example.com", value_day="2026-12-24", value_code="A-1234")
    assert await answer(client, run_id) == {"email": "me@example.com", "day": "2026-12-24", "code": "A-1234"}


async def test_agent_inbox_speaks_its_own_actions_and_ignore_does_not_fail(client: httpx.AsyncClient) -> None:
    run_id, token, page = await opened(client, "inbox")
    for words in ("Run with my edits", "Respond instead", "Ignore", "the run does not fail"):
        assert words in page
    assert "this step fails" not in page and "Reject" not in page
    assert page.count("Send this email to ops@example.com?") == 2  # <title> and <h1>, not again below
    # The body is edited as text with its own line breaks, not as a JSON string.
    assert (
        '<textarea name="edited.body" rows="4">\nHello team,\nthe &lt;b&gt;release&lt;/b&gt; is out.' in page
    )
    wrong = await send(client, token, action="ask")
    assert wrong.status_code == 400
    assert "answered only with: Accept, Run with my edits, Respond instead, Ignore." in wrong.text
    ignored = await send(client, token, action="reject")
    assert "Decision recorded: <strong>Ignored</strong>" in ignored.text
    assert "the agent goes on without it" in ignored.text
    assert await answer(client, run_id) == {"type": "ignore", "args": None}

    run_id, token, _ = await opened(client, "inbox")
    await send(client, token, action="edit-accept", edited_to="all@example.com", edited_body="Hi\r\nall")
    edited = {"action": "send_email", "args": {"to": "all@example.com", "body": "Hi\nall"}}
    assert await answer(client, run_id) == {"type": "edit", "args": edited}

    run_id, token, _ = await opened(client, "inbox")
    empty = await send(client, token, action="refine", text=" ")
    assert empty.status_code == 400 and "Write your reply first." in empty.text
    await send(client, token, action="refine", text="Wait for the release notes.")
    assert await answer(client, run_id) == {"type": "response", "args": "Wait for the release notes."}


async def test_a_timed_out_agent_inbox_gate_says_it_was_ignored(
    client: httpx.AsyncClient, host: WopHost
) -> None:
    run_id, token, _ = await opened(client, "inbox-timeout")
    assert host.sweep(host.clock() + 2 * HOUR) == 1
    assert await answer(client, run_id) == {"type": "ignore", "args": None}
    page = await client.get(f"/interrupts/{token}", headers=HTML)
    assert page.status_code == 409 and "Timed out (ignored)" in page.text and "rejected" not in page.text


async def test_middleware_batch_approves_one_call_and_rejects_another(client: httpx.AsyncClient) -> None:
    run_id, token, page = await opened(client, "tool-calls", TOOL_NODE)
    assert page.count('<fieldset class="item"') == 2
    assert "Approve: run it as shown" in page and "Respond: do not run it" in page
    assert "Accept with my edits" not in page and "\\n" not in page  # no JSON escapes
    assert '<textarea name="item.0.args.subject" rows="4">\nRelease 1.0\nis out</textarea>' in page
    none = await send(client, token, item_0_decision="0")
    assert none.status_code == 400 and "Choose a decision for this tool call." in none.text
    await unanswered(client, run_id)
    done = await send(client, token, item_0_decision="0", item_1_decision="1", item_1_message="Keep the log.")
    assert done.status_code == 200 and "rejected: Keep the log." in done.text
    (resolved,) = await events(client, run_id, "interrupt.resolved")
    decisions = [{"type": "approve"}, {"type": "reject", "message": "Keep the log."}]
    assert resolved["resumeValue"]["editedArtifactData"] == {"decisions": decisions}
    snapshot = await at_rest(client, run_id)
    assert snapshot["status"] == "completed"


async def test_refine_of_a_text_artifact_takes_a_section_path(client: httpx.AsyncClient) -> None:
    run_id, token, page = await opened(client, "text-review")
    assert 'input type="text" name="sectionPath"' in page  # a text artifact: a path typed in
    await send(client, token, action="refine", scope="section", sectionPath="/intro", text="Shorter.")
    (resolved,) = await events(client, run_id, "interrupt.resolved")
    assert resolved["refineFeedback"] == {"scope": "section", "sectionPath": "/intro", "text": "Shorter."}


async def test_an_invalid_action_lists_only_what_the_gate_offers(client: httpx.AsyncClient) -> None:
    run_id, _, _ = await opened(client, "object-review")
    refused = await client.post(
        f"/runs/{project_id(run_id)}/interrupts/ask",
        json={"resumeValue": {"action": "approve"}},
        headers=ALICE,
    )
    body = assert_error(refused, 400, "validation_error")
    assert "allowed: accept, edit-accept, reject" in body["message"] and "refine" not in body["message"]
    assert body["details"]["allowed"] == ["accept", "edit-accept", "reject"]
