"""configctl and three real Kafka 3.9 brokers on a three-node ZooKeeper ensemble.

A broker default reaches every broker and a per-broker config only its own (each broker asked
with DescribeConfigs for itself), also while one ZooKeeper server (the leader) is dead; and
``describe --effective --broker N`` is what broker N reports, for each N.
"""

from __future__ import annotations

import json

import pytest
from conftest import KafkaFleet, broker_configs_restored, effective
from helpers import wait_for
from test_kafka_writes import agree, reported_broker

pytestmark = pytest.mark.kafka

BROKERS = (1, 2, 3)


def alter_brokers(fleet: KafkaFleet, *args: str) -> dict:
    """``alter ... --allow-running-brokers --wait``: committed, and every live listener applied it."""
    result = fleet.cli("alter", *args, "--allow-running-brokers", "--wait", "60", "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    statuses = {b["broker_id"]: b["status"] for b in document["rollout"]["brokers"]}
    assert statuses == dict.fromkeys(BROKERS, "applied")
    return document


def reports(fleet: KafkaFleet, broker_id: int, key: str) -> tuple[str | None, str]:
    """(value, source) of ``key`` as broker ``broker_id`` reports it for itself."""
    with fleet.admin() as admin:
        entry = admin.describe_broker(broker_id, [key])[key]
    return entry.value, entry.source


def wait_reported(fleet: KafkaFleet, broker_id: int, key: str, expected: tuple[str, str]) -> None:
    wait_for(
        lambda: reports(fleet, broker_id, key) == expected,
        timeout=30,
        interval=0.2,
        message=f"broker {broker_id} reports {key}={expected}",
    )


def test_a_broker_default_reaches_all_three_brokers(kafka_ensemble):
    fleet = kafka_ensemble
    with broker_configs_restored(fleet):
        alter_brokers(fleet, "--broker-defaults", "--add-config", "log.cleaner.backoff.ms=25000")
        for broker_id in BROKERS:
            wait_reported(
                fleet, broker_id, "log.cleaner.backoff.ms", ("25000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
            )
            agree(lambda b=broker_id: effective(fleet, b), lambda b=broker_id: reported_broker(fleet, b))


def test_a_per_broker_config_reaches_only_its_broker(kafka_ensemble):
    fleet = kafka_ensemble
    with broker_configs_restored(fleet):
        alter_brokers(fleet, "--broker", "2", "--add-config", "log.cleaner.threads=2")
        wait_reported(fleet, 2, "log.cleaner.threads", ("2", "DYNAMIC_BROKER_CONFIG"))
        # every listener applied the change (--wait), so the other brokers had their chance too
        for broker_id in (1, 3):
            assert reports(fleet, broker_id, "log.cleaner.threads") == ("1", "STATIC_BROKER_CONFIG")
        for broker_id in BROKERS:
            agree(lambda b=broker_id: effective(fleet, b), lambda b=broker_id: reported_broker(fleet, b))
        assert effective(fleet, 1)["log.cleaner.threads"]["value"] == "1"
        assert effective(fleet, 2)["log.cleaner.threads"]["value"] == "2"


def test_with_the_zookeeper_leader_dead_a_write_still_reaches_every_broker(kafka_ensemble):
    fleet = kafka_ensemble
    servers = fleet.zk_server
    assert servers is not None
    leader = next(node.id for node in servers.status().nodes if node.mode == "leader")
    with broker_configs_restored(fleet):
        servers.kill_node(leader)
        try:
            servers.wait_serving(timeout=60)  # the two left elect a new leader
            assert sum(node.alive for node in servers.status().nodes) == 2
            document = alter_brokers(
                fleet,
                "--broker-defaults",
                "--add-config",
                "log.cleaner.backoff.ms=35000,log.retention.ms=5400000",
            )
            assert document["changed"] is True
            for broker_id in BROKERS:
                wait_reported(
                    fleet, broker_id, "log.retention.ms", ("5400000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
                )
                wait_reported(
                    fleet, broker_id, "log.cleaner.backoff.ms", ("35000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
                )
                agree(lambda b=broker_id: effective(fleet, b), lambda b=broker_id: reported_broker(fleet, b))
        finally:
            servers.start_node(leader, timeout=60)
            servers.wait_serving(timeout=60)
