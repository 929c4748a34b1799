"""A reviewer's inbox link on a real served process, on each backend.

The page lists exactly what ``GET /interrupts`` would list for the link's approver (their
tenant only, approver lists applied, no second vote), each with a review link minted for them
that opens the request's page and votes as them. The inbox link itself answers nothing, and an
expired, forged or wrong-kind link gets a clear page.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.server.conftest import ACME_BOB, ALICE, BOB, SIGNING_KEYS, assert_error
from tests.server.process import poll_until, rested, served
from wop_langgraph.inbox_tokens import mint_inbox
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.tokens import SigningKeys, verify

pytestmark = pytest.mark.slow

KEYS = SigningKeys.parse(SIGNING_KEYS)
HTML = {"Accept": "text/html"}
REVIEW_LINK = re.compile(r'href="/interrupts/(ow2\.[A-Za-z0-9._~-]+)"')


def _create(client: httpx.Client, workflow_id: str, headers: dict[str, str]) -> str:
    response = client.post("/runs", json={"workflowId": workflow_id, "inputs": {}}, headers=headers)
    assert response.status_code == 201, response.text
    run_id = str(response.json()["runId"])
    with httpx.Client(base_url=str(client.base_url), headers=headers, timeout=30) as reader:
        rested(reader, run_id)
    return run_id


def _inbox_url(client: httpx.Client, headers: dict[str, str]) -> str:
    minted = client.post("/inbox-links", headers=headers)
    assert minted.status_code == 201, minted.text
    body = minted.json()
    assert body["url"] == f"{client.base_url}/inbox/{body['token']}"
    return str(body["url"])


def _listed(client: httpx.Client, url: str) -> list[tuple[str, str]]:
    """(run id, approver) of each review link on the inbox page, in page order."""
    page = client.get(url, headers=HTML)
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    found = []
    for token in REVIEW_LINK.findall(page.text):
        claims = verify(KEYS, token, now=datetime.now(UTC))
        assert claims.intent == "resolve"
        found.append((claims.run_id, str(claims.approver)))
    return found


def test_inbox_lists_what_the_approver_may_answer_with_their_own_links(db_url: str) -> None:
    with served(db_url) as base, httpx.Client(base_url=base, timeout=30) as client:
        open_gates = [_create(client, "approve", ALICE) for _ in range(2)]
        bob_only = _create(client, "bob-only", ALICE)
        quorum = _create(client, "quorum", ALICE)
        theirs = _create(client, "approve", BOB)  # globex: never in an acme inbox

        alice_inbox = _inbox_url(client, ALICE)
        listed = _listed(client, alice_inbox)
        assert listed == [(r, "alice") for r in [*open_gates, quorum]]  # not bob's gate, not globex's
        page = client.get(alice_inbox, headers=HTML).text
        assert "Your requests" in page and "alice" in page and "Open and answer" in page
        assert theirs not in page and bob_only not in page

        bob_listed = _listed(client, _inbox_url(client, ACME_BOB))
        assert bob_listed == [(r, "bob") for r in [*open_gates, bob_only, quorum]]
        globex = _listed(client, _inbox_url(client, BOB))
        assert [r for r, _ in globex] == [theirs]

        # The inbox's review link opens the request's page, and its answer is alice's vote.
        token = REVIEW_LINK.findall(page)[-1]  # the quorum gate
        shown = client.get(f"/interrupts/{token}", headers=HTML)
        assert shown.status_code == 200 and "<form" in shown.text
        voted = client.post(f"/interrupts/{token}", json={"resumeValue": {"action": "accept"}})
        assert voted.status_code == 200, voted.text
        # Voted: off alice's list (no second vote), still on bob's.
        assert [r for r, _ in _listed(client, alice_inbox)] == open_gates
        assert quorum in [r for r, _ in _listed(client, _inbox_url(client, ACME_BOB))]

        # Answered elsewhere: off every list.
        accept = {"resumeValue": {"action": "accept"}}
        answered = client.post(
            f"/runs/{project_id(open_gates[0])}/interrupts/review", json=accept, headers=ALICE
        )
        assert answered.status_code == 200, answered.text
        poll_until(lambda: [r for r, _ in _listed(client, alice_inbox)], lambda ids: open_gates[0] not in ids)


def test_an_inbox_link_answers_nothing_and_bad_links_get_a_clear_page(db_url: str) -> None:
    with served(db_url) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = _create(client, "approve", ALICE)
        url = _inbox_url(client, ALICE)
        inbox_token = url.rsplit("/", 1)[1]

        # Used where a review token goes, it resolves nothing and reads nothing.
        for attempt in (
            client.post(f"/interrupts/{inbox_token}", json={"resumeValue": {"action": "accept"}}),
            client.get(f"/interrupts/{inbox_token}"),
        ):
            assert_error(attempt, 401, "interrupt_token_invalid")
        form = client.post(
            f"/interrupts/{inbox_token}/form",
            content="action=accept",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert form.status_code == 401 and "This link is not valid" in form.text
        assert client.get(f"/runs/{project_id(run_id)}", headers=ALICE).json()["status"] == "waiting-approval"

        expired = mint_inbox(
            KEYS,
            tenant="acme",
            subject="alice",
            now=datetime.now(UTC) - timedelta(hours=2),
            ttl=timedelta(hours=1),
        )
        page = client.get(f"/inbox/{expired.token}", headers=HTML)
        assert page.status_code == 410 and "This inbox link has expired" in page.text
        assert run_id not in page.text

        head, _, mac = inbox_token.rpartition(".")
        forged = f"{head}.{'B' if mac[0] == 'A' else 'A'}{mac[1:]}"
        foreign = mint_inbox(
            SigningKeys({"k2": "not-this-hosts-secret-0123456789"}),
            tenant="acme",
            subject="alice",
            now=datetime.now(UTC),
        ).token
        review = REVIEW_LINK.findall(client.get(url, headers=HTML).text)[0]
        for bad in (forged, foreign, review, "nonsense"):
            page = client.get(f"/inbox/{bad}", headers=HTML)
            assert page.status_code == 401, bad
            assert "This inbox link is not valid" in page.text and run_id not in page.text
            assert "Traceback" not in page.text and "mac" not in page.text

        # A cursor that is not this list's: a page saying so, not a JSON error.
        page = client.get(url, params={"cursor": "x" * 20}, headers=HTML)
        assert page.status_code == 400 and "not valid" in page.text

        # Minting needs a credential that may answer.
        assert client.post("/inbox-links").status_code == 401
