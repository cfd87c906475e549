"""Broker configs of running brokers go through the brokers (``--bootstrap-server``).

Kafka refuses ZooKeeper writes of a running broker's config because the broker must validate it;
with ``--bootstrap-server`` configctl sends them through IncrementalAlterConfigs after its own
validation, and still records history, honours ``--dry-run``, ``--if-version`` and ``--wait``,
and reports a refusal with the broker's own reason.
"""

from __future__ import annotations

import json

import pytest
from conftest import broker_configs_restored, describe_stored
from helpers import wait_for

pytestmark = pytest.mark.kafka


def via_broker(fleet, *args: str):
    return fleet.cli("--bootstrap-server", fleet.bootstrap, *args)


def history(fleet, *selector: str) -> list[dict]:
    result = fleet.cli("history", *selector, "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def reported(fleet, key: str, broker_id: int = 1):
    with fleet.admin() as admin:
        return admin.describe_broker(broker_id, [key])[key]


def test_a_running_brokers_config_goes_through_it_with_history_and_wait(kafka_one):
    with broker_configs_restored(kafka_one):
        result = via_broker(
            kafka_one, "alter", "--broker", "1", "--add-config", "log.cleaner.threads=2",
            "--reason", "OPS-7", "--wait", "30", "-o", "json",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr  # no --allow-running-brokers: the broker judged it
        document = json.loads(result.stdout)
        assert [b["status"] for b in document["rollout"]["brokers"]] == ["applied"]
        assert document["rollout"]["change_number"] is not None
        assert (
            reported(kafka_one, "log.cleaner.threads").value,
            reported(kafka_one, "log.cleaner.threads").source,
        ) == (
            "2",
            "DYNAMIC_BROKER_CONFIG",
        )
        newest = history(kafka_one, "--broker", "1")[0]
        assert (newest["reason"], newest["config"]["log.cleaner.threads"]) == ("OPS-7", "2")


def test_a_reconfiguration_the_broker_refuses_is_its_reason_and_nothing_changes(kafka_one):
    with broker_configs_restored(kafka_one):
        before = describe_stored(kafka_one, "--broker", "1")
        records = len(history(kafka_one, "--broker", "1"))
        result = via_broker(kafka_one, "alter", "--broker", "1", "--add-config", "log.cleaner.threads=9")
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert "the broker refused" in result.stderr and "log.cleaner" in result.stderr
        assert describe_stored(kafka_one, "--broker", "1") == before
        assert len(history(kafka_one, "--broker", "1")) == records
        assert reported(kafka_one, "log.cleaner.threads").value == "1"


def test_dry_run_asks_the_broker_and_writes_nothing(kafka_one):
    with broker_configs_restored(kafka_one):
        before = describe_stored(kafka_one, "--broker", "1")
        refused = via_broker(
            kafka_one, "alter", "--broker", "1", "--add-config", "log.cleaner.threads=9", "--dry-run"
        )
        assert refused.returncode == 1 and "the broker refused" in refused.stderr
        accepted = via_broker(
            kafka_one, "alter", "--broker", "1", "--add-config", "log.cleaner.threads=2", "--dry-run"
        )
        assert accepted.returncode == 0, accepted.stderr
        assert describe_stored(kafka_one, "--broker", "1") == before


def test_if_version_is_checked_before_the_broker_is_asked(kafka_one):
    with broker_configs_restored(kafka_one):
        stale = via_broker(
            kafka_one,
            "alter",
            "--broker",
            "1",
            "--add-config",
            "log.cleaner.threads=2",
            "--if-version",
            "999",
        )
        assert stale.returncode == 5 and "--if-version" in stale.stderr


def test_the_cluster_default_goes_through_a_broker_and_reaches_it(kafka_one):
    with broker_configs_restored(kafka_one):
        result = via_broker(
            kafka_one, "alter", "--broker-defaults", "--add-config", "log.retention.ms=5400000"
        )
        assert result.returncode == 0, result.stderr
        wait_for(
            lambda: reported(kafka_one, "log.retention.ms").source == "DYNAMIC_DEFAULT_BROKER_CONFIG",
            timeout=30,
            message="the default applied",
        )
        assert describe_stored(kafka_one, "--broker-defaults") == {"log.retention.ms": "5400000"}
        assert history(kafka_one, "--broker-defaults")[0]["config"] == {"log.retention.ms": "5400000"}


def test_other_entities_still_go_to_zookeeper_in_one_transaction(kafka_one, unique):
    topic = unique("routed")
    kafka_one.create_topics(topic)
    result = via_broker(
        kafka_one, "alter", "--topic", topic, "--add-config", "retention.ms=7200000", "--wait", "30"
    )
    assert result.returncode == 0, result.stderr
    assert describe_stored(kafka_one, "--topic", topic) == {"retention.ms": "7200000"}


def test_a_canary_through_the_broker_is_promoted(kafka_one):
    with broker_configs_restored(kafka_one):
        result = via_broker(
            kafka_one, "alter", "--broker-defaults", "--add-config", "log.cleaner.backoff.ms=20000",
            "--canary", "1", "--soak", "1s", "--wait", "30",
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        assert describe_stored(kafka_one, "--broker-defaults") == {"log.cleaner.backoff.ms": "20000"}
        assert "log.cleaner.backoff.ms" not in describe_stored(kafka_one, "--broker", "1")
        wait_for(
            lambda: reported(kafka_one, "log.cleaner.backoff.ms").source == "DYNAMIC_DEFAULT_BROKER_CONFIG",
            timeout=30,
            message="the promoted default",
        )


def test_apply_in_waves_sends_the_running_brokers_configs_through_them(kafka_one, unique, tmp_path):
    topic = unique("waves")
    kafka_one.create_topics(topic)
    desired = tmp_path / "desired.yaml"
    desired.write_text(
        f"topics:\n  {topic}: {{retention.ms: 7200000}}\nbrokers:\n  '1': {{log.cleaner.threads: 2}}\n"
    )
    with broker_configs_restored(kafka_one):
        result = via_broker(
            kafka_one,
            "apply",
            "-f",
            str(desired),
            "--yes",
            "--waves",
            "2",
            "--wait",
            "30",
            "--reason",
            "waves",
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert describe_stored(kafka_one, "--broker", "1")["log.cleaner.threads"] == "2"
        assert describe_stored(kafka_one, "--topic", topic) == {"retention.ms": "7200000"}
        assert history(kafka_one, "--broker", "1")[0]["reason"].endswith(
            ": waves"
        )  # the rollout names its wave
        wait_for(
            lambda: reported(kafka_one, "log.cleaner.threads").value == "2", timeout=30, message="applied"
        )


def test_a_password_encrypted_for_zookeeper_is_not_sent_to_a_broker(kafka_one, tmp_path):
    # apply encrypts a broker password for ZooKeeper; a broker takes it in clear: refused, unwritten
    desired = tmp_path / "desired.yaml"
    desired.write_text("brokers:\n  '1': {listener.name.plaintext.ssl.key.password: s3cret}\n")
    with broker_configs_restored(kafka_one):
        before = describe_stored(kafka_one, "--broker", "1")
        result = via_broker(
            kafka_one, "apply", "-f", str(desired), "--yes", "--password-encoder-secret", "enc"
        )
        assert result.returncode == 1 and "encrypted for ZooKeeper" in result.stderr, (
            result.stdout + result.stderr
        )
        assert describe_stored(kafka_one, "--broker", "1") == before


def test_the_cluster_id_read_from_zookeeper_is_the_one_the_broker_reports(kafka_one):
    """``/cluster/id`` as a real broker wrote it decodes to the id DescribeCluster answers with."""
    with kafka_one.admin() as admin:
        reported_id = admin.cluster_id()
    with kafka_one.store() as store:
        assert store.cluster_id() == reported_id
    assert reported_id
