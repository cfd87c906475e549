"""The flight recorder's topic: every committed config write of a KRaft cluster, whoever made it, kept for good.

Kafka keeps its metadata log for days (by default 7 days or 100 MiB), then only a snapshot of
the present. The recorder beside each broker (:mod:`configctl.kraft.recorder`) copies what
configctl needs of each committed write into :data:`TOPIC`, one of configctl's own topics
(:mod:`configctl.kraft.owntopics`: compacted, kept forever), so ``history``, ``blame``, ``--at``
and the audit's timeline know every writer's changes long after Kafka dropped them.

Keys (docs/reference/recorder-topic.md) make every sidecar's copy of one write the same record:

- ``change/<offset, 20 digits>``: one write (:class:`~configctl.kraft.metadatafold.MetadataChange`),
  numbered by its metadata offset. Every recorder of the cluster reads the same log, so two that
  record the same write send the same key, and compaction (and every reader) keeps one;
- ``gap/<start, 20 digits>``: offsets no recorder read before Kafka deleted them, with the
  entities whose config changed across them (a snapshot's state against the one before);
- ``recorder/<broker id>``: a sidecar's progress and problems, replaced by its next one: the
  offset it recorded up to, the quorum's high watermark when it looked, when.

A recorder resumes after the highest offset any recorder recorded (the topic's own records say
it), so a restart neither loses a write nor, since keys repeat, duplicates one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from configctl.kraft import owntopics
from configctl.kraft.metadatafold import MetadataChange

TOPIC = "_configctl_metadata"
WHAT = "configctl's flight recorder"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class GapRecord:
    """Offsets ``start`` up to ``end`` (exclusive) that no recorder read before Kafka deleted
    them; ``entities``: the entity paths whose config differs across them (``entities_known``
    False: the configs before the gap were unknown too, so nobody can say which changed)."""

    start: int
    end: int
    entities: tuple[str, ...] = ()
    recorded_by: int | None = None
    recorded_ms: int | None = None
    entities_known: bool = True


@dataclass
class Recorded:
    """What the topic holds: the writes by offset, the gaps, each recorder's last progress."""

    changes: dict[int, MetadataChange] = field(default_factory=dict)
    gaps: dict[int, GapRecord] = field(default_factory=dict)
    recorders: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def next_offset(self) -> int | None:
        """The offset after the last one any recorder recorded (None: nothing recorded yet)."""
        ends = [r.get("recorded_to") for r in self.recorders.values()]
        ends += [offset + 1 for offset in self.changes] + [gap.end for gap in self.gaps.values()]
        known = [end for end in ends if isinstance(end, int)]
        return max(known) if known else None

    @property
    def writes(self) -> dict[int, MetadataChange]:
        """The changes someone wrote, by offset: not a migration's copy of ZooKeeper's metadata
        (:attr:`MetadataChange.copied`), which restates what ZooKeeper held and is in its history."""
        return {offset: change for offset, change in self.changes.items() if not change.copied}

    def of_entity(self, entity_path: str) -> list[MetadataChange]:
        """The writes of one entity, oldest first (a migration's copy is none)."""
        writes = self.writes
        return [writes[o] for o in sorted(writes) if writes[o].entity_path == entity_path]


def change_key(offset: int) -> bytes:
    return f"change/{offset:020d}".encode()


def gap_key(start: int) -> bytes:
    return f"gap/{start:020d}".encode()


def recorder_key(broker_id: int) -> bytes:
    return f"recorder/{broker_id}".encode()


def encode_change(change: MetadataChange, broker_id: int, recorded_ms: int) -> bytes:
    document = {
        "v": FORMAT_VERSION,
        "kind": "change",
        "offset": change.offset,
        "time_ms": change.time_ms,
        "entity_path": change.entity_path,
        "changed": {key: {"old": old, "new": new} for key, (old, new) in change.changed.items()},
        "secrets": sorted(change.secrets),
        "recorded_by": broker_id,
        "recorded_ms": recorded_ms,
    }
    if change.copied:  # only then: a change record of a cluster born KRaft keeps its bytes
        document["copied"] = True
    return _encoded(document)


def encode_gap(gap: GapRecord) -> bytes:
    document = {
        "v": FORMAT_VERSION,
        "kind": "gap",
        "start": gap.start,
        "end": gap.end,
        "entities": list(gap.entities) if gap.entities_known else None,
        "recorded_by": gap.recorded_by,
        "recorded_ms": gap.recorded_ms,
    }
    return _encoded(document)


def encode_progress(
    broker_id: int,
    recorded_to: int,
    high_watermark: int | None,
    time_ms: int,
    problems: Iterable[str] = (),
    broker_offset: int | None = None,
    observed: dict[str, Any] | None = None,
) -> bytes:
    """A recorder's progress: recorded up to (exclusive) ``recorded_to``, the quorum's high
    watermark and the broker's own metadata log end (``broker_offset``) as the quorum reported
    them at ``time_ms``, and what the broker runs, asked of it (``observed``)."""
    document = {
        "v": FORMAT_VERSION,
        "kind": "recorder",
        "broker_id": broker_id,
        "recorded_to": recorded_to,
        "high_watermark": high_watermark,
        "broker_offset": broker_offset,
        "time_ms": time_ms,
        "problems": list(problems),
        "observed": observed,
    }
    return _encoded(document)


def _encoded(document: dict[str, Any]) -> bytes:
    """A record's value: compact JSON, keys sorted (the same write encodes to the same bytes)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def decode(value: bytes, into: Recorded) -> None:
    """Add one record's value to ``into``; a value that is not the recorder's is skipped (the
    topic is anyone's with write access to it)."""
    try:
        document = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return
    if not isinstance(document, dict) or document.get("v") != FORMAT_VERSION:
        return
    try:
        kind = document["kind"]
        if kind == "change":
            changed = {
                str(key): (_text(both.get("old")), _text(both.get("new")))
                for key, both in document["changed"].items()
            }
            change = MetadataChange(
                int(document["offset"]),
                int(document["time_ms"]),
                str(document["entity_path"]),
                changed,
                frozenset(str(k) for k in document.get("secrets", ())),
                document.get("copied") is True,
            )
            into.changes[change.offset] = change
        elif kind == "gap":
            entities = document.get("entities")
            gap = GapRecord(
                int(document["start"]),
                int(document["end"]),
                tuple(str(e) for e in entities or ()),
                document.get("recorded_by"),
                document.get("recorded_ms"),
                entities_known=entities is not None,
            )
            into.gaps[gap.start] = gap
        elif kind == "recorder":
            into.recorders[int(document["broker_id"])] = document
    except (KeyError, TypeError, ValueError, AttributeError):
        return


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def ensure_topic(admin: Any, brokers: int, bootstrap: str) -> bool:
    return owntopics.ensure_topic(admin, TOPIC, brokers, bootstrap, what=f"{WHAT} topic")


def append(producer: Any, records: Iterable[tuple[bytes, bytes]], bootstrap: str, timeout: float) -> None:
    owntopics.append(producer, TOPIC, records, bootstrap, timeout, what=WHAT)


RESUME_TAIL = 1000
"""How many of the topic's newest records a starting recorder reads to learn where to resume."""


def resume_offset(consumer: Any, bootstrap: str, timeout: float) -> int | None:
    """Where a recorder starts: after the furthest any recorder recorded, as the topic's newest
    records say (a recorder publishes its progress after every round that recorded something),
    else as the whole topic says (None: nothing recorded yet). A resume point lower than the
    furthest (another recorder's, older) only records some writes again, under the same keys."""
    tail = Recorded()
    for message in owntopics.read_tail(consumer, TOPIC, RESUME_TAIL, bootstrap, timeout, what=WHAT):
        if message.value is not None:
            decode(message.value, tail)
    if tail.next_offset is not None:
        return tail.next_offset
    return read_all(consumer, bootstrap, timeout).next_offset


def read_all(consumer: Any, bootstrap: str, timeout: float) -> Recorded:
    """Everything in :data:`TOPIC` (nothing, when no recorder ever ran)."""
    found, _ = owntopics.read_from(consumer, TOPIC, None, bootstrap, timeout, what=WHAT)
    recorded = Recorded()
    for message in found:
        if message.value is not None:
            decode(message.value, recorded)
    return recorded


__all__ = [
    "TOPIC",
    "GapRecord",
    "Recorded",
    "append",
    "change_key",
    "decode",
    "encode_change",
    "encode_gap",
    "encode_progress",
    "ensure_topic",
    "gap_key",
    "read_all",
    "recorder_key",
    "resume_offset",
]
