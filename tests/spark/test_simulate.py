"""The simulator on its own (pure Python, no Spark): deterministic, valid snapshot lines, sane truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configctl.audit.schema import is_sensitive
from configctl.audit.simulate import fingerprint, simulate
from configctl.audit.simulation_build import build_fleet
from configctl.audit.simulation_model import SimulationSpec
from configctl.snapshot import FIELD_NAMES

pytestmark = pytest.mark.unit


def test_same_seed_same_fleet_other_seed_other_fleet(tmp_path: Path) -> None:
    spec = SimulationSpec(brokers=5, topics=30, drift_rate=0.3, seed=21, malformed=2)
    simulate(spec, tmp_path / "a")
    simulate(spec, tmp_path / "b")
    simulate(SimulationSpec(brokers=5, topics=30, drift_rate=0.3, seed=22, malformed=2), tmp_path / "c")
    assert fingerprint(tmp_path / "a") == fingerprint(tmp_path / "b") != fingerprint(tmp_path / "c")


def test_lines_follow_contract_4_and_hide_secrets(tmp_path: Path) -> None:
    written = simulate(SimulationSpec(brokers=3, topics=10, drift_rate=0.5, seed=3), tmp_path)
    rows = 0
    for path in sorted(tmp_path.glob("broker-*.jsonl")):
        broker = int(path.stem.split("-")[1])
        for text in path.read_text().splitlines():
            row = json.loads(text)
            rows += 1
            assert tuple(row) == FIELD_NAMES
            assert row["broker_id"] == broker
            if row["entity_path"].startswith("brokers/"):
                assert row["entity_path"] == f"brokers/{broker}"
            if is_sensitive(row["name"]) and row["value"] is not None:
                assert row["value"].startswith("sha256:") and len(row["value"]) == 71
    assert rows == written.rows


def test_ground_truth_matches_the_injected_drift(tmp_path: Path) -> None:
    simulate(SimulationSpec(brokers=8, topics=20, drift_rate=0.25, seed=4, malformed=3), tmp_path)
    truth = json.loads((tmp_path / "ground_truth.json").read_text())
    snapshots_only = truth["snapshots_only"]
    injected = truth["injected"]
    assert {i["broker_id"] for i in injected if i["kind"] == "stale"} == {
        s["broker_id"] for s in snapshots_only["stale_brokers"]
    }
    assert snapshots_only["malformed"] == {"unparseable": 2, "missing_fields": 1}
    for entry in snapshots_only["divergent"] + snapshots_only["static_skew"]:
        counts = [v["count"] for v in entry["values"]]
        assert (
            counts == sorted(counts, reverse=True) and entry["majority_value"] == entry["values"][0]["value"]
        )
    assert truth["with_desired_state"]["missed_changes"]


def test_a_smaller_fleet_replaces_a_bigger_one(tmp_path: Path) -> None:
    simulate(SimulationSpec(brokers=5, topics=3), tmp_path)
    simulate(SimulationSpec(brokers=2, topics=3), tmp_path)
    assert sorted(p.name for p in tmp_path.glob("broker-*.jsonl")) == ["broker-1.jsonl", "broker-2.jsonl"]


@pytest.mark.parametrize(
    "kwargs",
    [{"brokers": 0}, {"drift_rate": 1.5}, {"topics": -1}, {"changes": 2, "pending": 3}],
)
def test_bad_specs_are_refused(kwargs) -> None:
    with pytest.raises(ValueError):
        SimulationSpec(**kwargs)


def test_desired_state_holds_every_dynamic_config() -> None:
    fleet = build_fleet(SimulationSpec(brokers=4, topics=6, drift_rate=0.5, seed=8))
    desired = fleet.expected_state()
    assert desired.latest_change_number == fleet.latest_change_number
    paths = {e.entity_path for e in desired.expected}
    assert paths == set(fleet.desired_config())
    for e in desired.expected:
        assert (e.broker_id is not None) == (
            e.entity_path.startswith("brokers/") and e.entity_path != "brokers/<default>"
        )
