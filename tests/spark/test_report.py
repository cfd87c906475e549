"""The HTML report and the terminal summary show the findings."""

from __future__ import annotations

import html
import re

import pytest
from rich.console import Console

from configctl.audit.report import print_summary, render_html

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def drifted(fleet, audited):
    return audited(fleet(brokers=3, topics=8, drift_rate=0.34, seed=1, malformed=2), desired=True)


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_html_report_contains_summary_heatmap_and_every_finding(drifted) -> None:
    page = render_html(drifted, source="/data/snapshots", generated="2026-11-22 10:00")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    text = _text(page)
    assert "Drift found" in text and "/data/snapshots" in text
    assert re.search(rf">\s*{drifted['brokers']}\s*</div><div class=\"label\">brokers", page)
    for stale in drifted["stale_brokers"]:
        assert (
            f'<td class="num">{stale["broker_id"]}</td><td class="num">{stale["change_number"]}</td>' in page
        )
    for entry in drifted["divergent"]:
        assert entry["entity_path"] in text and entry["name"] in text
    for entry in drifted["static_skew"]:
        assert entry["name"] in text
    for item in drifted["per_broker_overrides"]:
        assert item["name"] in text
    for item in drifted["missed_changes"]:
        assert item["entity_path"] in text
    # The heatmap: one row per broker listed, one cell per key, coloured by kind.
    heat = drifted["heatmap"]
    assert heat["keys"] and heat["brokers"]
    rows = re.findall(r"<tr><th class=\"broker[^\"]*\"", page)
    assert len(rows) == len(heat["brokers"])
    kinds = {cell for row in heat["cells"] for cell in row if cell}
    for kind in kinds:
        assert f'<td class="{kind}"' in page
    assert "malformed" in text.lower() and "retenti" in text  # the example line is shown


def test_html_escapes_values(drifted) -> None:
    doc = dict(drifted)
    doc["per_broker_overrides"] = [{"broker_id": 1, "name": "x", "value": "<script>alert(1)</script>"}]
    page = render_html(doc)
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;" in page


def test_clean_report_says_so(fleet, audited) -> None:
    page = render_html(audited(fleet(brokers=4, topics=15, drift_rate=0.0, seed=9)))
    text = _text(page)
    assert "No drift" in text and "The brokers agree on every cluster-wide key." in text
    assert "Run with --zookeeper" in text  # missed changes need the desired state


def test_terminal_summary(drifted) -> None:
    console = Console(record=True, width=200)
    print_summary(drifted, console, rows=3)
    out = console.export_text()
    assert "drift found" in out
    assert f"{drifted['rows']:,}" in out
    assert "Stale brokers" in out and "Divergent keys" in out and "Missed changes" in out
    if drifted["counts"]["divergent"] > 3:
        assert f"{drifted['counts']['divergent'] - 3} more" in out
