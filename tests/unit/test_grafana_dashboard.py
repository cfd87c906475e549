"""examples/grafana/configctl-listener.json queries only metrics the listener serves.

The served names come from a real scrape of the listener's registry
(:class:`configctl.listener.metrics.ListenerMetrics` rendered as Prometheus text), so a metric
renamed in the listener, or a typo in a panel, fails here rather than on an operator's empty graph.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from configctl.handlers.base import KINDS
from configctl.listener.metrics import ListenerMetrics

pytestmark = pytest.mark.unit

DASHBOARD = Path(__file__).resolve().parents[2] / "examples" / "grafana" / "configctl-listener.json"
ALERTS = DASHBOARD.parents[1] / "prometheus" / "configctl-listener-alerts.yml"
METRIC = re.compile(r"\b(configctl_[a-z0-9_]+)\b")


class _Listener:
    """What the collector reads at a scrape: a listener with one of everything."""

    def metrics_snapshot(self) -> dict[str, Any]:
        return {
            "last_applied_change": 7, "applied_at_ms": 1_700_000_000_000, "changes_applied": 3,
            "notifications_processed": 4, "notifications_pending": 1,
            "problems": {kind: 1 for kind in KINDS}, "problems_reported": {kind: 2 for kind in KINDS},
            "connected": True, "healthy": True, "errors": 0, "full_loads": 1, "plugin_errors": 0,
        }  # fmt: skip


def served() -> set[str]:
    """Every sample name a scrape of the listener returns (``_total``, ``_bucket``, ... included)."""
    metrics = ListenerMetrics(_Listener())
    metrics.latency.observe(0.02)
    text = generate_latest(metrics.registry).decode()
    return {
        line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")
    }


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for panel in dashboard["panels"]:
        found.append(panel)
        found += panel.get("panels") or []  # a collapsed row keeps its panels inside
    return found


def expressions(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in panels(dashboard) for t in p.get("targets") or []]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v.get("type") == "query"]
    return exprs


def test_every_metric_the_dashboard_queries_is_served() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queried = {name for expr in expressions(dashboard) for name in METRIC.findall(expr)}
    names = served()
    assert queried, "the dashboard queries no configctl metric"
    assert queried <= names, f"not served by the listener: {sorted(queried - names)}"


def test_it_shows_what_the_issue_asks_and_stands_alone() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queried = " ".join(expressions(dashboard))
    for wanted in (
        "configctl_listener_last_applied_change",  # applied change, and lag against the fleet's newest
        "sum by (kind) (configctl_listener_problems",  # problems by kind
        "configctl_listener_apply_latency_seconds_bucket",  # apply latency quantiles
    ):
        assert wanted in queried
    assert "group_right" in queried  # the lag: the fleet's newest minus each broker's
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids))
    # no external URL, and the data source is chosen on import (no uid of someone else's Grafana)
    text = DASHBOARD.read_text()
    assert "http://" not in text and "https://" not in text
    assert {t["datasource"]["uid"] for p in panels(dashboard) for t in p.get("targets") or []} == {
        "${datasource}"
    }


def test_the_alert_rules_beside_it_query_served_metrics_too() -> None:
    queried = set(METRIC.findall(ALERTS.read_text()))
    assert queried and queried <= served(), sorted(queried - served())
