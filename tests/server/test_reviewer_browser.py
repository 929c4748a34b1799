"""The reviewer page in a real headless Chromium against a real server process: no JavaScript needed."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, sync_playwright

from tests.server.conftest import ALICE, READER
from tests.server.process import served
from wop_langgraph.protocol.ids import project_id

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The flags a root sandbox on a closed network needs (see .ci/run, which installs chromium).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def base_url(sqlite_url: str) -> Iterator[str]:
    with served(sqlite_url) as base:
        yield base


@pytest.fixture
def browser_page() -> Iterator[Page]:
    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (Debian package 'chromium'; .ci/run installs it)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            # JavaScript off: the page must work as plain HTML forms.
            yield browser.new_page(java_script_enabled=False)
        finally:
            browser.close()


def link(base: str, run_id: str, node: str, **body: object) -> str:
    response = httpx.post(
        f"{base}/runs/{project_id(run_id)}/interrupts/{node}/tokens", json=body, headers=ALICE, timeout=30
    )
    assert response.status_code == 201, response.text
    return str(response.json()["url"])


def status(base: str, run_id: str) -> str:
    return str(httpx.get(f"{base}/runs/{project_id(run_id)}", headers=READER, timeout=30).json()["status"])


def test_accept_an_approval_then_answer_a_clarification(
    base_url: str, browser_page: Page, tmp_path: Path
) -> None:
    page = browser_page
    created = httpx.post(f"{base_url}/runs", json={"workflowId": "review"}, headers=ALICE, timeout=60)
    run_id = created.json()["runId"]

    approval_link = link(base_url, run_id, "review")
    page.goto(approval_link)
    body = page.inner_text("body")
    assert "Publish the draft?" in body and "Allowed actions: accept, reject" in body
    page.screenshot(path=str(tmp_path / "approval.png"))
    page.click("button[value=accept]")
    assert "your answer was recorded" in page.inner_text("body")
    assert status(base_url, run_id) == "waiting-input"

    page.goto(approval_link)
    assert "already answered" in page.inner_text("body")

    page.goto(link(base_url, run_id, "clarify"))
    assert "Which colour?" in page.inner_text("body")
    page.fill("input[name='answer.q1']", "blue")
    page.click("button[type=submit]")
    assert "your answer was recorded" in page.inner_text("body")
    assert status(base_url, run_id) == "completed"


def test_an_expired_link_shows_a_clear_message(base_url: str, browser_page: Page) -> None:
    page = browser_page
    run_id = httpx.post(f"{base_url}/runs", json={"workflowId": "review"}, headers=ALICE, timeout=60).json()[
        "runId"
    ]
    short = link(base_url, run_id, "review", ttlSeconds=1)
    time.sleep(1.5)
    page.goto(short)
    text = page.inner_text("body")
    assert "This link has expired" in text and "Traceback" not in text
    assert status(base_url, run_id) == "waiting-approval"
