"""The ZooKeeper-era listeners' applied logs, carried into a migrated cluster: one own topic of applied-log lines.

Before a migration, each ZooKeeper-mode listener logged what its broker applied (and refused) in
its state directory (docs/reference/applied-log.md): the only record of what a broker ran, where
history says only what was written. ``migration carry --applied-log DIR`` sends every record of
those logs to :data:`TOPIC`, one applied-log line per record, so ``describe --effective --at``,
``blame`` and ``diff`` read what each broker ran before the migration from the cluster alone,
with no state directory at hand. Nothing else writes here: after the migration the brokers
report what they run themselves.

One of configctl's own topics (:mod:`configctl.kraft.owntopics`: one partition, compacted, kept
forever). Keyed ``broker-<id>@<sha256 of the line>``: a record carried twice has one key, so
compaction keeps one, and a carry sends only the lines not here yet. Log order is each broker's
order, as the fold of an applied log needs (:func:`configctl.applied.fold`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from configctl import applied
from configctl.kraft import owntopics

TOPIC = "_configctl_applied"
"""The carried applied logs' topic (one leading underscore: Kafka keeps ``__`` for its own topics)."""
WHAT = "the listeners' carried applied logs"


def key_of(record: applied.Record) -> bytes:
    """``broker-<id>@<sha256 of its line>``: the same record always has the same key."""
    digest = hashlib.sha256(record.line().encode()).hexdigest()
    return f"broker-{record.broker_id}@{digest}".encode()


def ensure_topic(admin: Any, brokers: int, bootstrap: str) -> bool:
    """Create :data:`TOPIC` unless it exists, as every own topic is."""
    return owntopics.ensure_topic(admin, TOPIC, brokers, bootstrap, what=f"{WHAT} topic")


def append(producer: Any, records: Iterable[applied.Record], bootstrap: str, timeout: float) -> None:
    """Send ``records`` and wait until the cluster has every one of them."""
    keyed = [(key_of(r), r.line().encode()) for r in records]
    owntopics.append(producer, TOPIC, keyed, bootstrap, timeout, what=WHAT)


def read_all(
    consumer: Any, bootstrap: str, timeout: float
) -> tuple[set[bytes], dict[int, list[applied.Record]]]:
    """Every key here, and each broker's records in log order. A line that is not an applied-log
    record (a tombstone, another tool's bytes) is skipped, as a reader of the file skips it."""
    found, _ = owntopics.read_from(consumer, TOPIC, None, bootstrap, timeout, what=WHAT)
    keys: set[bytes] = set()
    by_broker: dict[int, list[applied.Record]] = {}
    for message in found:
        if message.key is None or message.value is None:
            continue
        record = applied.parse(message.value.decode("utf-8", errors="replace"))
        if record is None or message.key in keys:
            continue
        keys.add(message.key)
        by_broker.setdefault(record.broker_id, []).append(record)
    return keys, by_broker


__all__ = ["TOPIC", "append", "ensure_topic", "key_of", "read_all"]
