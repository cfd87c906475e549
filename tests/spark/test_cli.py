"""``configctl audit`` and ``audit simulate`` as users run them, and the spark-submit entry point."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from audit_helpers import expected, findings, ground_truth
from helpers import run_cli

from configctl.audit import job
from configctl.audit.expected import ExpectedState
from configctl.audit.schema import is_sensitive
from configctl.audit.simulate import DESIRED_STATE_FILE, fingerprint
from configctl.audit.simulation_build import build_fleet
from configctl.audit.simulation_model import SimulationSpec
from configctl.cli.main import main

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True)
def _no_zookeeper_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONFIGCTL_ZOOKEEPER", raising=False)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI in this process (sharing the test Spark session): exit status, stdout, stderr."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_help_does_not_import_pyspark() -> None:
    code, out, err = run_cli("audit", "--help", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert code == 0, err
    assert "--snapshots" in out and "simulate" in out and "--fail-on-drift" in out
    imported = {line.rsplit("|", 1)[1].strip() for line in err.splitlines() if line.count("|") == 2}
    assert "configctl.audit.verdict" in imported  # the audit command really was loaded
    assert not {m for m in imported if m == "pyspark" or m.startswith("pyspark.")}


def test_missing_path_fails_fast_in_one_line(tmp_path: Path) -> None:
    code, out, err = run_cli("audit", "--snapshots", str(tmp_path / "nope"))
    assert (code, out) == (1, "")
    assert err.splitlines() == [f"error: snapshots path {tmp_path / 'nope'} does not exist"]
    code, out, err = run_cli("audit")
    assert code == 1 and err.startswith("error: --snapshots PATH is required") and len(err.splitlines()) == 1


def test_a_fresh_process_runs_quietly(fleet) -> None:
    """Exactly as an operator runs it: a new JVM, no Spark noise on the terminal, JSON on stdout."""
    directory = fleet(brokers=3, topics=8, drift_rate=0.34, seed=1, malformed=2)
    code, out, err = run_cli("audit", "--snapshots", str(directory), "--output", "json", timeout=300)
    assert code == 0, err
    assert err == ""
    assert findings(json.loads(out)) == expected(ground_truth(directory)["snapshots_only"])


def test_json_output_html_and_drift_exit_status(capsys, fleet, tmp_path: Path) -> None:
    directory = fleet(brokers=6, topics=25, drift_rate=0.3, seed=2, pending=1)
    report = tmp_path / "report.html"
    code, out, err = run(
        capsys,
        "--output",
        "json",
        "audit",
        "--snapshots",
        str(directory),
        "--html",
        str(report),
        "--fail-on-drift",
    )
    assert code == 2, err  # drift found, and asked to fail on it
    doc = json.loads(out)  # stdout stays one JSON document
    assert findings(doc) == expected(ground_truth(directory)["snapshots_only"])
    assert err.strip() == f"HTML report written to {report}"
    page = html.unescape(report.read_text())
    assert all(d["entity_path"] in page and d["name"] in page for d in doc["divergent"])


def test_table_output_with_desired_state_file(capsys, fleet) -> None:
    directory = fleet(brokers=6, topics=25, drift_rate=0.3, seed=2, pending=1)
    desired = str(directory / DESIRED_STATE_FILE)
    code, out, err = run(capsys, "audit", "--snapshots", str(directory), "--desired-state", desired)
    assert code == 0, err  # drift, but --fail-on-drift was not asked
    assert "configctl audit" in out and "drift found" in out
    assert "Divergent keys" in out and "Missed changes" in out
    assert f"from {DESIRED_STATE_FILE}" in out and "from zookeeper" not in out  # labelled truthfully


def test_a_clean_fleet_passes_fail_on_drift(capsys, fleet) -> None:
    clean = fleet(brokers=4, topics=15, drift_rate=0.0, seed=9)
    code, out, err = run(capsys, "audit", "--snapshots", str(clean), "--fail-on-drift")
    assert code == 0, err
    assert "no drift" in out


def test_bad_desired_state_file_is_one_line(capsys, fleet, tmp_path: Path) -> None:
    directory = fleet(brokers=6, topics=25, drift_rate=0.3, seed=2, pending=1)
    broken = tmp_path / "desired.json"
    broken.write_text('{"latest_change_number": "soon"}')
    code, out, err = run(capsys, "audit", "--snapshots", str(directory), "--desired-state", str(broken))
    assert (code, out) == (1, "")
    assert err.splitlines() == ["error: latest_change_number must be an integer or null"]
    code, out, err = run(
        capsys,
        "audit",
        "--snapshots",
        str(directory),
        "--desired-state",
        str(broken),
        "--zookeeper",
        "zk:2181",
    )
    assert (code, out) == (1, "") and err.startswith("error: give either --desired-state or --zookeeper")


def test_unreadable_input_is_one_line(capsys) -> None:
    code, out, err = run(capsys, "audit", "--snapshots", "nosuchscheme://bucket/fleet")
    assert (code, out) == (1, "")
    assert len(err.splitlines()) == 1 and err.startswith("error: cannot open snapshots path nosuchscheme://")


def test_simulate_command_is_deterministic(capsys, tmp_path: Path) -> None:
    args = ["--brokers", "4", "--topics", "12", "--drift-rate", "0.25", "--seed", "11", "--malformed", "2"]
    code, out, _ = run(capsys, "audit", "simulate", *args, "--out", str(tmp_path / "a"), "--output", "json")
    assert code == 0
    summary = json.loads(out)
    assert summary["brokers"] == 4 and Path(summary["ground_truth"]).exists()
    code, out, _ = run(capsys, "audit", "simulate", *args, "--out", str(tmp_path / "b"))
    assert code == 0 and "snapshot rows for 4 broker(s)" in out
    assert fingerprint(tmp_path / "a") == fingerprint(tmp_path / "b")
    assert (tmp_path / "a" / "ground_truth.json").read_text() == (
        tmp_path / "b" / "ground_truth.json"
    ).read_text()
    code, _, err = run(
        capsys,
        "audit",
        "simulate",
        "--brokers",
        "3",
        "--changes",
        "2",
        "--pending",
        "3",
        "--out",
        str(tmp_path),
    )
    assert code == 1 and err.startswith("error: pending must be between")


def test_spark_submit_entry_point(capsys, fleet, tmp_path: Path) -> None:
    directory = fleet(brokers=6, topics=25, drift_rate=0.3, seed=2, pending=1)
    saved = tmp_path / "audit.json"
    code = job.main(
        [
            "--snapshots",
            f"file://{directory}",
            "--json-file",
            str(saved),
            "--desired-state",
            str(directory / DESIRED_STATE_FILE),
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert json.loads(out) == json.loads(saved.read_text())
    assert findings(json.loads(out)) == expected(ground_truth(directory)["with_desired_state"])
    assert job.main(["--snapshots", str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().err.startswith("error: snapshots path")


@pytest.mark.zk
def test_missed_changes_from_a_real_zookeeper(capsys, zk, zk_connect, fleet) -> None:
    """The desired state read from ZooKeeper's /config gives the simulator's missed changes."""
    spec = SimulationSpec(brokers=6, topics=25, drift_rate=0.3, seed=2, pending=1)
    directory = fleet(brokers=6, topics=25, drift_rate=0.3, seed=2, pending=1)
    model = build_fleet(spec)
    for path, config in model.desired_config().items():
        zk.create(f"/config/{path}", json.dumps({"version": 1, "config": config}).encode(), makepath=True)
    latest = model.latest_change_number
    zk.create(
        f"/config/changes/config_change_{latest:010d}",
        b'{"version":2,"entity_path":"topics/x"}',
        makepath=True,
    )
    code, out, err = run(
        capsys, "audit", "--zookeeper", zk_connect, "--snapshots", str(directory), "-o", "json"
    )
    assert code == 0, err
    doc = json.loads(out)
    truth = ground_truth(directory)["with_desired_state"]
    assert doc["latest_change_number"] == latest and doc["latest_change_source"] == "zookeeper"
    assert findings(doc) == expected(truth)

    code, out, err = run(capsys, "--zookeeper", zk_connect, "audit", "desired-state")
    assert code == 0, err
    exported = ExpectedState.from_json(json.loads(out))
    assert exported.latest_change_number == latest
    wanted = {
        (path, name)
        for path, config in model.desired_config().items()
        for name in config
        if not (path.startswith("brokers/") and is_sensitive(name))  # encrypted in ZooKeeper: not compared
    }
    assert {(e.entity_path, e.name) for e in exported.expected} == wanted
