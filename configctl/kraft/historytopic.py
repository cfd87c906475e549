"""configctl's history in the KRaft cluster itself: one compacted, replicated topic of write records.

A KRaft cluster has no ZooKeeper to keep configctl's history in, and no Admin API that returns
who changed a config, when or why. So every write configctl makes is recorded in a topic of the
cluster (:data:`TOPIC`), created on the first write with a replication factor and
``min.insync.replicas`` fit for the cluster, and read back whole by ``history``, ``rollback``,
``--if-version`` and plan/apply's conflict checks, from any process.

It is one of configctl's own topics (:mod:`configctl.kraft.owntopics`: one partition, replicated
as the cluster allows, compacted, kept forever). Each record is the same JSON document ZooKeeper's history nodes hold
(:class:`configctl.znodes.HistoryZNodes`, docs/reference/history-topic.md), keyed by
``<entity path>@<version>@<time ms>``: a key is never reused, so compaction (which keeps the
newest record per key) keeps every record, and a tombstone can still remove one deliberately.
One partition keeps every entity's records in the order they were written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from configctl.errors import InvalidInput
from configctl.kraft import owntopics
from configctl.znodes import HistoryRecord, HistoryZNodes

TOPIC = "_configctl_history"
"""The history topic's name (one leading underscore: Kafka keeps ``__`` for its own topics)."""

WHAT = "configctl's history"


def record_key(record: HistoryRecord) -> bytes:
    """The record's key: unique per write (entity, version, time), so compaction keeps it."""
    return f"{record.entity_path}@{record.version}@{record.time_ms}".encode()


def ensure_topic(admin: Any, brokers: int, bootstrap: str) -> bool:
    """Create :data:`TOPIC` unless it exists (``admin``: kafka-python's ``KafkaAdminClient``),
    as every own topic is (:func:`configctl.kraft.owntopics.ensure_topic`). Returns whether it was
    created now."""
    return owntopics.ensure_topic(admin, TOPIC, brokers, bootstrap, what=f"{WHAT} topic")


def append(producer: Any, records: Iterable[HistoryRecord], bootstrap: str, timeout: float) -> None:
    """Send ``records`` (``producer``: a ``KafkaProducer`` with ``acks="all"``) and wait until the
    cluster has every one of them: a history record is written before the write is reported."""
    keyed = [(record_key(r), HistoryZNodes.encode(r)) for r in records]
    owntopics.append(producer, TOPIC, keyed, bootstrap, timeout, what=WHAT)


def read_all(consumer: Any, bootstrap: str, timeout: float) -> list[HistoryRecord]:
    """Every record in :data:`TOPIC`, oldest first (``consumer``: a ``KafkaConsumer`` with no group).

    A record that is not configctl's (a tombstone, or bytes another tool wrote) is skipped: the
    topic is anyone's with write access to it.
    """
    found, _ = owntopics.read_from(consumer, TOPIC, None, bootstrap, timeout, what=WHAT)
    records: list[HistoryRecord] = []
    for message in found:
        if message.value is None:
            continue
        try:
            records.append(HistoryZNodes.decode(message.value))
        except InvalidInput:
            continue
    return records


__all__ = ["TOPIC", "append", "ensure_topic", "read_all", "record_key"]
