"""Debian's Chromium driven by Playwright, for the tests that look at the web page: never a
browser Playwright downloads. Absent, the test skips saying so — or fails under CI, where
.ci/run installs it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from tests.conftest import skip_unless_ci

CHROMIUM = Path(os.environ.get("THOTH_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
# Playwright's assertions wait 5 s by default; on a 2-core machine running the whole suite a
# session opened in the page took longer (seen once: the page was right, only late). The
# assertions still fail, after 30 s, when the page never shows what they expect.
EXPECT_TIMEOUT_MS = 30_000


@contextmanager
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        skip_unless_ci(
            f"no Chromium at {CHROMIUM}: apt-get install chromium (or set THOTH_CHROMIUM)",
            ".ci/run installs Debian's chromium, the page's tests must run",
        )
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page: Page, name: str) -> Path:
    """A full-page PNG under test-artifacts/web/ (gitignored), kept for a person to look at."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    return path


def ask_in_page(page: Page, url: str, key: str, question: str, *, labels: str = "") -> None:
    """Type into the page as a person does and press Ask; returns once the answer is shown."""
    page.goto(url)
    page.fill("#api-key", key)
    page.dispatch_event("#api-key", "change")
    page.fill("#question", question)
    page.fill("#labels", labels)
    with page.expect_response(lambda r: r.url.endswith("/v1/ask")):
        page.click("#ask-button")
    expect(page.locator("#ask-button")).to_have_text("Ask")
    expect(page.locator("#answer")).to_be_visible()


def expect_unreachable(message: Locator, what_happened: str) -> None:
    """A request that failed on the network is said in its panel's error message: the server
    unreachable, and what did (not) happen."""
    expect(message).to_contain_text("Server unreachable")
    expect(message).to_contain_text(what_happened)
    expect(message).to_have_class(re.compile(r"\berror\b"))
