"""The audit recovers the simulator's ground truth exactly, whatever the seed, size and partitioning."""

from __future__ import annotations

import json

import pytest
from audit_helpers import expected, findings, ground_truth

from configctl.audit.expected import read_expected_state
from configctl.audit.options import AuditOptions
from configctl.audit.reading import read_snapshots
from configctl.audit.run import audit, audit_frame
from configctl.audit.simulate import DESIRED_STATE_FILE
from configctl.audit.verdict import has_drift

pytestmark = pytest.mark.spark

# (seed, brokers, topics, drift rate, malformed lines, pending changes)
CASES = [
    (1, 3, 8, 0.34, 2, 0),
    (2, 6, 25, 0.3, 0, 1),
    (3, 13, 40, 0.25, 3, 0),
    (4, 40, 120, 0.1, 1, 2),
]


def _fleet(fleet, seed, brokers, topics, rate, malformed, pending):
    return fleet(
        brokers=brokers, topics=topics, drift_rate=rate, seed=seed, malformed=malformed, pending=pending
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"seed{c[0]}-brokers{c[1]}")
def test_ground_truth_is_recovered_exactly(fleet, audited, case) -> None:
    directory = _fleet(fleet, *case)
    truth = ground_truth(directory)
    snapshots_only = truth["snapshots_only"]
    # The fleet really drifts, so an audit that reports nothing cannot pass.
    assert snapshots_only["stale_brokers"] and snapshots_only["divergent"] and snapshots_only["static_skew"]
    assert snapshots_only["per_broker_overrides"] and truth["with_desired_state"]["missed_changes"]

    doc = audited(directory)
    assert findings(doc) == expected(snapshots_only)
    assert doc["latest_change_source"] == "snapshots" and doc["missed_changes"] is None

    doc = audited(directory, desired=True)
    assert findings(doc) == expected(truth["with_desired_state"])
    assert doc["latest_change_source"] == DESIRED_STATE_FILE  # the file it came from, not "zookeeper"

    injected = truth["injected"]
    stale = {s["broker_id"] for s in doc["stale_brokers"]}
    overrides = {(o["broker_id"], o["name"]) for o in doc["per_broker_overrides"]}
    assert {i["broker_id"] for i in injected if i["kind"] == "stale"} <= stale
    assert {(i["broker_id"], i["name"]) for i in injected if i["kind"] == "per_broker_override"} <= overrides
    if case[-1]:  # changes only ZooKeeper knows: every broker is behind it
        assert doc["counts"]["stale_brokers"] == case[1]


def test_a_clean_fleet_has_no_drift(fleet, audited) -> None:
    directory = fleet(brokers=4, topics=15, drift_rate=0.0, seed=9)
    doc = audited(directory, desired=True)
    assert findings(doc) == expected(ground_truth(directory)["with_desired_state"])
    assert not has_drift(doc)
    for name in ("stale_brokers", "divergent", "static_skew", "missed_changes"):
        assert doc[name] == [] and doc["counts"][name] == 0
    # Per-broker overrides set through ZooKeeper are deliberate, not drift; the heatmap shows only them.
    assert {cell for row in doc["heatmap"]["cells"] for cell in row} <= {"override", None}


def test_the_result_does_not_depend_on_partitioning(spark, fleet, audited) -> None:
    directory = _fleet(fleet, *CASES[2])
    desired = read_expected_state(directory / DESIRED_STATE_FILE)
    raw = read_snapshots(spark, str(directory))
    reference = json.dumps(audited(directory, desired=True), sort_keys=True)
    for frame in (raw.repartition(1), raw.repartition(7, "name")):
        assert json.dumps(audit_frame(spark, frame, desired), sort_keys=True) == reference


def test_heatmap_from_spark_equals_heatmap_from_findings(spark, fleet, audited) -> None:
    directory = _fleet(fleet, *CASES[2])
    desired = read_expected_state(directory / DESIRED_STATE_FILE)
    options = AuditOptions(heatmap_keys=3, heatmap_brokers=4, heatmap_in_spark=True)
    in_spark = audit(spark, str(directory), desired, options)["heatmap"]
    on_driver = audited(directory, desired=True)["heatmap"]
    assert len(on_driver["keys"]) > 3 and len(on_driver["brokers"]) > 4  # enough drift to need cutting
    assert in_spark["keys"] == on_driver["keys"][:3]
    assert len(in_spark["brokers"]) == 4 and all(len(row) == 3 for row in in_spark["cells"])
    # Same cells wherever both maps have the broker and the key.
    driver_cells = {
        (b["broker_id"], k["key"]): on_driver["cells"][i][j]
        for i, b in enumerate(on_driver["brokers"])
        for j, k in enumerate(on_driver["keys"])
    }
    for i, b in enumerate(in_spark["brokers"]):
        for j, k in enumerate(in_spark["keys"]):
            assert in_spark["cells"][i][j] == driver_cells.get((b["broker_id"], k["key"]))


def test_limits_cut_lists_and_count_what_was_left_out(spark, fleet, audited) -> None:
    directory = _fleet(fleet, *CASES[3])
    desired = read_expected_state(directory / DESIRED_STATE_FILE)
    full = audited(directory, desired=True)
    cut = audit(spark, str(directory), desired, AuditOptions(limit=2, max_listed=3))
    for name in ("stale_brokers", "divergent", "per_broker_overrides", "missed_changes"):
        assert cut["counts"][name] == full["counts"][name] > 2
        assert len(cut[name]) == 2 and cut["truncated"][name] == full["counts"][name] - 2
    assert cut["stale_brokers"] == full["stale_brokers"][:2]
    assert cut["missed_changes"] == full["missed_changes"][:2]
    first, whole = cut["divergent"][0], full["divergent"][0]
    assert (first["entity_path"], first["name"]) == (whole["entity_path"], whole["name"])
    assert all(len(v["brokers"]) <= 3 for v in first["values"])
    majority = first["values"][0]
    assert majority["count"] == whole["values"][0]["count"] > 3
    assert majority["brokers"] == whole["values"][0]["brokers"][:3]
    assert majority["brokers_truncated"] == majority["count"] - 3
    # With cut findings the heatmap is computed in Spark from everything: the same map.
    assert cut["heatmap"] == full["heatmap"]
