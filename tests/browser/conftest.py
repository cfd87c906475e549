"""Real-browser tests of the console: Playwright driving Debian's ``chromium`` (see docs/console.md).

``make test`` and ``make test-browser`` run them (both install the browser first when it is
missing and set ``CONSOLE_BROWSER_TESTS=1``); a bare ``pytest`` without that variable skips
them. Asked for without a browser, they fail rather than skip, so a green ``make test`` always
means a browser ran them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_console import Served

# Not CONFIGCTL_*: that prefix is configctl's own settings (config show lists them, zk start writes them).
ASKED = os.environ.get("CONSOLE_BROWSER_TESTS") == "1"
CHROMIUM = os.environ.get("CONSOLE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip this directory's tests unless ``make test`` or ``make test-browser`` asked for them."""
    if ASKED:
        return
    skip = pytest.mark.skip(
        reason="a real-browser test: make test or make test-browser (installs chromium first)"
    )
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(skip)


@pytest.fixture
def consoles() -> Iterator[list[Served]]:
    """Every console a test starts, stopped with SIGTERM (as an operator would) afterwards."""
    started: list[Served] = []
    yield started
    for served in started:
        if served.process.poll() is None:
            served.process.send_signal(signal.SIGTERM)
        try:
            served.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            served.process.kill()
            served.process.wait()
        served.log.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Debian chromium per module, driven by Playwright (no browser download).

    Not per session: Playwright's synchronous API keeps an asyncio loop running in the main thread
    while it is open, and tests that run after this directory call ``asyncio.run``."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: run make browser (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page whose console errors (a CSP violation, a script error) fail the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: errors.append(str(e)))
    opened.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    opened.on("dialog", lambda d: (errors.append(f"a dialog opened: {d.message}"), d.dismiss()))
    opened.errors = errors  # type: ignore[attr-defined]
    try:
        yield opened
    finally:
        context.close()
