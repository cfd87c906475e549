"""configctl's history in the KRaft cluster itself: one compacted, replicated topic of write records.

A KRaft cluster has no ZooKeeper to keep configctl's history in, and no Admin API that returns
who changed a config, when or why. So every write configctl makes is recorded in a topic of the
cluster (:data:`TOPIC`), created on the first write with a replication factor and
``min.insync.replicas`` fit for the cluster, and read back whole by ``history``, ``rollback``,
``--if-version`` and plan/apply's conflict checks, from any process.

Each record is the same JSON document ZooKeeper's history nodes hold
(:class:`configctl.znodes.HistoryZNodes`, docs/reference/history-topic.md), keyed by
``<entity path>@<version>@<time ms>``: a key is never reused, so compaction (which keeps the
newest record per key) keeps every record, and a tombstone can still remove one deliberately.
One partition keeps every entity's records in the order they were written.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from configctl.adminapi.errors import translate_errors
from configctl.errors import InvalidInput
from configctl.znodes import HistoryRecord, HistoryZNodes

TOPIC = "_configctl_history"
"""The history topic's name (one leading underscore: Kafka keeps ``__`` for its own topics)."""

TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "min.compaction.lag.ms": "0",
    "retention.ms": "-1",
}
"""The history topic's own configs: compacted (every key is unique, so nothing is lost), kept forever."""


def replication_for(brokers: int) -> tuple[int, int]:
    """(replication factor, ``min.insync.replicas``) fit for a cluster of ``brokers`` brokers:
    three copies where there are three brokers, and a write acknowledged by two of them; one copy
    on a single broker (a test or a laptop), which is all it can hold."""
    replicas = max(1, min(3, brokers))
    return replicas, max(1, min(2, replicas - 1))


def record_key(record: HistoryRecord) -> bytes:
    """The record's key: unique per write (entity, version, time), so compaction keeps it."""
    return f"{record.entity_path}@{record.version}@{record.time_ms}".encode()


def ensure_topic(admin: Any, brokers: int, bootstrap: str) -> bool:
    """Create :data:`TOPIC` unless it exists (``admin``: kafka-python's ``KafkaAdminClient``).
    Returns whether it was created now."""
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    with translate_errors("list the topics", bootstrap):
        if TOPIC in admin.list_topics():
            return False
    replicas, min_isr = replication_for(brokers)
    topic = NewTopic(TOPIC, 1, replicas, topic_configs={**TOPIC_CONFIGS, "min.insync.replicas": str(min_isr)})
    try:
        with translate_errors(f"create configctl's history topic {TOPIC}", bootstrap):
            admin.create_topics([topic])
    except Exception as exc:  # another configctl created it first: that is the same topic
        if isinstance(exc.__context__, TopicAlreadyExistsError) or "already exists" in str(exc).lower():
            return False
        raise
    return True


def append(producer: Any, records: Iterable[HistoryRecord], bootstrap: str, timeout: float) -> None:
    """Send ``records`` (``producer``: a ``KafkaProducer`` with ``acks="all"``) and wait until the
    cluster has every one of them: a history record is written before the write is reported."""
    futures = [producer.send(TOPIC, key=record_key(r), value=HistoryZNodes.encode(r)) for r in records]
    with translate_errors(f"record configctl's history in {TOPIC}", bootstrap):
        producer.flush(timeout=timeout)
        for future in futures:
            future.get(timeout=timeout)


def read_all(consumer: Any, bootstrap: str, timeout: float) -> list[HistoryRecord]:
    """Every record in :data:`TOPIC`, oldest first (``consumer``: a ``KafkaConsumer`` with no group).

    Read from the start to the end offset taken first, so a record written while reading is
    left for the next read rather than waited for. A record that is not configctl's (a tombstone,
    or bytes another tool wrote) is skipped: the topic is anyone's with write access to it.
    """
    from kafka.structs import TopicPartition

    partition = TopicPartition(TOPIC, 0)
    with translate_errors(f"read configctl's history from {TOPIC}", bootstrap):
        if TOPIC not in consumer.topics():
            return []
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        end = consumer.end_offsets([partition])[partition]
        records: list[HistoryRecord] = []
        deadline = time.monotonic() + timeout
        while consumer.position(partition) < end:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"reading {TOPIC} stopped at offset {consumer.position(partition)} of {end}"
                )
            batches: Mapping[Any, list[Any]] = consumer.poll(timeout_ms=500)
            for message in batches.get(partition, ()):
                if message.value is None:
                    continue
                try:
                    records.append(HistoryZNodes.decode(message.value))
                except InvalidInput:
                    continue
    return records


__all__ = ["TOPIC", "append", "ensure_topic", "read_all", "record_key", "replication_for"]
