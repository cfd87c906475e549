"""configctl and a real Kafka 3.9 broker on a TLS + SASL ZooKeeper (``zookeeper.set.acl=true``).

The broker logs in to ZooKeeper as the same SASL user the CLI uses (``fleet.env``). configctl's
writes must get the ACLs Kafka's own writes get (that user may do everything; the world may read,
except under the sensitive roots ``/config/users`` and ``/config/brokers``), the broker must read
and report them, and what Kafka writes through the broker must be read by configctl.
"""

from __future__ import annotations

import json

import pytest
from conftest import KafkaFleet, broker_configs_restored, describe_stored, effective
from helpers import wait_for
from kazoo.security import ACL, Id, Permissions
from test_kafka_writes import (
    agree,
    kafka_configs,
    kafka_notified,
    listener_applied,
    plan_of,
    reported_broker,
    reported_topic,
)

from configctl.entities import Entity
from configctl.znodes import CHANGES_PATH

pytestmark = pytest.mark.kafka


def acls(fleet: KafkaFleet, path: str) -> set[tuple[int, str, str]]:
    with fleet.store() as store:
        found, _ = store.session.client.get_acls(path)
    return {(acl.perms, acl.id.scheme, acl.id.id) for acl in found}


def kafka_acls(fleet: KafkaFleet, *, sensitive: bool) -> set[tuple[int, str, str]]:
    """What ``zookeeper.set.acl=true`` gives a node: the SASL user everything, the world READ unless sensitive."""
    user = fleet.env["CONFIGCTL_ZK_SASL"].removeprefix("digest:")
    expected = [ACL(Permissions.ALL, Id("sasl", user))]
    if not sensitive:
        expected.append(ACL(Permissions.READ, Id("world", "anyone")))
    return {(acl.perms, acl.id.scheme, acl.id.id) for acl in expected}


def notification_path(number: int) -> str:
    return f"{CHANGES_PATH}/config_change_{number:010d}"


def test_configctl_writes_get_kafka_s_acls_and_the_broker_reports_them(kafka_secure, unique):
    fleet = kafka_secure
    topic, user, scram_user = unique("orders"), unique("alice"), unique("svc")
    fleet.create_topics(topic)
    writes = [
        ("--topic", topic, "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]"),
        ("--user", user, "--add-config", "consumer_byte_rate=2048,producer_byte_rate=1048576"),
        ("--user", scram_user, "--add-config", "SCRAM-SHA-256=[iterations=8192,password=s3cret-pw]"),
    ]
    with broker_configs_restored(fleet):
        numbers = []
        for args in writes:
            result = fleet.cli("alter", *args, "-o", "json")
            assert result.returncode == 0, result.stderr
            numbers.append(json.loads(result.stdout)["change_number"])
        result = fleet.cli(
            "alter", "--broker-defaults", "--add-config", "log.cleaner.backoff.ms=25000",
            "--allow-running-brokers", "-o", "json",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        numbers.append(json.loads(result.stdout)["change_number"])

        # the ACLs Kafka's zookeeper.set.acl gives: world-readable unless under users/ or brokers/
        public, secret = kafka_acls(fleet, sensitive=False), kafka_acls(fleet, sensitive=True)
        assert acls(fleet, f"/config/users/{user}") == secret
        assert acls(fleet, f"/config/users/{scram_user}") == secret
        assert acls(fleet, "/config/brokers/<default>") == secret
        assert acls(fleet, f"/configctl/history/users/{user}") == secret  # it holds the same values
        assert acls(fleet, f"/configctl/history/topics/{topic}") == public
        assert acls(fleet, f"/config/topics/{topic}") == public  # Kafka created it with the topic
        for number in numbers:
            assert acls(fleet, notification_path(number)) == public

        # the broker, logged in as the same SASL user, read every one of them
        agree(lambda: effective(fleet, 1, "--topic", topic), lambda: reported_topic(fleet, topic))
        reported = reported_topic(fleet, topic)
        assert (reported["retention.ms"]["value"], reported["retention.ms"]["source"]) == (
            "86400000",
            "DYNAMIC_TOPIC_CONFIG",
        )
        assert reported["cleanup.policy"]["value"] == "compact,delete"
        agree(lambda: effective(fleet, 1), lambda: reported_broker(fleet, 1))
        reported = reported_broker(fleet, 1)
        assert (
            reported["log.cleaner.backoff.ms"]["value"],
            reported["log.cleaner.backoff.ms"]["source"],
        ) == (
            "25000",
            "DYNAMIC_DEFAULT_BROKER_CONFIG",
        )
        with fleet.admin() as admin:
            wait_for(
                lambda: (
                    admin.client_quotas(Entity.of("users", user))
                    == {"consumer_byte_rate": "2048", "producer_byte_rate": "1048576"}
                ),
                timeout=30,
                message="the broker reports the user quota",
            )
            wait_for(
                lambda: admin.scram_credentials(scram_user) == {"SCRAM-SHA-256": 8192},
                timeout=30,
                message="the broker reports the SCRAM credential",
            )
        listener_applied(fleet, max(numbers))


def test_kafka_s_own_writes_through_the_broker_are_read_by_configctl(kafka_secure, unique, tmp_path):
    fleet = kafka_secure
    topic, user, scram_user = unique("payments"), unique("bob"), unique("app")
    fleet.create_topics(topic)
    kafka_configs(
        fleet,
        "--entity-type",
        "topics",
        "--entity-name",
        topic,
        "--alter",
        "--add-config",
        "retention.ms=3600000",
    )
    kafka_configs(
        fleet,
        "--entity-type",
        "users",
        "--entity-name",
        user,
        "--alter",
        "--add-config",
        "consumer_byte_rate=4096",
    )
    kafka_configs(
        fleet,
        *("--entity-type", "users", "--entity-name", scram_user, "--alter"),
        *("--add-config", "SCRAM-SHA-512=[iterations=8192,password=kafka-pw]"),
    )
    number = kafka_notified(fleet, f"users/{scram_user}")

    # Kafka's nodes have the ACLs configctl gives its own (test above)
    assert acls(fleet, f"/config/users/{user}") == kafka_acls(fleet, sensitive=True)
    assert acls(fleet, notification_path(number)) == kafka_acls(fleet, sensitive=False)

    assert describe_stored(fleet, "--topic", topic) == {"retention.ms": "3600000"}
    assert describe_stored(fleet, "--user", user) == {"consumer_byte_rate": "4096"}
    assert describe_stored(fleet, "--user", scram_user) == {"SCRAM-SHA-512": "******"}
    agree(lambda: effective(fleet, 1, "--topic", topic), lambda: reported_topic(fleet, topic))
    assert effective(fleet, 1, "--user", user)["consumer_byte_rate"]["value"] == "4096"
    code, plan = plan_of(
        fleet, tmp_path, f"users:\n  {scram_user}: {{SCRAM-SHA-512: [iterations=8192, password=kafka-pw]}}\n"
    )
    assert (code, plan["changes"]) == (0, 0)  # configctl checked the password against Kafka's credential
    listener_applied(fleet, number)

    with broker_configs_restored(fleet):
        kafka_configs(
            fleet,
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--alter",
            "--add-config",
            "log.cleaner.threads=2",
        )
        listener_applied(fleet, kafka_notified(fleet, "brokers/1"))
        assert acls(fleet, "/config/brokers/1") == kafka_acls(fleet, sensitive=True)
        assert describe_stored(fleet, "--broker", "1").get("log.cleaner.threads") == "2"
        agree(lambda: effective(fleet, 1), lambda: reported_broker(fleet, 1))
        assert reported_broker(fleet, 1)["log.cleaner.threads"]["source"] == "DYNAMIC_BROKER_CONFIG"
