"""Headless Chromium for page tests: Debian's chromium driven by Playwright (never `playwright install`).

Tests skip with the reason when the browser is missing, unless FOCUS_REQUIRE_BROWSER=1 (CI), then they fail.
"""

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="module")
def browser():
    reason = None
    if not CHROMIUM.is_file():
        reason = f"{CHROMIUM} is missing (apt-get install chromium)"
    else:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            reason = "Python Playwright is not installed"
    if reason:
        if os.environ.get("FOCUS_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser tests required (FOCUS_REQUIRE_BROWSER=1) but {reason}")
        pytest.skip(f"browser tests skipped: {reason}")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Visit:
    """A page with recorders for console errors, requests and dialogs."""

    def __init__(self, browser, width=1280, height=900):
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.errors, self.requests, self.dialogs = [], [], []
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("dialog", self._dialog)

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path: Path):
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("load")
        return self.page

    def close(self):
        self.assert_clean()
        self.page.close()

    def assert_clean(self):
        assert self.errors == []
        assert self.dialogs == []
        assert self.requests and all(url.startswith("file://") for url in self.requests), self.requests
