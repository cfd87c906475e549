"""The console in a real browser: Debian's chromium, real ZooKeeper, real listener processes.

Each test opens a page once and then only watches it: the page must change by itself (its
server-sent events and its script), never by a reload. A marker set on ``window`` before the
change is still there after it, which a reload or a navigation would have wiped.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from typing import Any
from urllib.parse import quote

import pytest
from browser_console import serve
from helpers import child_env, run_cli

pytestmark = pytest.mark.zk

HOSTILE = "<script>alert(1)</script>"
NOT_RELOADED = "() => window.__configctlNotReloaded === true"


def cli(zk_connect: str, *args: str) -> Any:
    result = run_cli("--zookeeper", zk_connect, *args)
    assert result.returncode == 0, result.stderr
    return result


def open_live(page: Any, url: str) -> None:
    """Open ``url``, wait for its stream to say hello, and mark the window (see the module doc)."""
    page.goto(url)
    page.wait_for_selector('#live-state[data-state="live"]', timeout=10_000)
    page.evaluate("() => { window.__configctlNotReloaded = true; }")


def brokers_shown(page: Any) -> dict[int, dict[str, str]]:
    """The fleet table as shown: broker id -> its live and last-applied cells."""
    rows = page.evaluate(
        """() => Array.from(document.querySelectorAll('#brokers tbody tr')).map(
             r => [r.cells[0].textContent.trim(), r.cells[2].textContent.trim(), r.cells[3].textContent.trim()])"""
    )
    return {int(b): {"live": live, "applied": applied} for b, live, applied in rows}


def test_an_altered_topic_shows_on_the_fleet_page_without_reload(zk_connect, fleet_of_three, consoles, page):
    consoles.append(console := serve(zk_connect))
    open_live(page, console.url + "/")
    result = cli(
        zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=86400000", "-o", "json"
    )
    number = json.loads(result.stdout)["change_number"]
    committed = time.monotonic()
    # the newest change and its entity appear, then every broker's last applied change moves to it
    page.wait_for_selector('a[href="/entity/topics/orders"]', timeout=5_000)
    shown = time.monotonic() - committed
    print(f"alter returned to the fleet page showing it: {shown * 1000:.0f} ms")
    assert shown < 2.0
    assert page.locator(".summary strong").first.inner_text() == str(number)
    page.wait_for_function(
        f"""() => Array.from(document.querySelectorAll('#brokers tbody tr'))
                 .every(r => r.cells[3].textContent.trim() === '{number}')""",
        timeout=15_000,
    )
    assert page.evaluate(NOT_RELOADED)
    assert page.errors == []  # no script error, no policy violation


def test_a_killed_listener_goes_not_live_on_the_page(zk_connect, fleet_of_three, consoles, page):
    consoles.append(console := serve(zk_connect))
    open_live(page, console.url + "/")
    assert {b: row["live"] for b, row in brokers_shown(page).items()} == {1: "live", 2: "live", 3: "live"}
    listener = fleet_of_three[3]
    listener.kill()  # SIGKILL: no goodbye; its ephemeral state node goes with its session
    listener.wait(timeout=30)
    page.wait_for_function(
        """() => Array.from(document.querySelectorAll('#brokers tbody tr'))
                 .some(r => r.cells[0].textContent.trim() === '3' && r.cells[2].textContent.trim() === 'not live')""",
        timeout=60_000,
    )
    shown = brokers_shown(page)
    assert shown[3]["live"] == "not live" and shown[1]["live"] == "live" and shown[2]["live"] == "live"
    # the filter a person would use finds it, and only it
    page.select_option("#broker-show", "not-live")
    assert page.locator("#brokers tbody tr:not([hidden])").count() == 1
    assert page.evaluate(NOT_RELOADED)
    assert page.errors == []


def test_a_canary_is_watched_step_by_step_on_the_rollouts_page(zk_connect, fleet_of_three, consoles, page):
    consoles.append(console := serve(zk_connect))
    open_live(page, console.url + "/rollouts")
    canary = subprocess.Popen(
        [sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "alter", "--broker-defaults",
         "--add-config", "log.retention.ms=7200000", "--reason", "ticket OPS-7",
         "--canary", "1,3", "--soak", "3s", "--wait", "30", "-o", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), text=True,
    )  # fmt: skip
    seen: list[str] = []  # the heading of the rollout's section, each time it changed
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        heading = page.locator("section.rollout h2").first
        text = heading.inner_text() if heading.count() else ""
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        if text.endswith(": promoted"):
            break
        page.wait_for_timeout(100)
    out, err = canary.communicate(timeout=60)
    assert canary.returncode == 0, err
    print(f"canary states the page showed: {seen}")
    assert len(seen) >= 2, seen
    assert seen[-1].startswith("canary ") and seen[-1].endswith(": promoted")
    assert json.loads(out)["outcome"] == "promoted"
    assert page.locator("#rollout-list").inner_text().count("promoted") >= 1
    assert "brokers/<default>" in page.locator("main").inner_text()
    assert page.evaluate(NOT_RELOADED)
    assert page.errors == []


def test_a_hostile_entity_name_renders_as_text(zk_connect, consoles, page):
    reason = '<img src=x onerror="alert(2)">'
    cli(
        zk_connect,
        "alter",
        "--client",
        HOSTILE,
        "--add-config",
        "producer_byte_rate=1024",
        "--reason",
        reason,
    )
    path = json.loads(cli(zk_connect, "describe", "--client", HOSTILE, "-o", "json").stdout)[0]["entity_path"]
    consoles.append(console := serve(zk_connect))
    page.goto(console.url + "/")
    link = page.locator("a", has_text=HOSTILE)
    assert link.count() == 1  # the newest-changes list names it as text
    link.click()
    page.wait_for_url(re.compile(r".*/entity/.*"))
    assert page.locator("h1").inner_text() == f"clients/{HOSTILE}"
    assert reason in page.locator("main").inner_text()
    # no element came from the stored strings: one script (the console's own), no img at all
    assert page.locator("script").count() == 1 and page.locator("img").count() == 0
    assert page.evaluate("() => typeof window.alert") == "function"
    page.wait_for_timeout(300)
    assert page.errors == []  # no dialog opened, nothing ran
    assert page.url.endswith(quote(path, safe="/")) or "/entity/" in page.url


def test_abort_from_the_rollouts_page(zk_connect, fleet_of_three, consoles, page):
    token = "a-token-for-the-browser-test-0123"
    consoles.append(console := serve(zk_connect, "--allow-actions", env={"CONFIGCTL_SERVE_TOKEN": token}))
    open_live(page, console.url + "/rollouts")
    canary = subprocess.Popen(
        [sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "alter", "--broker-defaults",
         "--add-config", "log.retention.ms=7200000", "--reason", "ticket OPS-8",
         "--canary", "1", "--soak", "120s", "--wait", "30", "-o", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), text=True,
    )  # fmt: skip
    try:
        # the rollout appears by itself, soaking, with its Abort button
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('section.rollout h2'))"
            ".some(h => h.textContent.trim().endsWith(': running'))"
            " && document.querySelector('button[data-abort]') !== null"
            " && document.querySelector('#rollout-list').textContent.includes('soaking')",
            timeout=60_000,
        )
        button = page.locator("button[data-abort]")
        rollout_id = button.get_attribute("data-abort")
        button.click()
        assert page.locator("#abort-dialog").is_visible()
        assert page.locator("#abort-id").inner_text() == rollout_id
        page.fill("#abort-token", token)
        page.fill("#abort-reason", "latency up on broker 1")
        started = time.monotonic()
        page.click("#abort-confirm")
        page.wait_for_function(
            "() => /exit 0: aborted/.test(document.getElementById('action-result').textContent)",
            timeout=30_000,
        )
        line = page.locator("#action-result").inner_text()
        assert (
            f"rollout {rollout_id}: exit 0: aborted" in line and "brokers/1" in line and "via console" in line
        )
        # the live update shows it aborted, and the button is gone
        page.wait_for_function(
            f"() => Array.from(document.querySelectorAll('section.rollout h2'))"
            f".some(h => h.textContent.trim() === 'canary {rollout_id}: aborted')",
            timeout=15_000,
        )
        print(f"click to the page showing the rollout aborted: {(time.monotonic() - started) * 1000:.0f} ms")
        assert page.locator("button[data-abort]").count() == 0
        assert not page.locator("#abort-dialog").is_visible()
        # the token is kept for this tab only: sessionStorage, never a cookie
        assert page.evaluate("() => sessionStorage.getItem('configctl-console-token')") == token
        assert page.evaluate("() => document.cookie") == ""
        out, err = canary.communicate(timeout=60)
        assert canary.returncode == 11, err  # the canary's own process learnt it was aborted
        assert json.loads(out)["failure"].startswith("aborted by someone else")
        assert page.evaluate(NOT_RELOADED)
        assert page.errors == []  # no script error, no policy violation, no refused request
    finally:
        if canary.poll() is None:
            canary.kill()
            canary.communicate()
