"""configctl's own topics in a KRaft cluster: created once, appended to with every replica's ack, read whole.

A KRaft cluster has no ZooKeeper, so what configctl keeps beside the configs (its history, its
rollout records) lives in compacted topics of the cluster itself. Each is one partition (one
order for everything in it), replicated as the cluster allows (:func:`replication_for`), kept
forever, and keyed so that compaction never merges two records configctl means to keep. This
module is what those topics share: the clients that reach them (:class:`OwnTopicClients`),
creating one, appending and knowing where each record landed, and reading one from its start
(or from where the last read stopped).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from configctl.adminapi.connection import client_options
from configctl.adminapi.errors import translate_errors
from configctl.errors import KafkaUnavailable

log = logging.getLogger(__name__)

COMPACTED = {
    "cleanup.policy": "compact",
    "min.compaction.lag.ms": "0",
    "retention.ms": "-1",
    "compression.type": "producer",
}
"""Every own topic's configs: compacted (keys are chosen so nothing meant to stay is merged), kept
forever, and stored as configctl sends them (uncompressed): a broker-wide ``compression.type``
such as lz4 would otherwise recompress them with a codec configctl's client may not read."""


POLL_RECORDS = 10_000
"""Records one poll hands over (kafka-python's default, 500, made a whole-topic read a poll loop)."""


@dataclass(frozen=True)
class Message:
    """One record of an own topic: where it is, its key, and its value (None: a tombstone)."""

    offset: int
    key: bytes | None
    value: bytes | None


class OwnTopicClients:
    """A ``KafkaAdminClient``, a ``KafkaProducer`` (acks from every in-sync replica) and a
    ``KafkaConsumer`` (no group) on the store's bootstrap, for one history read or write."""

    def __init__(
        self, bootstrap: str, command_config: Path | None, timeout: float, *, producer: bool
    ) -> None:
        self.options = client_options(bootstrap, command_config, timeout)
        self.bootstrap = bootstrap
        self.producer = producer
        self._open: list[Any] = []

    def __enter__(self) -> tuple[Any, Any, Any]:
        from kafka.admin import KafkaAdminClient
        from kafka.consumer import KafkaConsumer
        from kafka.producer import KafkaProducer

        from configctl.adminapi.errors import translate_errors

        try:
            with translate_errors("connect", self.bootstrap):
                if self.producer:
                    admin = KafkaAdminClient(**self.options)
                    self._open.append(admin)
                    producer = KafkaProducer(**self.options, acks="all", enable_idempotence=True)
                    self._open.append(producer)
                    return admin, producer, None
                consumer = KafkaConsumer(
                    **self.options, enable_auto_commit=False, group_id=None, max_poll_records=POLL_RECORDS
                )
                self._open.append(consumer)
                return None, None, consumer
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc: object) -> None:
        for client in reversed(self._open):
            try:
                client.close()
            except Exception:  # closing is best effort: the answer is already in hand
                log.debug("closing a Kafka client failed", exc_info=True)
        self._open.clear()


def replication_for(brokers: int) -> tuple[int, int]:
    """(replication factor, ``min.insync.replicas``) fit for a cluster of ``brokers`` brokers:
    three copies where there are three brokers, and a write acknowledged by two of them; one copy
    on a single broker (a test or a laptop), which is all it can hold."""
    replicas = max(1, min(3, brokers))
    return replicas, max(1, min(2, replicas - 1))


def ensure_topic(
    admin: Any,
    topic: str,
    brokers: int,
    bootstrap: str,
    *,
    what: str,
    configs: Mapping[str, str] | None = None,
) -> bool:
    """Create ``topic`` unless it exists (``admin``: kafka-python's ``KafkaAdminClient``);
    ``what`` names it in errors. Returns whether it was created now."""
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    with translate_errors("list the topics", bootstrap):
        if topic in admin.list_topics():
            return False
    replicas, min_isr = replication_for(brokers)
    settings = {**COMPACTED, **(configs or {}), "min.insync.replicas": str(min_isr)}
    new = NewTopic(topic, 1, replicas, topic_configs=settings)
    try:
        with translate_errors(f"create {what} {topic}", bootstrap):
            admin.create_topics([new])
    except Exception as exc:  # another configctl created it first: that is the same topic
        if isinstance(exc.__context__, TopicAlreadyExistsError) or "already exists" in str(exc).lower():
            return False
        raise
    return True


def append(
    producer: Any,
    topic: str,
    records: Iterable[tuple[bytes, bytes | None]],
    bootstrap: str,
    timeout: float,
    *,
    what: str,
) -> list[int]:
    """Send ``records`` (key, value) with ``producer`` (``acks="all"``) and wait until the cluster
    has every one of them; the offset each landed at, in order."""
    futures = [producer.send(topic, key=key, value=value) for key, value in records]
    with translate_errors(f"write {what} to {topic}", bootstrap):
        producer.flush(timeout=timeout)
        return [future.get(timeout=timeout).offset for future in futures]


def read_from(
    consumer: Any,
    topic: str,
    start: int | None,
    bootstrap: str,
    timeout: float,
    *,
    what: str,
    keep: Callable[[bytes | None], bool] | None = None,
    keys_only: bool = False,
) -> tuple[list[Message], int]:
    """The records of ``topic`` from offset ``start`` (None: its beginning) to its end offset taken
    first, and that end (where the next read starts). A record written while reading is left for
    the next read rather than waited for. ``consumer``: a ``KafkaConsumer`` with no group.
    ``keep``: only the records whose key it accepts are kept; ``keys_only``: their values are not
    (a large topic read for one part of it, or for its keys, holds no more than that part)."""
    from kafka.structs import TopicPartition

    partition = TopicPartition(topic, 0)
    found: list[Message] = []
    with translate_errors(f"read {what} from {topic}", bootstrap):
        if topic not in consumer.topics():
            return found, start or 0
        consumer.assign([partition])
        end = consumer.end_offsets([partition])[partition]
        if start is None:
            consumer.seek_to_beginning(partition)
        else:
            consumer.seek(partition, start)
        deadline = time.monotonic() + timeout
        while (position := consumer.position(partition)) < end:
            if time.monotonic() > deadline:
                raise KafkaUnavailable(
                    f"reading {what} from {topic} ({bootstrap}) made no progress for {timeout:g} s, at offset "
                    f"{position} of {end}: try again once the brokers answer"
                )
            batches: Mapping[Any, list[Any]] = consumer.poll(timeout_ms=500)
            for message in batches.get(partition, ()):
                if message.offset < end and (keep is None or keep(message.key)):
                    found.append(Message(message.offset, message.key, None if keys_only else message.value))
            if consumer.position(partition) > position:  # a long topic read whole is never cut off
                deadline = time.monotonic() + timeout
    return found, end


def read_tail(
    consumer: Any, topic: str, count: int, bootstrap: str, timeout: float, *, what: str
) -> list[Message]:
    """The newest ``count`` offsets' records of ``topic`` (fewer where compaction removed some)."""
    from kafka.structs import TopicPartition

    partition = TopicPartition(topic, 0)
    with translate_errors(f"read {what} from {topic}", bootstrap):
        if topic not in consumer.topics():
            return []
        end = consumer.end_offsets([partition])[partition]
    found, _ = read_from(consumer, topic, max(0, end - count), bootstrap, timeout, what=what)
    return found


__all__ = [
    "COMPACTED",
    "Message",
    "OwnTopicClients",
    "append",
    "ensure_topic",
    "read_from",
    "read_tail",
    "replication_for",
]
