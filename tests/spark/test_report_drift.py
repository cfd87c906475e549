"""The drift view a person reads at 500 brokers: the audit's HTML report and its heat map.

Most tests here build the audit document by hand (a fleet of 500 brokers where 100 stopped at
one change) and need no Spark; one runs the audit in Spark to show both ways of drawing the heat
map fold stale brokers the same way.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from configctl.audit.heatmap import heatmap_from_findings
from configctl.audit.report import render_html
from configctl.audit.report_view import expected_source, ranges, stale_groups, static_by_key

LONG_KEY = "listener.name.internal.ssl.keystore.password.and.a.long.tail.of.words"
HOSTILE = "<script>alert(1)</script>"


def _values(majority: str, brokers: list[int], other: str, others: list[int]) -> list[dict[str, Any]]:
    return [
        {"value": majority, "count": len(brokers), "brokers": brokers},
        {"value": other, "count": len(others), "brokers": others},
    ]


def fleet_of_500() -> dict[str, Any]:
    """An audit document: 100 brokers stopped at change 40 and 3 at change 45 of 50 (each missing
    the keys changed since), a few with other drift, and one static difference under two synonyms."""
    stuck = {b: 40 for b in range(101, 201)} | {7: 45, 8: 45, 300: 45}
    missed = [
        {"broker_id": b, "entity_path": "topics/orders", "name": "retention.ms", "expected_value": "1",
         "actual_value": "2"}
        for b in stuck
    ]  # fmt: skip
    missed += [
        {"broker_id": b, "entity_path": f"topics/{HOSTILE}", "name": "segment.bytes", "expected_value": "1",
         "actual_value": None}
        for b in range(101, 201)
    ]  # fmt: skip
    everyone = list(range(1, 501))
    doc: dict[str, Any] = {
        "brokers": 500,
        "rows": 64000,
        "malformed": {"unparseable": 0, "missing_fields": 0, "examples": []},
        "latest_change_number": 50,
        "latest_change_source": "zookeeper",
        "stale_brokers": [
            {"broker_id": b, "change_number": cn, "behind": 50 - cn} for b, cn in sorted(stuck.items())
        ],
        "divergent": [],
        "per_broker_overrides": [{"broker_id": 9, "name": LONG_KEY, "value": "x"}],
        "static_skew": [
            {
                "name": "log.retention.hours",
                "majority_value": "168",
                "values": _values("168", [b for b in everyone if b != 11], "24", [11]),
            },
            {
                "name": "log.retention.ms",
                "majority_value": "604800000",
                "values": _values("604800000", [b for b in everyone if b != 11], "86400000", [11]),
            },
        ],
        "missed_changes": missed,
        "truncated": {},
    }
    doc["counts"] = {name: len(doc[name]) for name in
                     ("stale_brokers", "divergent", "per_broker_overrides", "static_skew", "missed_changes")}  # fmt: skip
    doc["heatmap"] = heatmap_from_findings(doc, 20, 4)  # four rows: two for the stale to fill
    return doc


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.mark.unit
def test_one_root_cause_does_not_drown_the_rest_of_the_heat_map() -> None:
    heat = fleet_of_500()["heatmap"]
    rows = [(b["broker_id"], b["stale"]) for b in heat["brokers"]]
    # the brokers with drift of their own take rows first, whatever their count of cells; stale
    # brokers only fill what is left, and the rest are one row per change they stopped at
    assert rows == [(9, False), (11, False), (101, True), (102, True)]
    assert [(g["change_number"], g["brokers"]) for g in heat["stale_groups"]] == [
        (40, list(range(103, 201))),
        (45, [7, 8, 300]),
    ]
    keys = [k["key"] for k in heat["keys"]]
    group = dict(zip(keys, heat["stale_groups"][0]["cells"], strict=True))
    assert group["topics/orders retention.ms"] == "missed"
    assert group[f"topics/{HOSTILE} segment.bytes"] == "missed"


@pytest.mark.unit
def test_the_report_at_500_brokers_groups_labels_and_counts_once() -> None:
    doc = fleet_of_500()
    page = render_html(doc, desired_state="/srv/fleet/desired.json")
    text = _text(page)
    # the expected state's source is the file it came from, not "zookeeper"
    assert "from desired.json" in text and "zookeeper" not in text.lower()
    assert "from zookeeper" in _text(render_html(doc))
    # stale brokers: one line per change they stopped at, ids as ranges; the full list folded away
    table = re.search(r'<table class="stale-groups">.*?</table>', page, re.S)
    assert table is not None and table.group(0).count("<tr>") == 3  # a header and two groups
    assert "101-200" in table.group(0) and "7-8, 300" in table.group(0)
    assert re.search(r"<details><summary>Every stale broker \(103\)</summary>", page)
    # the heat map: two broker rows, two group rows; no key label cut (the full name is shown)
    assert len(re.findall(r'<tr><th class="broker', page)) == 4
    assert len(re.findall(r'<tr class="group">', page)) == 2
    assert f"<span>{LONG_KEY}</span>" in page
    # a static difference under two synonyms is one key
    assert re.search(r"Static skew <span class=\"count\">\(1 key\)", page)
    assert re.search(r'<div class="figure">1</div><div class="label">static skew keys', page)
    assert "log.retention.hours = log.retention.ms" in text
    # stored strings stay text
    assert HOSTILE not in page and "&lt;script&gt;" in page


@pytest.mark.unit
def test_the_shared_helpers() -> None:
    assert ranges([5, 1, 2, 3, 9, 10]) == "1-3, 5, 9-10"
    assert expected_source({"latest_change_source": "snapshots"}, "d.json") == "snapshots"
    assert expected_source({"latest_change_source": "zookeeper"}, "/x/d.json") == "d.json"
    assert len(static_by_key([{"name": "log.retention.minutes"}, {"name": "log.retention.ms"}])) == 1
    status = {
        "brokers": [
            {"broker_id": 1, "live": False, "problems": []},
            {"broker_id": 2, "live": True, "problems": [{"kind": "rejected"}]},
            {"broker_id": 3, "live": True, "problems": []},
        ]
    }
    stale = [{"broker_id": b, "change_number": 4} for b in (1, 2, 3)]
    assert stale_groups(stale, status) == [
        {"change_number": 4, "count": 3, "brokers": "1-3", "why": ["1 down (1)", "rejected on 1 (2)"]}
    ]


@pytest.mark.spark
def test_spark_and_the_driver_fold_stale_brokers_alike(spark, fleet) -> None:
    from configctl.audit.expected import read_expected_state
    from configctl.audit.options import AuditOptions
    from configctl.audit.run import audit
    from configctl.audit.simulate import DESIRED_STATE_FILE

    directory = fleet(brokers=60, topics=30, drift_rate=0.15, seed=21, pending=0)
    desired = read_expected_state(directory / DESIRED_STATE_FILE)
    on_driver = audit(spark, str(directory), desired, AuditOptions(heatmap_brokers=10))
    in_spark = audit(spark, str(directory), desired, AuditOptions(heatmap_brokers=10, heatmap_in_spark=True))[
        "heatmap"
    ]
    assert on_driver["stale_brokers"] and on_driver["heatmap"].get("stale_groups")
    assert in_spark == on_driver["heatmap"]
    stale = {s["broker_id"] for s in on_driver["stale_brokers"]}
    rows = {b["broker_id"] for b in in_spark["brokers"]}
    grouped = {b for g in in_spark["stale_groups"] for b in g["brokers"]}
    assert grouped <= stale and not grouped & rows  # each broker once: its own row or its group's
