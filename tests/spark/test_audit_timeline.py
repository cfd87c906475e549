"""``audit --timeline`` and ``audit --at`` in real local Spark, over applied logs written by real
managers (DynamicConfigManager + AppliedLog, as a listener runs them) at known moments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from configctl import applied
from configctl.audit.timeline import Window, audit_at, shown, timeline
from configctl.cli.main import main
from configctl.entities import Entity
from configctl.listener.appliedlog import AppliedLog
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.records import EntityRead
from configctl.travel.timeline import intervals
from configctl.znodes import encode_entity_config

pytestmark = pytest.mark.spark

SECRET = "hunter2-in-clear"


class Broker:
    """One broker's manager and applied log in its own state directory, on a clock the test moves."""

    def __init__(self, root: Path, broker_id: int) -> None:
        self.now = 0.0
        self.manager = DynamicConfigManager(
            broker_id, {"broker.id": str(broker_id), "log.retention.hours": "168"}
        )
        self.log = AppliedLog(root / f"state-{broker_id}", broker_id, fsync=False, clock=lambda: self.now)

    def load(self, at_s: float) -> None:
        self.now = at_s
        result = self.manager.reconcile([], None, initial=True)
        self.log.batch(result, {}, full_load=True, up_to=self.manager.last_applied_change, loaded={})

    def apply(self, at_s: float, path: str, config: dict[str, str], number: int) -> None:
        self.now = at_s
        entity = Entity.from_path(path)
        before = {path: self.manager.effective(entity)}
        read = EntityRead(entity, encode_entity_config(config), number)
        self.log.batch(self.manager.apply([read], number), before)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three brokers: a topic change broker 3 applies late, a broker default broker 2 misses while
    down (restarted at 500 s), a per-broker override (never a disagreement), a secret at
    ``<default>`` two brokers hold differently (still open), and a torn last line."""
    root = tmp_path_factory.mktemp("applied-fleet")
    one, two, three = (Broker(root, b) for b in (1, 2, 3))
    for broker in (one, two, three):
        broker.load(100)
    for broker, at in ((one, 200), (two, 200), (three, 260)):
        broker.apply(at, "topics/orders", {"retention.ms": "3600000"}, 1)
    one.apply(300, "brokers/1", {"log.retention.ms": "1000"}, 2)
    for broker in (one, three):
        broker.apply(400, "brokers/<default>", {"log.cleaner.threads": "4"}, 3)
    two.load(500)  # broker 2 was down from 350 s: its restart loads change 3 without logging it
    two.apply(600, "brokers/<default>", {"log.cleaner.threads": "4"}, 3)
    secret = "listener.name.internal.ssl.key.password"
    one.apply(700, "brokers/<default>", {secret: SECRET}, 4)
    two.apply(700, "brokers/<default>", {secret: SECRET}, 4)
    three.apply(800, "brokers/<default>", {secret: SECRET + "-other"}, 5)
    with three.log.path.open("a", encoding="utf-8") as handle:
        handle.write('{"v":1,"kind":"applied","broker_id":3,"change_num')  # SIGKILL mid-write
    return root


def fleet_records(root: Path) -> list[applied.Record]:
    return [r for state in sorted(root.iterdir()) for r in applied.read(state)]


def test_the_timeline_in_spark_is_the_pure_rule_and_the_known_truth(spark: Any, fleet: Path) -> None:
    doc = timeline(spark, str(fleet), Window())
    assert (doc["brokers"], doc["skipped_lines"], doc["intervals_truncated"]) == (3, 1, 0)
    assert doc["intervals"] == [shown(i, None) for i in intervals(fleet_records(fleet))]
    summary = [
        (i["entity_path"], i["key"], i["start_ms"], i["end_ms"], i["opened_by_change"], i["closed_by_change"])
        for i in doc["intervals"]
    ]
    threads, password = "log.cleaner.threads", "listener.name.internal.ssl.key.password"
    assert summary == [
        ("topics/orders", "retention.ms", 200_000, 260_000, 1, 1),  # broker 3 applied 60 s late
        # broker 2's log is silent on the key until its restart (500 s, which reached change 1);
        # its apply of change 3 at 600 s says it ran the default (null at <default>) from then
        ("brokers/<default>", threads, 500_000, 600_000, 1, 3),
        # change 4 writes <default> anew without the key: brokers 1 and 2 drop it, 3 follows at 800 s
        ("brokers/<default>", threads, 700_000, 800_000, 4, 5),
        ("brokers/<default>", password, 800_000, None, 5, None),  # still open
    ]
    assert doc["intervals"][0]["duration_ms"] == 60_000
    assert doc["intervals"][0]["values"] == {"3600000": [1, 2], "604800000": [3]}
    assert doc["intervals"][1]["values"] == {"4": [1, 3], "null": [2]}
    assert doc["intervals"][2]["values"] == {"4": [3], "null": [1, 2]}


def test_an_open_interval_and_the_window(spark: Any, fleet: Path) -> None:
    late = timeline(spark, str(fleet), Window(since_ms=800_001))
    assert [(i["start_ms"], i["end_ms"], i["duration_ms"]) for i in late["intervals"]] == [
        (800_000, None, None)
    ]
    early = timeline(spark, str(fleet), Window(since_ms=250_000, until_ms=550_000))
    assert [(i["start_ms"], i["end_ms"]) for i in early["intervals"]] == [
        (200_000, 260_000),
        (500_000, 600_000),
    ]
    assert timeline(spark, str(fleet), Window(until_ms=199_999))["intervals"] == []
    cut = timeline(spark, str(fleet), Window(), limit=1)
    assert (len(cut["intervals"]), cut["intervals_truncated"]) == (1, 3)


def test_secrets_never_in_clear(spark: Any, fleet: Path, tmp_path: Path) -> None:
    doc = timeline(spark, str(fleet), Window())
    assert SECRET not in json.dumps(doc)
    values = doc["intervals"][3]["values"]
    assert all(v.startswith("sha256:") for v in values) and sorted(values.values()) == [[1, 2], [3]]
    # a log written by hand with a secret in clear: reported as a digest all the same
    hand = tmp_path / "state-9" / "applied"
    hand.mkdir(parents=True)
    lines = [
        {"kind": "load", "broker_id": b, "change_number": 0, "entity_path": None, "applied_at_ms": 1}
        for b in (8, 9)
    ] + [
        {
            "kind": "applied",
            "broker_id": 9,
            "change_number": 1,
            "entity_path": "topics/t",
            "applied_at_ms": 5,
            "keys": [
                {
                    "key": "sasl.jaas.config",
                    "old": {"value": None, "source": None},
                    "new": {"value": SECRET, "source": "DYNAMIC_TOPIC_CONFIG"},
                    "stored": SECRET,
                }
            ],
        },
        {
            "kind": "applied",
            "broker_id": 8,
            "change_number": 2,
            "entity_path": "topics/t",
            "applied_at_ms": 9,
            "keys": [
                {
                    "key": "sasl.jaas.config",
                    "old": {"value": None, "source": None},
                    "new": {"value": "other", "source": "DYNAMIC_TOPIC_CONFIG"},
                    "stored": "other",
                }
            ],
        },
    ]
    for line in lines:
        broker = line["broker_id"]
        path = hand / applied.segment_name(broker, 1)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"v": 1, "keys": [], "problems": [], **line}) + "\n")
    shown = json.dumps(timeline(spark, str(tmp_path), Window()))
    assert SECRET not in shown and '"other"' not in shown and "sha256:" in shown


def test_the_drift_report_as_of_a_moment(spark: Any, fleet: Path) -> None:
    during = audit_at(spark, str(fleet), 450_000)  # broker 2 down, behind change 3
    assert (during["at_ms"], during["brokers"], during["uncovered_brokers"]) == (450_000, 3, [])
    assert [b["broker_id"] for b in during["stale_brokers"]] == [2]
    after = audit_at(spark, str(fleet), 650_000)
    assert after["stale_brokers"] == []
    assert "log.cleaner.threads" not in {d["name"] for d in after["divergent"]}  # broker 2 caught up
    before = audit_at(spark, str(fleet), 50_000)  # no log reaches back: nothing to compare
    assert (before["brokers"], before["uncovered_brokers"]) == (0, [1, 2, 3])


def test_the_command(spark: Any, fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "audit",
                "--snapshots",
                str(fleet),
                "--timeline",
                "--since",
                "1970-01-01T00:13:21Z",
                "-o",
                "json",
            ]
        )
    out, err = capsys.readouterr()
    assert exited.value.code == 0, err
    assert [i["start_ms"] for i in json.loads(out)["intervals"]] == [800_000]
    with pytest.raises(SystemExit) as exited:
        main(["audit", "--snapshots", str(fleet), "--timeline", "--at", "-1h"])
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and len(err.strip().splitlines()) == 1


def test_the_html_timeline_reads_at_a_glance(spark: Any, fleet: Path, tmp_path: Path) -> None:
    from configctl.audit.report import render_html
    from configctl.audit.timeline_view import write_timeline_html

    doc = timeline(spark, str(fleet), Window())
    page = write_timeline_html(doc, tmp_path / "t.html", source="<fleet>").read_text()
    assert page.count('class="tl-row"') == 3  # one row per entity and key
    assert page.count('class="tl-bar open"') == 1 and page.count('class="tl-bar"') == 3
    assert "1970-01-01T00:03:20.000Z" in page and "1m 00s" in page and "1-2" in page
    assert "&lt;fleet&gt;" in page and "<fleet>" not in page and SECRET not in page
    # the audit report shows the same block for a document carrying intervals
    audit_doc = audit_at(spark, str(fleet), 650_000)
    report = render_html({**audit_doc, "intervals": doc["intervals"]})
    assert 'id="timeline"' in report and report.count('class="tl-row"') == 3
    assert 'id="timeline"' not in render_html(audit_doc)


def test_a_directory_without_applied_logs_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for form in (["--timeline"], ["--at", "-1h"]):
        with pytest.raises(SystemExit) as exited:
            main(["audit", "--snapshots", str(tmp_path), *form])
        _, err = capsys.readouterr()
        assert exited.value.code == 1 and err.startswith(f"error: no applied log under {tmp_path}")
        assert len(err.strip().splitlines()) == 1


def test_the_simulated_days_give_their_known_timeline(spark: Any, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["audit", "simulate", "--brokers", "5", "--applied-days", "1", "--out", str(tmp_path)])
    assert exited.value.code == 0, capsys.readouterr().err
    truth = json.loads((tmp_path / "timeline_truth.json").read_text())
    doc = timeline(spark, str(tmp_path), Window())  # the snapshots beside the logs are not read
    got = [(i["entity_path"], i["start_ms"], i["end_ms"], i["opened_by_change"]) for i in doc["intervals"]]
    assert got == [(t["entity_path"], t["start_ms"], t["end_ms"], t["change"]) for t in truth]
    assert len(got) == 24 and got[-1][2] is None and doc["brokers"] == 5


def test_the_spark_submit_entry_point(spark: Any, fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from configctl.audit import job

    assert job.main(["--snapshots", str(fleet), "--timeline", "--until", "1970-01-01T00:04:00Z"]) == 0
    out, _ = capsys.readouterr()
    assert [i["start_ms"] for i in json.loads(out)["intervals"]] == [200_000]
    assert job.main(["--snapshots", str(fleet), "--at", "1970-01-01T00:07:30Z"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["at_ms"] == 450_000 and json.loads(out)["stale_brokers"][0]["broker_id"] == 2
