"""Kafka 4's config facts (configctl/data/kafka-4.4-configs.json) and the key rules that differ by release.

The facts file is generated from Kafka 4.4.0's own jars (scripts/generate_kafka4_facts.py); a test
here regenerates it where the jars are present and checks the committed file is exactly that.
What a real 4.4 broker does with these keys is shown in tests/kraft/test_kraft_validation.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from configctl import catalogue, validation, writer
from configctl.entities import Entity, EntityType
from configctl.errors import ValidationFailed
from configctl.handlers.validate import validate_config

ROOT = Path(__file__).resolve().parents[2]
LIBS = ROOT / "build" / "kafka4" / "libs"
TOPIC = Entity.of(EntityType.TOPICS, "orders")
BROKER_DEFAULT = Entity.named(EntityType.BROKERS, "")
BROKER_1 = Entity.named(EntityType.BROKERS, "1")


def test_the_facts_are_kafka_4_4_0s_own_and_say_where_they_come_from():
    facts = catalogue.kafka4_facts()
    assert facts["kafka_version"] == "4.4.0"
    assert catalogue.kafka4_release() == "4.4"
    assert "KafkaConfigFacts.java" in facts["source"]
    # a few facts any reader can check against Kafka 4.4's documentation
    assert facts["topics"]["min.insync.replicas"]["type"] == "int"
    assert facts["brokers"]["min.insync.replicas"]["update_mode"] == "cluster-wide"
    assert facts["brokers"]["listeners"]["update_mode"] == "per-broker"
    assert facts["brokers"]["process.roles"]["update_mode"] == "read-only"


def test_the_removed_keys_are_the_3_9_keys_kafka_4_no_longer_defines():
    for etype in (EntityType.TOPICS, EntityType.BROKERS):
        removed = catalogue.removed_in_kafka4(etype)
        kafka4 = set(catalogue.kafka4_facts()[etype.value])
        assert removed == set(catalogue.keys(etype)) - kafka4
    assert {"message.format.version", "message.downconversion.enable"} <= catalogue.removed_in_kafka4(
        EntityType.TOPICS
    )
    assert {
        "log.message.format.version",
        "log.message.downconversion.enable",
        "zookeeper.connect",
    } <= catalogue.removed_in_kafka4(EntityType.BROKERS)
    assert not catalogue.removed_in_kafka4(EntityType.USERS)


def test_kafka4_only_keys_are_documented_keys_the_3_9_schemas_lack():
    only = catalogue.kafka4_only_keys(EntityType.TOPICS)
    assert "remote.copy.lag.ms" in only
    assert "internal.segment.bytes" not in only  # Kafka's internal key is not for operators
    assert not set(only) & set(catalogue.keys(EntityType.TOPICS))


@pytest.mark.skipif(
    not LIBS.is_dir() or shutil.which("java") is None, reason="needs Kafka 4.4's jars (make kafka)"
)
def test_the_committed_facts_are_what_the_generator_makes_from_the_jars(tmp_path):
    out = tmp_path / "facts.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_kafka4_facts.py"), str(LIBS), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    committed = ROOT / "configctl" / "data" / catalogue.KAFKA4_FACTS
    assert json.loads(out.read_text()) == json.loads(committed.read_text())


@pytest.mark.parametrize("release", [None, "3.9", "3.x"])
def test_on_kafka_3_nothing_changes(release):
    config = {"message.format.version": "3.0", "remote.copy.lag.ms": "1000"}
    assert validate_config(TOPIC, config, release=release) == validate_config(TOPIC, config)
    problems: list[str] = []
    assert not validation.check_release_key(TOPIC, "message.format.version", "3.0-IV1", release, problems)
    assert problems == []


@pytest.mark.parametrize("release", ["4.4", "4.0", "4.x", "5.1"])
def test_a_key_kafka_4_removed_is_refused_on_kafka_4_in_one_sentence_naming_the_release(release):
    problems = validate_config(TOPIC, {"message.format.version": "3.0"}, release=release)
    assert problems == [
        f"message.format.version was removed in Kafka 4; this cluster runs {release}: "
        "Kafka 4.4 has no topic config of that name, drop it"
    ]
    problems = validate_config(BROKER_DEFAULT, {"log.message.downconversion.enable": "true"}, release=release)
    assert problems == [
        f"log.message.downconversion.enable was removed in Kafka 4; this cluster runs {release}: "
        "Kafka 4.4 has no broker config of that name, drop it"
    ]


def test_a_kafka_4_key_is_checked_by_its_4_4_type_and_range():
    assert validate_config(TOPIC, {"remote.copy.lag.ms": "1000"}, release="4.4") == []
    assert validate_config(TOPIC, {"max.decompressed.message.bytes": "1024"}, release="4.4") == []
    assert validate_config(TOPIC, {"remote.copy.lag.ms": "-5"}, release="4.4") == [
        "remote.copy.lag.ms: -5 is less than the minimum -1"
    ]
    assert validate_config(TOPIC, {"max.decompressed.message.bytes": "2147483640"}, release="4.4") == [
        "max.decompressed.message.bytes: 2147483640 is greater than the maximum 2147483639"
    ]
    (problem,) = validate_config(TOPIC, {"errors.deadletterqueue.group.enable": "maybe"}, release="4.4")
    assert problem.startswith("errors.deadletterqueue.group.enable: ")
    # and on 3.9 it is the unknown key it always was
    (problem,) = validate_config(TOPIC, {"remote.copy.lag.ms": "1000"}, release="3.9")
    assert problem.startswith("unknown topic config 'remote.copy.lag.ms'")


def test_a_kafka_4_broker_key_is_placed_by_its_4_4_update_mode():
    assert validate_config(BROKER_DEFAULT, {"share.coordinator.threads": "2"}, release="4.4") == [
        "share.coordinator.threads is read-only in Kafka 4.4: set it in server.properties and restart the broker"
    ]
    assert validate_config(BROKER_DEFAULT, {"cordoned.log.dirs": "/data/a"}, release="4.4") == [
        "cordoned.log.dirs can only be set per broker (brokers/<id>), not at brokers/<default>"
    ]
    assert validate_config(BROKER_1, {"cordoned.log.dirs": "/data/a"}, release="4.4") == []
    assert validate_config(BROKER_DEFAULT, {"log.remote.copy.lag.ms": "10"}, release="4.4") == []


def test_the_release_matters_only_for_keys_kafka_4_removed_or_added():
    assert validation.release_matters(TOPIC, ["retention.ms", "message.format.version"])
    assert validation.release_matters(TOPIC, ["remote.copy.lag.ms"])
    assert not validation.release_matters(TOPIC, ["retention.ms", "cleanup.policy"])
    assert not validation.release_matters(Entity.of(EntityType.CLIENTS, "app"), ["producer_byte_rate"])


def test_a_change_prepared_for_kafka_4_follows_its_rules():
    change = writer.prepare_change(TOPIC, {"remote.copy.lag.ms": "1000"}, release="4.4")
    assert change.add == {"remote.copy.lag.ms": "1000"}
    with pytest.raises(ValidationFailed, match=r"was removed in Kafka 4; this cluster runs 4\.4"):
        writer.prepare_change(TOPIC, {"message.format.version": "3.0-IV1"}, release="4.4")
    # release unknown: 3.9's rules, before any connection (alter applies the cluster's own later)
    assert writer.prepare_change(TOPIC, {"message.format.version": "3.0-IV1"}).add == {
        "message.format.version": "3.0-IV1"
    }
