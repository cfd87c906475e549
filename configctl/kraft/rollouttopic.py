"""The rollout topic of a KRaft cluster: rollout records appended and read back, each append judged by the log.

Where ZooKeeper keeps ``/configctl/rollouts/<id>``, a KRaft cluster keeps :data:`TOPIC`, one of
configctl's own compacted topics (:mod:`configctl.kraft.owntopics`), created on the first
rollout. Its documents and how versions are decided are :mod:`configctl.kraft.rolloutlog`'s;
this module only moves them: :meth:`RolloutTopic.append` writes one and reads the log back to
its offset, so the caller learns at once whether its version won. The log is read once from its
start and then only from where the last read stopped (a soak asks every second).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from configctl.adminapi.connection import client_options
from configctl.adminapi.errors import translate_errors
from configctl.kraft import owntopics
from configctl.kraft.rolloutlog import Chain, Document, chains, superseded

log = logging.getLogger(__name__)

TOPIC = "_configctl_rollouts"
"""The rollout topic's name (one leading underscore: Kafka keeps ``__`` for its own topics)."""
WHAT = "configctl's rollout records"
MAX_BYTES = 1_048_576
"""The topic's ``max.message.bytes``, said explicitly (a document is at most
:data:`~configctl.kraft.rolloutlog.MAX_DOCUMENT_BYTES`)."""


class RolloutTopic:
    """The rollout topic of the cluster at ``bootstrap``: a producer and a reader, opened on first use."""

    def __init__(self, bootstrap: str, command_config: Path | None, timeout: float, brokers: int) -> None:
        self.bootstrap = bootstrap
        self.command_config = command_config
        self.timeout = timeout
        self.brokers = brokers
        self._producer: Any = None
        self._consumer: Any = None
        self._messages: list[tuple[int, bytes | None, bytes | None]] = []
        self._next: int | None = None

    def chains(self) -> dict[str, Chain]:
        """Every rollout's chain, from the log as it is now."""
        self._catch_up()
        return chains(self._messages)

    def chain(self, rollout_id: str) -> Chain | None:
        return self.chains().get(rollout_id)

    def append(self, document: Document) -> dict[str, Chain]:
        """Append ``document`` and read the log back past it: every rollout's chain as it then
        stands (:func:`~configctl.kraft.rolloutlog.won` says whether ``document`` is in its own)."""
        data = document.encode()
        producer = self._writer()
        owntopics.append(producer, TOPIC, [(document.key, data)], self.bootstrap, self.timeout, what=WHAT)
        return self.chains()

    def append_all(self, documents: list[Document]) -> None:
        """Append ``documents`` in one send, each encoded (and its size checked) before any is sent."""
        data = [(document.key, document.encode()) for document in documents]
        if data:
            owntopics.append(self._writer(), TOPIC, data, self.bootstrap, self.timeout, what=WHAT)

    def forget(self, chain: Chain) -> None:
        """Tombstones for what a finished rollout no longer needs (best effort: compaction or the
        next finish removes what is left)."""
        keys = superseded(chain)
        if not keys:
            return
        try:
            owntopics.append(
                self._writer(), TOPIC, [(k, None) for k in keys], self.bootstrap, self.timeout, what=WHAT
            )
        except Exception:  # the record that matters (the last) is written; old versions only cost space
            log.debug("removing a finished rollout's old versions failed", exc_info=True)

    def close(self) -> None:
        for client in (self._producer, self._consumer):
            if client is not None:
                try:
                    client.close()
                except Exception:  # closing is best effort: every answer is in hand
                    log.debug("closing a Kafka client failed", exc_info=True)
        self._producer = self._consumer = None

    # -- the clients ----------------------------------------------------------------------------

    def _catch_up(self) -> None:
        if self._consumer is None:
            from kafka.consumer import KafkaConsumer

            with translate_errors("connect", self.bootstrap):
                self._consumer = KafkaConsumer(
                    **client_options(self.bootstrap, self.command_config, self.timeout),
                    enable_auto_commit=False,
                    group_id=None,
                    max_partition_fetch_bytes=MAX_BYTES * 2,
                )
        found, end = owntopics.read_from(
            self._consumer, TOPIC, self._next, self.bootstrap, self.timeout, what=WHAT
        )
        self._messages.extend((m.offset, m.key, m.value) for m in found)
        self._next = end

    def _writer(self) -> Any:
        if self._producer is None:
            from kafka.admin import KafkaAdminClient
            from kafka.producer import KafkaProducer

            options = client_options(self.bootstrap, self.command_config, self.timeout)
            with translate_errors("connect", self.bootstrap):
                admin = KafkaAdminClient(**options)
            try:
                owntopics.ensure_topic(
                    admin,
                    TOPIC,
                    self.brokers,
                    self.bootstrap,
                    what=WHAT,
                    configs={"max.message.bytes": str(MAX_BYTES)},
                )
            finally:
                admin.close()
            with translate_errors("connect", self.bootstrap):
                self._producer = KafkaProducer(
                    **options, acks="all", enable_idempotence=True, max_request_size=MAX_BYTES
                )
        return self._producer


__all__ = ["TOPIC", "RolloutTopic"]
