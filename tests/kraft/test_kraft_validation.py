"""What configctl refuses on a Kafka 4.4 cluster because Kafka 4 refuses (or ignores) it, shown
against a real 4.4 KRaft node (the session's ``kraft_combined``).

configctl's Kafka 4 facts come from 4.4.0's jars (configctl/data/kafka-4.4-configs.json); the
store says which release a cluster runs (``kafka_release()``), and validation applies that
release's rules before anything is sent. Each test first shows what Kafka 4.4 itself does with
the write (through its own kafka-configs.sh), then that configctl says so in one line and writes
nothing. Shared cluster: every test names its own topics and puts back any broker config.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers import run_cli

from configctl import writer
from configctl.entities import Entity, EntityType
from configctl.errors import ValidationFailed
from configctl.kraft.choice import kraft_store
from configctl.kraft.writes import KRaftWrites
from configctl.store.composed import Store


def cli(kraft, *args: str):
    """``configctl --bootstrap-server <the cluster> ARGS``, as an operator types it."""
    return run_cli("--bootstrap-server", kraft.bootstrap, *args)


def kafka_configs(kraft, *args: str):
    """Kafka 4.4's own kafka-configs.sh."""
    return kraft.config_command(*args)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.fixture
def store(kraft_combined) -> Iterator[Store]:
    """The store configctl composes for ``--bootstrap-server`` on a KRaft cluster."""
    kraft = kraft_store(kraft_combined.bootstrap, None, zookeeper=None, timeout=30)
    assert kraft is not None
    composed = Store(kraft, writes=KRaftWrites(kraft), kind=kraft.kind)
    with composed:
        yield composed


def test_the_store_says_the_cluster_runs_kafka_4_4(store):
    assert store.kafka_release() == "4.4"


@pytest.mark.parametrize("config", ["message.format.version=3.0-IV1", "message.downconversion.enable=false"])
def test_a_topic_key_kafka_4_removed_is_refused_by_kafka_and_by_configctl(kraft_combined, unique, config):
    kraft = kraft_combined
    topic = unique("removed")
    kraft.create_topics(topic)
    name = config.partition("=")[0]
    theirs = kafka_configs(
        kraft, "--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", config
    )
    assert theirs.returncode != 0
    assert f"Unknown topic config name: {name}" in theirs.stderr
    for dry_run in ((), ("--dry-run",)):
        ours = cli(kraft, "alter", "--topic", topic, "--add-config", config, *dry_run)
        assert ours.returncode == 1
        assert one_line(ours.stderr) == (
            f"error: invalid config: {name} was removed in Kafka 4; this cluster runs 4.4: "
            "Kafka 4.4 has no topic config of that name, drop it"
        )
    shown = kafka_configs(kraft, "--describe", "--entity-type", "topics", "--entity-name", topic)
    assert name not in shown.stdout  # nothing written


def test_a_broker_key_kafka_4_removed_is_kept_by_kafka_as_an_unknown_key_and_refused_by_configctl(
    kraft_combined,
):
    """Kafka 4.4 takes ``log.message.downconversion.enable`` at the broker default, but as a key it
    does not know: kept, shown as a (maybe sensitive) unknown config with no value, used by nothing.
    configctl refuses it, naming the release."""
    kraft = kraft_combined
    name = "log.message.downconversion.enable"
    default = ("--entity-type", "brokers", "--entity-default")
    try:
        theirs = kafka_configs(kraft, "--alter", *default, "--add-config", f"{name}=false")
        assert theirs.returncode == 0, theirs.stderr
        shown = kafka_configs(kraft, "--describe", *default).stdout
        assert f"{name}=null sensitive=true" in shown  # Kafka 4 does not know the key
    finally:
        kafka_configs(kraft, "--alter", *default, "--delete-config", name)
    ours = cli(kraft, "alter", "--broker-defaults", "--add-config", f"{name}=false")
    assert ours.returncode == 1
    assert one_line(ours.stderr) == (
        f"error: invalid config: {name} was removed in Kafka 4; this cluster runs 4.4: "
        "Kafka 4.4 has no broker config of that name, drop it"
    )
    # read-only in 3.9 already, log.message.format.version is refused before the cluster is asked
    ours = cli(kraft, "alter", "--broker-defaults", "--add-config", "log.message.format.version=3.0-IV1")
    assert ours.returncode == 1
    assert "log.message.format.version" in one_line(ours.stderr)
    shown = kafka_configs(kraft, "--describe", *default).stdout
    assert "message.format.version" not in shown
    assert name not in shown


def test_a_key_only_kafka_4_has_is_written_by_its_4_4_rules(kraft_combined, store, unique):
    """``remote.copy.lag.ms`` is new in Kafka 4: Kafka 4.4 refuses -5 (its minimum is -1) and takes
    1000; so does configctl, with the release the store reports."""
    kraft = kraft_combined
    topic = unique("newkey")
    kraft.create_topics(topic)
    entity = Entity.of(EntityType.TOPICS, topic)
    theirs = kafka_configs(
        kraft,
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        topic,
        "--add-config",
        "remote.copy.lag.ms=-5",
    )
    assert theirs.returncode != 0
    assert "remote.copy.lag.ms" in theirs.stderr
    with pytest.raises(ValidationFailed, match=r"remote\.copy\.lag\.ms: -5 is less than the minimum -1"):
        writer.prepare_change(entity, {"remote.copy.lag.ms": "-5"}, release=store.kafka_release())
    change = writer.prepare_change(entity, {"remote.copy.lag.ms": "1000"}, release=store.kafka_release())
    result = writer.alter(store, entity, change, reason="a Kafka 4 key")
    assert result.committed is not None
    shown = kafka_configs(kraft, "--describe", "--entity-type", "topics", "--entity-name", topic)
    assert "remote.copy.lag.ms=1000" in shown.stdout


def test_a_removed_key_is_refused_by_the_write_path_itself_before_anything_is_sent(
    store, kraft_combined, unique
):
    """A change prepared without the release (3.9's rules: the value is a valid 3.9 one) is refused
    by ``writer.alter``, which asks the store, before any request: history records nothing."""
    kraft = kraft_combined
    topic = unique("alterpath")
    kraft.create_topics(topic)
    entity = Entity.of(EntityType.TOPICS, topic)
    change = writer.prepare_change(entity, {"message.format.version": "3.0-IV1", "retention.ms": "600000"})
    with pytest.raises(ValidationFailed, match=r"was removed in Kafka 4; this cluster runs 4\.4"):
        writer.alter(store, entity, change)
    assert store.history(entity) == []
    assert store.read(entity).config == {}


def test_broker_level_min_insync_replicas_is_kafkas_to_refuse_while_elr_is_enabled(kraft_combined):
    """Kafka 4.4 (ELR enabled, as a new 4.4 cluster is formatted) refuses ``min.insync.replicas``
    for one broker; whether ELR is on is the cluster's feature state, so configctl leaves the
    verdict to the brokers: one line, exit 1, nothing written, with --dry-run (validateOnly) too."""
    kraft = kraft_combined
    broker = str(kraft.broker_ids[0])
    theirs = kafka_configs(
        kraft,
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-name",
        broker,
        "--add-config",
        "min.insync.replicas=1",
    )
    assert "Broker-level min.insync.replicas cannot be altered while ELR is enabled" in theirs.stderr
    for dry_run in ((), ("--dry-run",)):
        ours = cli(kraft, "alter", "--broker", broker, "--add-config", "min.insync.replicas=1", *dry_run)
        assert ours.returncode == 1
        line = one_line(ours.stderr)
        assert "Broker-level min.insync.replicas cannot be altered while ELR is enabled" in line
    shown = kafka_configs(kraft, "--describe", "--entity-type", "brokers", "--entity-name", broker)
    assert "min.insync.replicas" not in shown.stdout


def test_a_config_for_a_broker_that_is_not_registered_is_refused_in_one_line(kraft_combined):
    """Kafka 4.4 sends a broker's own config through that broker: for a node the cluster has not
    registered, its kafka-configs.sh finds no broker to send it to (and describes nothing)."""
    kraft = kraft_combined
    missing = str(max(kraft.node_ids) + 7)
    shown = kafka_configs(kraft, "--describe", "--entity-type", "brokers", "--entity-name", missing)
    assert f"The broker '{missing}' doesn't exist" in shown.stdout
    ours = cli(kraft, "alter", "--broker", missing, "--add-config", "log.cleaner.threads=2")
    assert ours.returncode == 3
    assert f"broker {missing} is not in the cluster's metadata" in one_line(ours.stderr)


def test_the_kafka_rules_check_judges_what_a_write_sets_by_the_clusters_release(
    store, kraft_combined, unique
):
    """For callers whose configs were validated before any store (desired-state files):
    ``check_kafka_rules(written=...)`` applies the release the cluster runs."""
    topic = unique("rules")
    kraft_combined.create_topics(topic)
    entity = Entity.of(EntityType.TOPICS, topic)
    writer.check_kafka_rules(store, [entity], written={entity: {"retention.ms": "600000"}})
    with pytest.raises(ValidationFailed, match=r"message\.format\.version was removed in Kafka 4"):
        writer.check_kafka_rules(store, [entity], written={entity: {"message.format.version": "3.0-IV1"}})
