"""Headless Chromium for the page tests (Debian's package; no browser download).

Without Chromium the browser tests skip, so the README's test command passes on a laptop. CI
sets ``WOP_REQUIRE_BROWSER=1`` (see ``.ci/run``, which installs the package): there a missing
browser fails the tests instead of skipping them silently.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The flags a root sandbox on a closed network needs.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REQUIRE_ENV = "WOP_REQUIRE_BROWSER"


def require_chromium() -> str:
    """The Chromium executable; skips the test without one (fails it when CI requires one)."""
    if CHROMIUM is not None:
        return CHROMIUM
    reason = "headless Chromium is not installed (Debian package 'chromium'; .ci/run installs it)"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_ENV}=1 requires the browser tests to run")
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator[Browser]:
    """A launched headless Chromium, closed afterwards."""
    executable = require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
