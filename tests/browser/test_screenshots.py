"""Screenshots of every console page and of the audit's HTML report, for people to look at.

``make screenshots`` runs this (into ``build/screenshots``): the fleet, an entity and the rollouts
on a real fleet of three listeners, and the Drift page and the audit's HTML report at 500
simulated brokers (``configctl audit simulate`` then ``configctl audit``). Each shot is also a
check: the page it shows has the content a person would look for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser_console import serve
from helpers import REPO_ROOT, child_env, run_cli

pytestmark = pytest.mark.zk

OUT = Path(os.environ.get("CONSOLE_SCREENSHOTS") or REPO_ROOT / "build" / "screenshots")
BROKERS = 500


def audit_at_500(out: Path) -> tuple[Path, Path]:
    """A simulated fleet of 500 brokers and its audit (JSON and HTML), made once and kept in ``out``."""
    document, report = out / "audit-500.json", out / "audit-500.html"
    if document.exists() and report.exists():
        return document, report
    snapshots = out / "fleet-500"
    run = [sys.executable, "-m", "configctl", "audit"]
    subprocess.run([*run, "simulate", "--brokers", str(BROKERS), "--topics", "40", "--drift-rate", "0.04",
                    "--pending", "0", "--out", str(snapshots)],
                   check=True, env=child_env(), stdout=subprocess.DEVNULL)  # fmt: skip
    audited = subprocess.run([*run, "--snapshots", str(snapshots), "--desired-state",
                              str(snapshots / "desired_state.json"), "--html", str(report), "-o", "json"],
                             env=child_env(), capture_output=True, text=True)  # fmt: skip
    assert audited.returncode in (0, 2), audited.stderr[-2000:]
    document.write_text(audited.stdout)
    return document, report


def shoot(page: Any, name: str) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"wrote {path}")
    return path


def test_screenshots_of_every_page(zk_connect, fleet_of_three, consoles, page):
    result = run_cli("--zookeeper", zk_connect, "alter", "--topic", "orders", "--add-config",
                     "retention.ms=86400000", "--reason", "OPS-1 keep a day", "--wait", "30")  # fmt: skip
    assert result.returncode == 0, result.stderr
    canary = run_cli("--zookeeper", zk_connect, "alter", "--broker-defaults", "--add-config",
                     "log.retention.ms=7200000", "--reason", "OPS-7", "--canary", "1", "--soak", "1s",
                     "--wait", "30")  # fmt: skip
    assert canary.returncode == 0, canary.stderr
    document, report = audit_at_500(OUT)
    assert json.loads(document.read_text())["brokers"] == BROKERS
    consoles.append(console := serve(zk_connect, "--audit-json", str(document)))

    page.goto(console.url + "/")
    page.wait_for_selector('#live-state[data-state="live"]')
    assert page.locator("#brokers tbody tr").count() == 3
    shoot(page, "console-fleet")

    page.goto(console.url + "/entity/topics/orders")
    assert "OPS-1 keep a day" in page.locator("main").inner_text()
    shoot(page, "console-entity")

    page.goto(console.url + "/rollouts")
    assert "promoted" in page.locator("main").inner_text()
    shoot(page, "console-rollouts")

    page.goto(console.url + "/drift")
    assert "stopped at" in page.locator("main").inner_text()
    shoot(page, "console-drift-500")

    page.goto(report.resolve().as_uri())
    shoot(page, "audit-report-500")
    assert page.errors == [] or all("favicon" in e or "Failed to load" in e for e in page.errors)
