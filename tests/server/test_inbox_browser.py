"""The reviewer's inbox in a real headless Chromium with JavaScript off, against a real server.

The inbox lists alice's pending requests; following one opens its page, and answering it there
takes it off the list. Screenshots go to the test's temporary folder, and to
``$WOP_SCREENS_DIR`` when that is set, for a person to look at.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page

from tests.browser import chromium
from tests.server.conftest import ALICE, SIGNING_KEYS
from tests.server.process import rested, served
from wop_langgraph.inbox_tokens import mint_inbox
from wop_langgraph.tokens import SigningKeys

pytestmark = pytest.mark.slow


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium() as browser:
        context = browser.new_context(java_script_enabled=False, viewport={"width": 900, "height": 900})
        try:
            yield context.new_page()
        finally:
            context.close()


def _shoot(page: Page, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    extra = os.environ.get("WOP_SCREENS_DIR")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / path.name)
    return path


def test_inbox_page_lists_and_opens_each_request(page: Page, tmp_path: Path) -> None:
    with (
        served(f"sqlite:///{tmp_path / 'wop.db'}") as base,
        httpx.Client(base_url=base, timeout=60) as client,
    ):
        runs = []
        for workflow in ("approve", "approve", "bob-only"):
            created = client.post("/runs", json={"workflowId": workflow}, headers=ALICE)
            assert created.status_code == 201, created.text
            runs.append(str(created.json()["runId"]))
            with httpx.Client(base_url=base, headers=ALICE, timeout=60) as reader:
                rested(reader, runs[-1])
        url = client.post("/inbox-links", headers=ALICE).json()["url"]

        page.goto(url)
        assert page.title() == "Your requests"
        items = page.locator("li.item")
        assert items.count() == 2  # the gate only bob may answer is not alice's
        assert "Workflow" in items.first.inner_text() and "approve" in items.first.inner_text()
        assert page.get_by_role("link", name="Open and answer").count() == 2
        _shoot(page, tmp_path, "inbox")

        page.get_by_role("link", name="Open and answer").first.click()
        assert page.url.startswith(f"{base}/interrupts/ow2.")
        assert page.locator("form").count() >= 1
        _shoot(page, tmp_path, "inbox-opened")
        page.get_by_role("button", name="Accept").first.click()
        page.goto(url)
        assert page.locator("li.item").count() == 1  # answered: off the list

        expired = mint_inbox(
            SigningKeys.parse(SIGNING_KEYS),
            tenant="acme",
            subject="alice",
            now=datetime.now(UTC) - timedelta(days=8),
        )
        page.goto(f"{base}/inbox/{expired.token}")
        assert page.title() == "This inbox link has expired"
        _shoot(page, tmp_path, "inbox-expired")
