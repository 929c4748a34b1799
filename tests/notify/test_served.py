"""End to end on a real server process: the email a reviewer receives, its link opened in headless
Chromium, the run continuing; and a quorum of two answering through their own links.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser import chromium, require_chromium
from tests.notify.conftest import Smtp, body_html, body_text, wait_until
from tests.server.conftest import ALICE, READER
from tests.server.process import served
from wop_langgraph.protocol.ids import project_id

pytestmark = pytest.mark.slow


@pytest.fixture
def base(tmp_path: Path, smtp: Smtp) -> Iterator[str]:
    directory = {name: {"email": f"{name}@example.test"} for name in ("alice", "bob")}
    env = {
        "WOP_NOTIFY_DIRECTORY": json.dumps(directory),
        "WOP_NOTIFY_SMTP_HOST": smtp.host,
        "WOP_NOTIFY_SMTP_PORT": str(smtp.port),
        "WOP_NOTIFY_SMTP_SENDER": "reviews@example.test",
        "WOP_NOTIFY_POLL_SECONDS": "0.2",
    }
    with served(
        f"sqlite:///{tmp_path / 'wop.db'}", target="tests.notify.graphs:WORKFLOWS", extra_env=env
    ) as url:
        yield url


def create(base: str, workflow: str) -> str:
    created = httpx.post(f"{base}/runs", json={"workflowId": workflow}, headers=ALICE, timeout=60)
    assert created.status_code == 201, created.text
    return str(created.json()["runId"])


def status(base: str, run_id: str) -> str:
    response = httpx.get(f"{base}/runs/{project_id(run_id)}", headers=READER, timeout=30)
    assert response.status_code == 200, response.text
    return str(response.json()["status"])


def events(base: str, run_id: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{base}/runs/{project_id(run_id)}/events/poll", params={"timeout": 0}, headers=READER
    )
    assert response.status_code == 200, response.text
    return list(response.json()["events"])


def link_from_mail(smtp: Smtp, base: str, address: str) -> str:
    (mail,) = wait_until(lambda: smtp.mailbox.to(address), f"an email to {address}")
    text = body_text(mail)
    links = re.findall(re.escape(base) + r"/interrupts/ow2\.[A-Za-z0-9._~-]+", text)
    assert len(links) == 1, text
    assert links[0] in body_html(mail)
    return str(links[0])


def test_the_emailed_link_opens_in_a_browser_and_approving_continues_the_run(base: str, smtp: Smtp) -> None:
    require_chromium()
    run_id = create(base, "release")
    link = link_from_mail(smtp, base, "alice@example.test")
    (mail,) = smtp.mailbox.to("alice@example.test")
    assert mail["From"] == "reviews@example.test" and run_id in body_text(mail)
    with chromium() as browser:
        page = browser.new_context(java_script_enabled=False).new_page()
        page.goto(link)
        assert page.inner_text("h1") == "Ship release 7?"
        page.locator("form:has(input[name=action][value='accept'])").locator("button").click()
        assert "Accepted" in page.inner_text(".outcome")
    wait_until(lambda: status(base, run_id) == "completed", "the run to complete")
    (resolved,) = [e["payload"] for e in events(base, run_id) if e["type"] == "interrupt.resolved"]
    assert resolved["resolvedBy"]["subjectId"] == "alice"  # the link voted as the recipient it was minted for


def test_a_quorum_of_two_gets_two_personal_links_and_two_votes(base: str, smtp: Smtp) -> None:
    run_id = create(base, "release-quorum")
    links = {name: link_from_mail(smtp, base, f"{name}@example.test") for name in ("alice", "bob")}
    assert links["alice"] != links["bob"]
    accept = {"resumeValue": {"action": "accept"}}
    first = httpx.post(links["alice"], json=accept, timeout=30)
    assert (first.status_code, first.json()["status"]) == (200, "waiting-approval")  # one vote of two
    again = httpx.post(links["alice"], json=accept, timeout=30)  # the same person again: still one vote
    assert (again.status_code, again.json()["status"]) == (200, "waiting-approval")
    second = httpx.post(links["bob"], json=accept, timeout=30)
    assert second.status_code == 200, second.text
    assert second.json()["status"] in ("running", "completed")
    wait_until(lambda: status(base, run_id) == "completed", "the run to complete")
    (resolved,) = [e["payload"] for e in events(base, run_id) if e["type"] == "interrupt.resolved"]
    assert (resolved["decision"], resolved["resolvedBy"]["subjectId"]) == ("granted", "bob")
    time.sleep(0.5)
    assert len(smtp.mailbox.messages) == 2  # one email each, nothing more
