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
    return keyed([record])[0][0]


def keyed(records: Iterable[applied.Record]) -> list[tuple[bytes, bytes]]:
    """Each record as the (key, value) it is sent as: its line, and the key made of it."""
    pairs = []
    for record in records:
        line = record.line().encode()
        pairs.append((f"{_prefix(record.broker_id)}{hashlib.sha256(line).hexdigest()}".encode(), line))
    return pairs


def _prefix(broker_id: int) -> str:
    return f"broker-{broker_id}@"


def ensure_topic(admin: Any, brokers: int, bootstrap: str) -> bool:
    """Create :data:`TOPIC` unless it exists, as every own topic is."""
    return owntopics.ensure_topic(admin, TOPIC, brokers, bootstrap, what=f"{WHAT} topic")


def append(producer: Any, pairs: list[tuple[bytes, bytes]], bootstrap: str, timeout: float) -> None:
    """Send ``pairs`` (:func:`keyed`) and wait until the cluster has every one of them."""
    owntopics.append(producer, TOPIC, pairs, bootstrap, timeout, what=WHAT)


def read_keys(consumer: Any, bootstrap: str, timeout: float) -> set[bytes]:
    """Every key here (what a carry does not send again); no value is kept."""
    found, _ = owntopics.read_from(consumer, TOPIC, None, bootstrap, timeout, what=WHAT, keys_only=True)
    return {m.key for m in found if m.key is not None}


def read_broker(consumer: Any, broker_id: int, bootstrap: str, timeout: float) -> list[applied.Record] | None:
    """Broker ``broker_id``'s records in log order (None: none carried); only its records are kept.
    A line that is not an applied-log record (another tool's bytes) is skipped, as a reader of the
    file skips it, and so is a key seen before."""
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
        if message.value is None or message.key in seen:
            continue
        record = applied.parse(message.value.decode("utf-8", errors="replace"))
        if record is not None and record.broker_id == broker_id:
            assert message.key is not None
            seen.add(message.key)
            records.append(record)
    return records or None


__all__ = ["TOPIC", "append", "ensure_topic", "key_of", "keyed", "read_broker", "read_keys"]
