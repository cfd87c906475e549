"""The ZooKeeper-era listeners' applied logs, carried into a migrated cluster: one own topic of applied-log chunks.

Before a migration, each ZooKeeper-mode listener logged what its broker applied (and refused) in
its state directory (docs/reference/applied-log.md): the only record of what a broker ran, where
history says only what was written. ``migration carry --applied-log DIR`` sends those logs to
:data:`TOPIC`, so ``describe --effective --at``, ``blame`` and ``diff`` read what each broker ran
before the migration from the cluster alone, with no state directory at hand. Nothing else
writes here: after the migration the brokers report what they run themselves.

One of configctl's own topics (:mod:`configctl.kraft.owntopics`: one partition, compacted, kept
forever). Each record is a chunk of one broker's log: up to :data:`CHUNK_BYTES` of its lines,
exactly as the file holds them, in the log's order. A fleet's logs are large (a broker's may hold
hundreds of thousands of records): in chunks they are sent and read as a few large records, not
as many small ones, and a reader parses only its broker's. Keyed ``broker-<id>@<sha256 of the
chunk>``: the same chunk carried twice has one key (compaction keeps one), and a carry sends only
the chunks not here yet. A log that grew between two carries gives the same chunks up to its last
one, which is sent again longer: a reader takes each line once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from configctl import applied
from configctl.kraft import owntopics

TOPIC = "_configctl_applied"
"""The carried applied logs' topic (one leading underscore: Kafka keeps ``__`` for its own topics)."""
WHAT = "the listeners' carried applied logs"
CHUNK_BYTES = 900_000
"""A chunk's size at most: under the topic's ``max.message.bytes`` with room for its batch."""
MAX_BYTES = 1_048_576
"""The topic's ``max.message.bytes``, said explicitly."""


def chunks(broker_id: int, records: Sequence[applied.Record]) -> list[tuple[bytes, bytes, int]]:
    """Broker ``broker_id``'s log as the (key, value, record count) of each chunk it is sent as;
    the same log always gives the same chunks."""
    found: list[tuple[bytes, bytes, int]] = []
    lines: list[bytes] = []
    size = 0
    for record in records:
        line = record.line().encode()
        if lines and size + len(line) > CHUNK_BYTES:
            found.append(_chunk(broker_id, lines))
            lines, size = [], 0
        lines.append(line)
        size += len(line)
    if lines:
        found.append(_chunk(broker_id, lines))
    return found


def _chunk(broker_id: int, lines: list[bytes]) -> tuple[bytes, bytes, int]:
    value = b"".join(lines)
    return f"{_prefix(broker_id)}{hashlib.sha256(value).hexdigest()}".encode(), value, len(lines)


def _prefix(broker_id: int) -> str:
    return f"broker-{broker_id}@"


def ensure_topic(admin: Any, brokers: int, bootstrap: str) -> bool:
    """Create :data:`TOPIC` unless it exists, as every own topic is."""
    return owntopics.ensure_topic(
        admin, TOPIC, brokers, bootstrap, what=f"{WHAT} topic", configs={"max.message.bytes": str(MAX_BYTES)}
    )


def append(producer: Any, pairs: list[tuple[bytes, bytes]], bootstrap: str, timeout: float) -> None:
    """Send ``pairs`` (key, value) and wait until the cluster has every one of them."""
    owntopics.append(producer, TOPIC, pairs, bootstrap, timeout, what=WHAT)


def read_keys(consumer: Any, bootstrap: str, timeout: float) -> set[bytes]:
    """Every key here (what a carry does not send again); no value is kept."""
    found, _ = owntopics.read_from(consumer, TOPIC, None, bootstrap, timeout, what=WHAT, keys_only=True)
    return {m.key for m in found if m.key is not None}


def read_broker(consumer: Any, broker_id: int, bootstrap: str, timeout: float) -> list[applied.Record] | None:
    """Broker ``broker_id``'s records in log order (None: none carried), each line once; only its
    chunks are kept. A line that is not an applied-log record is skipped, as a reader of the file
    skips it."""
    prefix = _prefix(broker_id).encode()
    found, _ = owntopics.read_from(
        consumer,
        TOPIC,
        None,
        bootstrap,
        timeout,
        what=WHAT,
        keep=lambda key: key is not None and key.startswith(prefix),
    )
    seen: set[bytes] = set()
    records: list[applied.Record] = []
    for message in found:
        for line in (message.value or b"").splitlines(keepends=True):
            if line in seen:
                continue
            seen.add(line)
            record = applied.parse(line.decode("utf-8", errors="replace"))
            if record is not None and record.broker_id == broker_id:
                records.append(record)
    return records or None


__all__ = ["CHUNK_BYTES", "TOPIC", "append", "chunks", "ensure_topic", "read_broker", "read_keys"]
