"""Random sequences of changes across layers: configctl's listener and a real broker end equal.

Each example is a short sequence of sets and deletes on ``brokers/<default>``, ``brokers/1`` and
a topic, written through configctl's own write path; after each step the effective config that
configctl computes for broker 1 (``describe --effective``'s answer, from the listener's published
static layer and the stored dynamic layers) must equal what the broker reports through the Admin
API, key by key (value, source, synonyms). The broker applies a change asynchronously, so each
comparison waits for the two to agree, and fails with the differences when they do not.

100 sequences in the ordinary run; ``make test-long`` (``-m long``) runs the long one (1,000).
"""

from __future__ import annotations

import pytest
from conftest import KafkaFleet, differences, until_agree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from configctl import effective, writer
from configctl.entities import DEFAULT, Entity
from configctl.zk.configstore import ZooKeeperStore as ConfigStore

pytestmark = pytest.mark.kafka

# Keys a running broker takes from ZooKeeper without a reconfiguration veto, with valid values:
# each is a log config (a topic key's broker synonym) or a cluster-wide broker setting.
BROKER_KEYS = {
    "log.retention.ms": ["3600000", "86400000", "-1", " 7200000 "],
    "log.roll.ms": ["3600000", "604800000"],
    "log.roll.jitter.ms": ["0", "60000"],
    "log.flush.interval.ms": ["1000", "9223372036854775807"],
    "log.cleanup.policy": ["delete", "compact", "compact, delete"],
    "compression.type": ["producer", "gzip", "lz4", "zstd"],
    "log.segment.bytes": ["1048576", "16777216"],
    "message.max.bytes": ["1048588", "2097152"],
    "min.insync.replicas": ["1", "2"],
    "log.cleaner.min.cleanable.ratio": ["0.5", "0.25", "1"],
    "log.message.timestamp.type": ["CreateTime", "LogAppendTime"],
    "unclean.leader.election.enable": ["true", "false", "TRUE"],
}
TOPIC_KEYS = {
    "retention.ms": ["60000", "86400000", "-1", "+120000"],
    "segment.ms": ["3600000", "86400000"],
    "cleanup.policy": ["delete", "compact", "compact,delete", "delete , compact"],
    "compression.type": ["producer", "snappy", "uncompressed"],
    "max.message.bytes": ["1048588", "524288"],
    "min.cleanable.dirty.ratio": ["0.5", "0.1", "0.75"],
    "flush.ms": ["1000", "60000"],
    "unclean.leader.election.enable": ["true", "false"],
}
LAYERS = ("brokers/<default>", "brokers/1", "topic")


@st.composite
def step(draw: st.DrawFn) -> tuple[str, str, str | None]:
    layer = draw(st.sampled_from(LAYERS))
    keys = TOPIC_KEYS if layer == "topic" else BROKER_KEYS
    key = draw(st.sampled_from(sorted(keys)))
    value = draw(st.one_of(st.none(), st.sampled_from(keys[key])))  # None: delete the key
    return layer, key, value


def write(store: ConfigStore, entity: Entity, key: str, value: str | None) -> None:
    current = store.read(entity, strict=False).config
    if value is None and key not in current:
        return
    change = writer.prepare_change(
        entity, {} if value is None else {key: value}, () if value is not None else (key,)
    )
    writer.alter(store, entity, change, allow_running_brokers=True, reason="property test")


def computed(store: ConfigStore, entity: Entity | None) -> dict:
    report = effective.effective_config(store, 1, entity)
    return {
        value.name: {
            "name": value.name,
            "value": None if value.sensitive else value.value,
            "source": value.source,
            "synonyms": [
                {"name": s.name, "value": None if value.sensitive else s.value, "source": s.source}
                for s in value.synonyms
            ],
        }
        for value in report.values
    }


def reported(fleet: KafkaFleet, topic: str | None) -> dict:
    with fleet.admin() as admin:
        answer = admin.describe_topic(topic) if topic else admin.describe_broker(1)
    return {name: entry.to_json() for name, entry in answer.items()}


@pytest.fixture(scope="module")
def sandbox(kafka_one: KafkaFleet):
    """A topic of this module's own, and broker configs put back as they were afterwards."""
    topic = "property-topic"
    kafka_one.create_topics(topic)
    with kafka_one.store() as store:
        before = {
            path: store.read(Entity.from_path(path), strict=False).config
            for path in ("brokers/<default>", "brokers/1")
        }
        yield kafka_one, store, topic
        for path, config in before.items():
            entity = Entity.from_path(path)
            writer.alter(
                store,
                entity,
                writer.prepare_change(entity, config, replace=True),
                allow_running_brokers=True,
                reason="property test: restore",
            )


def run_sequence(sandbox, steps) -> None:
    fleet, store, topic = sandbox
    topic_entity = Entity.of("topics", topic)
    for layer, key, value in steps:
        entity = (
            topic_entity
            if layer == "topic"
            else Entity.of("brokers", DEFAULT if layer.endswith(DEFAULT) else layer.split("/")[1])
        )
        write(store, entity, key, value)
    for target, name in ((None, None), (topic_entity, topic)):
        ours, theirs = until_agree(
            lambda t=target: computed(store, t), lambda n=name: reported(fleet, n), timeout=20
        )
        assert ours == theirs, f"after {steps}:\n" + "\n".join(differences(ours, theirs))


AGAINST_A_BROKER = {
    "deadline": None,  # each example waits for a real broker
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


@settings(max_examples=100, **AGAINST_A_BROKER)
@given(steps=st.lists(step(), min_size=1, max_size=4))
def test_random_changes_end_with_the_broker_and_configctl_agreeing(sandbox, steps):
    run_sequence(sandbox, steps)


@pytest.mark.long
@settings(max_examples=1000, **AGAINST_A_BROKER)
@given(steps=st.lists(step(), min_size=1, max_size=8))
def test_random_changes_long_run(sandbox, steps):
    run_sequence(sandbox, steps)
