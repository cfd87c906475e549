"""Writes that reached the brokers without configctl (Kafka's tools, Cruise Control, another admin
client), derived when read: configctl never records them, and never persists what is derived.

configctl records every write it makes; nobody else does. Their writes leave three traces, which
this module merges into one timeline with configctl's own records (pure: the caller reads them):

- the config node's **version**: every write moves it by one, so a version configctl's history has
  no record of is a write outside configctl (a *gap*); the node's creation and modification times
  date its first and last write;
- the **change notification** each write creates (its number and creation time), kept 15 minutes
  by Kafka: an entity's notifications, newest first, belong to its versions newest first (every
  write makes one; Kafka's topic creation, version 0, makes none, and is the oldest);
- the listeners' **applied logs**: what each change number moved on a broker (the stored values).

What a gap changed is known when the config before it and after it are: before is the previous
record's config, after is the next record's config with that record's own changes undone, or the
node's config now. A gap of several writes is split into one entry per write when each is dated
and what each changed is known (an applied log says what the earlier ones stored); otherwise it is
one entry, "N writes outside configctl, not recorded", with what they changed together: never
silence. Versions older than the oldest record kept are
not gaps: history may have been trimmed there (that is the horizon, :mod:`configctl.travel.past`).

Short-lived false gaps are possible while a write is in flight: configctl's Admin API path
records its history right after the broker's write, and Kafka's tool sets the node before it
creates the notification. A second read settles both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from configctl import applied, secrets
from configctl.entities import Entity
from configctl.store import ABSENT, Stored
from configctl.znodes import HistoryRecord

OUTSIDE = "written outside configctl"
"""How every reader names such a write (``history``, ``blame``, the console, the audit)."""


@dataclass(frozen=True)
class OutsideWrite:
    """One write outside configctl, or ``writes`` of them whose versions end at ``version`` (a gap
    whose writes cannot be told apart). ``change_number`` is its (last) write's, ``change_numbers``
    every one known. ``time_ms`` is when its (last) write was made (None: unknown, then it was after
    ``not_before_ms`` and before ``not_after_ms``). ``config`` is the config it left and ``changed``
    each key it moved with its value before (as a history record's ``changed``); None: unknown.
    ``applied`` holds what a listener's applied log says its change did (``broker_id``, ``key``,
    ``old``: the effective value before on that broker, ``new``: the value stored), ``removed``
    says the node was deleted."""

    entity_path: str
    version: int
    writes: int = 1
    change_number: int | None = None
    change_numbers: tuple[int, ...] = ()
    time_ms: int | None = None
    not_before_ms: int | None = None
    not_after_ms: int | None = None
    config: dict[str, str] | None = None
    changed: dict[str, str | None] | None = None
    applied: tuple[dict[str, Any], ...] = ()
    removed: bool = False

    @property
    def first_version(self) -> int:
        return self.version - self.writes + 1

    @property
    def sort_ms(self) -> int:
        """Where it stands in a timeline: its time, else the earliest it can have been."""
        if self.time_ms is not None:
            return self.time_ms
        return (self.not_before_ms + 1) if self.not_before_ms is not None else 0

    def summary(self) -> str:
        """One line for people: what is known of it."""
        what = OUTSIDE
        if self.writes > 1:
            what = f"{self.writes} writes outside configctl, not recorded"
        elif self.removed:
            what = "config node removed outside configctl"
        if len(self.change_numbers) > 1:
            what += f" (changes {', '.join(map(str, self.change_numbers))})"
        elif self.change_number is not None:
            what += f" (change {self.change_number})"
        return what

    def to_json(self) -> dict[str, Any]:
        """An element of ``history -o json`` (and the console's entity history) for this write."""
        return {
            "written_outside_configctl": True,
            "summary": self.summary(),
            "entity_path": self.entity_path,
            "version": self.version,
            "writes": self.writes,
            "change_number": self.change_number,
            "change_numbers": list(self.change_numbers),
            "time_ms": self.time_ms,
            "not_before_ms": self.not_before_ms,
            "not_after_ms": self.not_after_ms,
            "identity": None,
            "reason": None,
            "config": self.config,
            "changed": self.changed,
            "applied": list(self.applied),
        }

    def moved_keys(self) -> tuple[str, ...]:
        """The keys it is known to have moved (its delta, else its applied log's)."""
        if self.changed is not None:
            return tuple(sorted(self.changed))
        return tuple(sorted({k["key"] for k in self.applied}))


@dataclass
class Derived:
    """An entity's writes: the outside ones derived, and the change number of each version known."""

    outside: list[OutsideWrite] = field(default_factory=list)
    change_numbers: dict[int, int] = field(default_factory=dict)
    """version -> change number, for the versions an entity's notifications still name."""


def derive(
    entity_path: str,
    records: Sequence[HistoryRecord],
    node: Stored | None,
    notifications: Iterable[tuple[int, int]] = (),
    logs: Iterable[applied.Record] = (),
) -> Derived:
    """The writes of ``entity_path`` outside configctl, newest first.

    ``records`` are configctl's (newest first), ``node`` the config node now (None: not read, then
    nothing is derived), ``notifications`` the entity's ``(change number, ctime ms)`` still in
    ZooKeeper, ``logs`` the applied-log records read (any brokers).
    """
    result = Derived()
    if node is None:
        return result
    current = node.version
    skipped, kept, stop = _incarnation(records, node)
    boundary = records[stop] if stop < len(records) else None
    if current < 0:
        newest = records[skipped] if skipped < len(records) else None
        if newest is not None and newest.version >= 0:
            result.outside.append(
                OutsideWrite(entity_path, ABSENT, removed=True, not_before_ms=newest.time_ms, config={})
            )
        return result
    if not kept and boundary is not None and boundary.version >= 0:
        # configctl's newest record is of a node that is gone: someone removed it, and made this one
        result.outside.append(
            OutsideWrite(
                entity_path,
                ABSENT,
                removed=True,
                not_before_ms=boundary.time_ms,
                not_after_ms=node.created_ms,
                config={},
            )
        )
    number_of = _paired(notifications, kept, current, node.created_ms)
    result.change_numbers = {v: n for v, (n, _) in number_of.items()}
    by_change = _applied_keys(logs, entity_path)
    for first, last in _gaps(kept, current):
        if (first, last) == (0, 0) and not node.config and 0 not in number_of:
            continue  # an empty node Kafka made (a topic created bare, a user+client quota's parent): no write
        older = next((r for r in kept if r.version < first), None)
        newer = next((r for r in reversed(kept) if r.version > last), None)
        before = _config_of(older) if older is not None else ({} if first == 0 else None)
        after = dict(node.config) if last == current and node.problem is None else _before(newer)
        low_ms = older.time_ms if older is not None else (boundary.time_ms if boundary is not None else None)
        if first == 0 and node.created_ms is not None:
            low_ms = node.created_ms - 1  # the gap began with the node's creation
        high_ms = newer.time_ms if newer is not None else None
        result.outside.extend(
            _split(
                entity_path, first, last, before, after, low_ms, high_ms, number_of, by_change, node, current
            )
        )
    result.outside.sort(key=lambda w: (w.sort_ms, w.version), reverse=True)
    return result


CLOCK_SLACK_MS = 10_000
"""How much earlier than the node's creation (ZooKeeper's clock) configctl's record of that
creation may be timed (the writer's clock, read just before its transaction)."""


def _incarnation(records: Sequence[HistoryRecord], node: Stored) -> tuple[int, list[HistoryRecord], int]:
    """``(skipped, kept, stop)``: configctl's records of the node as it is now, newest first, and
    the index of the first record not of it.

    Records newer than the node read (a write that landed since) are skipped at the head. The run
    stops at a removal; at a version that does not go down; at a record of the node's current
    version whose config is not the node's, or one older than the node's creation (the node was
    removed and made again by someone else, so its versions started over)."""
    skipped = 0
    while (
        skipped < len(records)
        and records[skipped].version > node.version
        and node.modified_ms is not None
        and records[skipped].time_ms >= node.modified_ms
    ):
        skipped += 1
    kept: list[HistoryRecord] = []
    index = skipped
    while index < len(records):
        record = records[index]
        if record.version < 0 or record.version > node.version:
            break
        if node.created_ms is not None and record.time_ms < node.created_ms - CLOCK_SLACK_MS:
            break
        if (
            not kept
            and record.version == node.version
            and record.config is not None
            and node.problem is None
            and not _same_config(record, node)
        ):
            break
        if kept and record.version >= kept[-1].version:
            if record.version != kept[-1].version:
                break
        else:  # (a record of the version kept last is the same write recorded twice)
            kept.append(record)
        index += 1
    return skipped, kept, index


def _gaps(kept: Sequence[HistoryRecord], current: int) -> list[tuple[int, int]]:
    """The unrecorded version runs ``(first, last)``, newest first: above the newest record up to
    the node's version, and every hole between two records (below the oldest: the horizon)."""
    if not kept:
        return [(0, current)]
    runs = []
    if kept[0].version < current:
        runs.append((kept[0].version + 1, current))
    for newer, older in pairwise(kept):
        if newer.version - older.version > 1:
            runs.append((older.version + 1, newer.version - 1))
    return runs


def _paired(
    notifications: Iterable[tuple[int, int]],
    kept: Sequence[HistoryRecord],
    current: int,
    created_ms: int | None,
) -> dict[int, tuple[int, int]]:
    """version -> ``(change number, ctime)`` for the versions whose notification can be told.

    configctl's own records are the anchors: each recorded write's notification is the one created
    closest to its record's time (within :data:`CLOCK_SLACK_MS`). The notifications between two
    anchors belong to the unrecorded versions between them, newest first: every write creates one,
    and Kafka purges the oldest first, so the newest are the ones kept. A notification older than
    the node itself is of a removed node. Where an anchor is missing, the versions are counted
    from the next one up (or from the node's version)."""
    notes = sorted((n for n in notifications if created_ms is None or n[1] >= created_ms), reverse=True)
    pairs: dict[int, tuple[int, int]] = {}
    owned: set[int] = set()
    for record in kept:  # newest first: each takes the closest notification below the one above
        below = min(owned) if owned else None
        near = [
            n
            for n in notes
            if abs(n[1] - record.time_ms) <= CLOCK_SLACK_MS and (below is None or n[0] < below)
        ]
        if near:
            found = min(near, key=lambda n: (abs(n[1] - record.time_ms), -n[0]))
            pairs[record.version] = found
            owned.add(found[0])
    recorded = {r.version for r in kept}
    ceiling: int | None = None  # the number every notification of the versions below must be under
    pending: list[int] = []  # unrecorded versions above the next anchor, newest first
    for version in range(current, -1, -1):
        if version in recorded:
            anchor = pairs.get(version)
            _assign(pending, notes, owned, ceiling, anchor[0] if anchor else None, pairs)
            pending = []
            if anchor is None:
                break  # no anchor: below it nothing can be told
            ceiling = anchor[0]
        else:
            pending.append(version)
    else:
        _assign(pending, notes, owned, ceiling, None, pairs)
    return pairs


def _assign(
    versions: Sequence[int],
    notes: Sequence[tuple[int, int]],
    owned: set[int],
    ceiling: int | None,
    floor: int | None,
    pairs: dict[int, tuple[int, int]],
) -> None:
    """The notifications numbered between ``floor`` and ``ceiling`` (exclusive), newest first, to
    ``versions`` newest first; more of them than versions: none (they cannot all be of these)."""
    between = [
        n
        for n in notes
        if n[0] not in owned and (ceiling is None or n[0] < ceiling) and (floor is None or n[0] > floor)
    ]
    if len(between) > len(versions):
        return
    for version, note in zip(versions, between, strict=False):
        pairs[version] = note


def _applied_keys(logs: Iterable[applied.Record], entity_path: str) -> dict[int, tuple[dict[str, Any], ...]]:
    """change number -> the keys an applied log says it set (stored values), from the first
    broker's record of it."""
    found: dict[int, tuple[dict[str, Any], ...]] = {}
    for record in logs:
        if (
            record.kind != applied.APPLIED
            or record.entity_path != entity_path
            or record.change_number is None
        ):
            continue
        if record.change_number in found:
            continue
        found[record.change_number] = tuple(
            {"key": k.key, "old": k.old, "new": k.stored, "broker_id": record.broker_id} for k in record.keys
        )
    return found


def _split(
    entity_path: str,
    first: int,
    last: int,
    before: dict[str, str] | None,
    after: dict[str, str] | None,
    low_ms: int | None,
    high_ms: int | None,
    number_of: Mapping[int, tuple[int, int]],
    by_change: Mapping[int, tuple[dict[str, Any], ...]],
    node: Stored,
    current: int,
) -> list[OutsideWrite]:
    """One gap as entries: a write per version when each is dated (its notification, or the node's
    own times), else the whole gap as one entry."""

    def when(version: int) -> int | None:
        if version == current and node.modified_ms is not None:
            return node.modified_ms  # the write itself (its notification follows it)
        if version in number_of:
            return number_of[version][1]
        if version == 0 and node.created_ms is not None:
            return node.created_ms
        return None

    versions = range(first, last + 1)
    numbers = tuple(number_of[v][0] for v in versions if v in number_of)
    configs = _configs(versions, before, after, number_of, by_change)
    if len(versions) > 1 and (any(when(v) is None for v in versions) or any(c is None for c in configs[:-1])):
        # its writes cannot be told apart (undated, or what each changed unknown): one entry, dated
        # by its last write when known, with the change it made as a whole
        number = number_of[last][0] if last in number_of else None
        return [
            OutsideWrite(
                entity_path,
                last,
                writes=len(versions),
                change_number=number,
                change_numbers=numbers,
                time_ms=when(last),
                not_before_ms=low_ms,
                not_after_ms=high_ms,
                config=after,
                changed=_delta(before, after),
                applied=tuple(k for n in numbers for k in by_change.get(n, ())),
            )
        ]
    entries = []
    previous = before
    for version, config in zip(versions, configs, strict=True):
        number = number_of[version][0] if version in number_of else None
        entries.append(
            OutsideWrite(
                entity_path,
                version,
                change_number=number,
                change_numbers=(number,) if number is not None else (),
                time_ms=when(version),
                not_before_ms=low_ms,
                not_after_ms=high_ms,
                config=config,
                changed=_delta(previous, config),
                applied=by_change.get(number, ()) if number is not None else (),
            )
        )
        previous = config
    return entries


def _configs(
    versions: range,
    before: dict[str, str] | None,
    after: dict[str, str] | None,
    number_of: Mapping[int, tuple[int, int]],
    by_change: Mapping[int, tuple[dict[str, Any], ...]],
) -> list[dict[str, str] | None]:
    """The config each version of a gap left: the last is ``after``; one before it is known when
    the config before it is and an applied log says what its change stored."""
    configs: list[dict[str, str] | None] = []
    config = before
    for version in versions:
        logged = by_change.get(number_of[version][0], ()) if version in number_of else ()
        if version == versions[-1]:
            config = after
        elif config is not None and logged:
            config = dict(config)
            for key in logged:
                if key["new"] is None:
                    config.pop(key["key"], None)
                else:
                    config[key["key"]] = key["new"]
        else:
            config = None
        configs.append(config)
    return configs


def _config_of(record: HistoryRecord) -> dict[str, str] | None:
    return dict(record.config) if record.config is not None and record.version >= 0 else None


def _before(record: HistoryRecord | None) -> dict[str, str] | None:
    """The config just before ``record``'s write: its config with its own changes undone."""
    if record is None or record.config is None:
        return None
    config = dict(record.config)
    for key, old in record.changed.items():
        if old is None:
            config.pop(key, None)
        else:
            config[key] = old
    return config


def _delta(before: Mapping[str, str] | None, after: Mapping[str, str] | None) -> dict[str, str | None] | None:
    """Each key that differs, with its value before (None: not set); None when either is unknown."""
    if before is None or after is None:
        return None
    return {k: before.get(k) for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)}


def as_record(write: OutsideWrite) -> HistoryRecord:
    """The write as a history record for the readers that replay records (``--at``, ``blame``):
    identity and reason empty, never written anywhere. A gap whose config is unknown has
    ``config`` None (the moment it covers is beyond what can be said)."""
    return HistoryRecord(
        write.entity_path,
        write.version,
        write.sort_ms,
        "",
        OUTSIDE,
        None if write.config is None else dict(write.config),
        dict(write.changed or {}),
    )


def as_unknown(write: OutsideWrite) -> HistoryRecord:
    """A record without a config from the earliest moment a gap's writes can have begun: a moment
    from there to its last dated write is one nobody can answer (its version is the gap's first)."""
    return HistoryRecord(
        write.entity_path,
        write.first_version,
        (write.not_before_ms + 1) if write.not_before_ms is not None else 0,
        "",
        OUTSIDE,
        None,
        {},
    )


def _same_config(record: HistoryRecord, node: Stored) -> bool:
    """Whether ``record`` holds the node's config, secrets compared as history records them
    (masked where the store hands them back in clear: a KRaft cluster's SCRAM credentials)."""
    entity = Entity.from_path(record.entity_path)
    return secrets.masked(entity, record.config or {}) == secrets.masked(entity, node.config)
