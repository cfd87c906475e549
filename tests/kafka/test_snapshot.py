"""``configctl snapshot --bootstrap-server``: a real fleet's snapshot lines, straight from its brokers.

No configctl listener is asked: every line is what broker 1 reports through the Admin API, and
``configctl audit`` reads the files as it reads a listener's.
"""

from __future__ import annotations

import json

import pytest

from configctl import snapshot

pytestmark = pytest.mark.kafka


def test_snapshot_writes_what_the_broker_reports_and_the_audit_reads_it(kafka_one, unique, tmp_path):
    topic, user = unique("snap"), unique("snapuser")
    kafka_one.create_topics(topic)
    assert kafka_one.cli("alter", "--topic", topic, "--add-config", "retention.ms=7200000").returncode == 0
    assert kafka_one.cli("alter", "--user", user, "--add-config", "producer_byte_rate=4096").returncode == 0
    out = tmp_path / "snapshots"

    result = kafka_one.cli(
        "--bootstrap-server", kafka_one.bootstrap, "snapshot", "--out", str(out), "-o", "json"
    )

    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [b["broker_id"] for b in document["brokers"]] == [1]
    lines = [snapshot.decode(line) for line in (out / "broker-1.jsonl").read_text().splitlines()]
    assert document["lines"] == len(lines)
    by_key = {(line.entity_path, line.name): line for line in lines}
    with kafka_one.admin() as admin:
        reported = admin.describe_broker(1)
    assert {name for path, name in by_key if path == "brokers/1"} == set(reported)
    assert by_key[("brokers/1", "log.retention.hours")].value == reported["log.retention.hours"].value
    assert by_key[("brokers/1", "log.retention.hours")].source == "STATIC_BROKER_CONFIG"
    retention = by_key[(f"topics/{topic}", "retention.ms")]
    assert (retention.value, retention.source) == ("7200000", "DYNAMIC_TOPIC_CONFIG")
    quota = by_key[(f"users/{user}", "producer_byte_rate")]
    assert (quota.value, quota.source, quota.change_number) == ("4096", f"users/{user}", 0)

    audit = kafka_one.cli("audit", "--snapshots", str(out), "-o", "json", timeout=300)
    assert audit.returncode == 0, audit.stderr
    report = json.loads(audit.stdout)
    assert (report["brokers"], report["rows"]) == (1, len(lines))


def test_snapshot_without_a_bootstrap_server_is_one_line(kafka_one, tmp_path):
    result = kafka_one.cli("snapshot", "--out", str(tmp_path / "x"))
    assert result.returncode == 1 and "--bootstrap-server" in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_snapshot_of_brokers_that_do_not_answer_is_one_line(kafka_one, tmp_path, free_port):
    result = kafka_one.cli(
        "--bootstrap-server", f"127.0.0.1:{free_port}", "snapshot", "--out", str(tmp_path / "x")
    )
    assert (
        result.returncode == 3
        and result.stderr.startswith("error: no Kafka broker at")
        and result.stderr.count("\n") == 1
    )
