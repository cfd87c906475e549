"""The lint before Kafka 4, pure: each finding is Kafka 4.4's own definitions against a stored config."""

from __future__ import annotations

from configctl.entities import Entity, EntityType
from configctl.upgradelint import lint

ORDERS = Entity.of(EntityType.TOPICS, "orders")
BROKER_1 = Entity.named(EntityType.BROKERS, "1")
BROKER_7 = Entity.named(EntityType.BROKERS, "7")
DEFAULT = Entity.named(EntityType.BROKERS, "")


def _kinds(findings) -> list[tuple[str, str, str | None]]:
    return [(f.kind, f.entity.path, f.key) for f in findings]


def test_removed_and_renamed_keys_name_what_to_do() -> None:
    (finding,) = lint([(ORDERS, {"message.timestamp.difference.max.ms": "1000"})])
    assert finding.kind == "removed"
    assert "message.timestamp.before.max.ms and message.timestamp.after.max.ms" in finding.action
    assert (
        "configctl alter --topic orders --delete-config message.timestamp.difference.max.ms" in finding.action
    )
    (plain,) = lint([(DEFAULT, {"log.message.format.version": "3.0"})])
    assert plain.kind == "removed" and "--broker-defaults" in plain.action


def test_a_value_kafka_4_refuses_is_named_with_its_minimum() -> None:
    (finding,) = lint([(ORDERS, {"segment.bytes": "100000"})])
    assert finding.kind == "refused-value"
    assert "100000 is less than Kafka 4.4's minimum 1048576" in finding.line
    assert lint([(ORDERS, {"segment.bytes": "1048576", "retention.ms": "-1"})]) == []


def test_broker_level_min_insync_replicas_only_from_4_1() -> None:
    config = [(BROKER_1, {"min.insync.replicas": "2"}), (DEFAULT, {"min.insync.replicas": "2"})]
    assert _kinds(lint(config, target="4.1")) == [("broker-min-isr", "brokers/1", "min.insync.replicas")]
    assert lint(config, target="4.0") == []


def test_per_broker_config_of_a_broker_that_does_not_run() -> None:
    findings = lint([(BROKER_7, {"log.cleaner.threads": "2"})], running_brokers={1, 2})
    assert _kinds(findings) == [("unregistered-broker", "brokers/7", None)]
    assert lint([(BROKER_7, {"log.cleaner.threads": "2"})], running_brokers=None) == []


def test_passwords_read_in_zookeeper_will_be_in_clear() -> None:
    config = [(BROKER_1, {"listener.name.internal.ssl.key.password": "cipher-bytes-xyz"})]
    (finding,) = lint(config, encrypted_passwords=True)
    assert finding.kind == "clear-password" and "cipher-bytes-xyz" not in finding.line
    assert lint(config, encrypted_passwords=False) == []


def test_quota_entities_are_not_linted() -> None:
    assert lint([(Entity.named(EntityType.USERS, "alice"), {"producer_byte_rate": "1"})]) == []
