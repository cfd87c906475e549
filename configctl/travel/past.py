"""An entity's config at a moment, from configctl's history records, and where history ends.

ZooKeeper keeps only an entity's latest bytes; configctl records every write it makes (and every
write a broker made for it) under ``/configctl/history/<entity path>`` with its time, and keeps
the newest ``history_limit`` records per entity. So the config an entity had at T is the config
of its newest record at or before T. Where no record reaches back to T the answer is not guessed:

- the oldest record kept is version 0 (the node's creation): the entity had no config before it;
- it is a later version (older records were trimmed): T is beyond the horizon, :class:`BeyondHorizon`
  (exit 13) names the entity and the oldest moment its history covers;
- there is no record at all but the entity exists (written by another tool, or history off):
  its past is unknown, also beyond the horizon; an entity with neither never had a config.

``change:N`` becomes the time of the history record of change N's write: its entity and rough
time come from its notification while ZooKeeper keeps it (15 minutes by default), else from a
broker's applied log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from configctl import applied
from configctl.entities import Entity
from configctl.errors import BeyondHorizon, InvalidInput
from configctl.store import ABSENT, ConfigStore, Stored
from configctl.timeref import TimeRef, iso
from configctl.travel.outside import Derived, OutsideWrite, as_record, as_unknown, derive
from configctl.znodes import HistoryRecord


class History:
    """The store's history records, read once per entity per command (newest first), with the
    writes made outside configctl derived beside them (:mod:`configctl.travel.outside`).

    ``logs`` are applied-log records already read (any brokers): they say what an outside write's
    change did."""

    def __init__(self, store: ConfigStore, logs: Sequence[applied.Record] = ()) -> None:
        self.store = store
        self.logs = logs
        self._records: dict[str, list[HistoryRecord]] = {}
        self._recorded: dict[str, list[HistoryRecord]] = {}
        self._derived: dict[str, Derived] = {}
        self._outside: dict[int, OutsideWrite] = {}  # id of a derived record -> the write it stands for
        self._unknown: dict[int, OutsideWrite] = {}  # id of a record marking when a gap's config is unknown
        self._entities: list[Entity] | None = None
        self._notifications: list[tuple[int, str, int]] | None = None
        self._changes: list[applied.Record] | None = None
        self._exists: dict[str, bool] = {}  # does the entity's config node exist now (read once)

    def recorded(self, entity: Entity) -> list[HistoryRecord]:
        """configctl's own records of ``entity``, newest first (the config node is read first, so a
        write landing in between is seen as newer than the node, not as a gap)."""
        found = self._recorded.get(entity.path)
        if found is None:
            self.prefetch([entity])
            found = self._recorded[entity.path]
        return found

    def prefetch(self, entities: Sequence[Entity]) -> None:
        """Read the config nodes, then the records, of ``entities`` not read yet, in few round trips."""
        wanted = [e for e in dict.fromkeys(entities) if e.path not in self._recorded]
        if not wanted:
            return
        nodes = {s.entity.path: s for s in self.store.read_many(wanted, strict=False)}
        records = (
            self.store.histories(wanted)
            if len(wanted) > 1
            else {wanted[0].path: self.store.history(wanted[0])}
        )
        notified: dict[str, list[tuple[int, int]]] = {}
        for number, path, ctime in self.notifications():
            notified.setdefault(path, []).append((number, ctime))
        for entity in wanted:
            node = nodes[entity.path]
            self._exists[entity.path] = node.exists
            found = records.get(entity.path, [])
            self._recorded[entity.path] = found
            # with history off (a limit of 0) configctl's own writes are not recorded either, so an
            # unrecorded version says nothing about who wrote it: nothing is derived
            self._derived[entity.path] = derive(
                entity.path, found, node if self.store.history_limit > 0 else None,
                notified.get(entity.path, ()), self.changes(),
            )  # fmt: skip

    def changes(self) -> list[applied.Record]:
        """What each change did: the applied logs given, and what the store itself knows (on
        KRaft, every write the flight recorder holds), read once."""
        if self._changes is None:
            self._changes = [*self.logs, *self.store.notified_changes()]
        return self._changes

    def outside(self, entity: Entity) -> list[OutsideWrite]:
        """The writes of ``entity`` made outside configctl, newest first."""
        return self.derived(entity).outside

    def derived(self, entity: Entity) -> Derived:
        """What is derived of ``entity``'s writes: those outside configctl, each version's change number."""
        self.recorded(entity)
        return self._derived[entity.path]

    def outside_of(self, record: HistoryRecord) -> OutsideWrite | None:
        """The outside write a record of :meth:`records` stands for (None: configctl's own record)."""
        return self._outside.get(id(record)) or self._unknown.get(id(record))

    def is_unknown(self, record: HistoryRecord) -> bool:
        """Whether ``record`` only marks where a gap nobody can date may have begun."""
        return id(record) in self._unknown

    def records(self, entity: Entity) -> list[HistoryRecord]:
        """Every write of ``entity`` as records, newest first: configctl's, and each outside write
        as a record (:func:`configctl.travel.outside.as_record`); a gap not every write of which is
        dated also leaves a record without a config from the earliest it can have begun, so a moment
        inside it is said to be unknown rather than answered from the record before it."""
        found = self._records.get(entity.path)
        if found is not None:
            return found
        merged = list(self.recorded(entity))
        for write in self.outside(entity):
            if write.time_ms is not None:
                record = as_record(write)
                self._outside[id(record)] = write
                merged.append(record)
            if write.time_ms is None or write.writes > 1:
                marker = as_unknown(write)
                self._unknown[id(marker)] = write
                merged.append(marker)
        merged.sort(key=lambda r: r.time_ms, reverse=True)  # stable: same-time records keep their order
        self._records[entity.path] = merged
        return merged

    def entities(self) -> list[Entity]:
        """Every entity with history, deleted ones included."""
        if self._entities is None:
            self._entities = self.store.history_entities()
        return self._entities

    def entities_of(self, etype: Any) -> list[Entity]:
        """The entities of one type that have a config now or had one in the history kept."""
        found = {e.path: e for e in self.store.entities(etype)}
        for entity in self.entities():
            if entity.type == etype:
                found.setdefault(entity.path, entity)
        return list(found.values())

    def notifications(self) -> list[tuple[int, str, int]]:
        if self._notifications is None:
            self._notifications = self.store.notification_times()
        return self._notifications

    def record_at(self, entity: Entity, at_ms: int, exists_now: bool) -> HistoryRecord | None:
        """The record in force at ``at_ms`` (None: the entity had no config then)."""
        records = self.records(entity)
        for record in records:
            if record.time_ms <= at_ms:
                return record
        if not records:
            if exists_now:
                raise BeyondHorizon(
                    f"configctl's history holds no record of {entity.path} (written by another tool, or "
                    f"with history off), so its config at {iso(at_ms)} is unknown"
                )
            return None
        oldest = records[-1]
        if oldest.version <= 0:
            return None  # created after at_ms
        archived = self.store.history_archive
        kept = f" (ZooKeeper and the archive {archived})" if archived is not None else ""
        raise BeyondHorizon(
            f"the history of {entity.path}{kept} reaches back to {iso(oldest.time_ms)} (version {oldest.version}); "
            f"{iso(at_ms)} is beyond that horizon"
        )

    def config_at(self, entity: Entity, at_ms: int, exists_now: bool) -> dict[str, str]:
        """``entity``'s stored config at ``at_ms`` ({} when it had none); beyond the horizon: exit 13."""
        return self._config_of(entity, self.record_at(entity, at_ms, exists_now))

    def _config_of(self, entity: Entity, record: HistoryRecord | None) -> dict[str, str]:
        unknown = self._unknown.get(id(record)) if record is not None else None
        if unknown is not None:
            raise BeyondHorizon(f"{entity.path}: {_unknown_span(unknown)}, so its config then is unknown")
        if record is None or record.version < 0:
            return {}
        if record.config is None:
            outside = self._outside.get(id(record))
            if outside is not None:
                raise BeyondHorizon(
                    f"{entity.path} version {record.version} ({iso(record.time_ms)}) was {outside.summary()}, "
                    "and what it changed is unknown, so its config then is unknown"
                )
            raise BeyondHorizon(
                f"{entity.path} version {record.version} ({iso(record.time_ms)}) was recorded by its digest "
                "only (too large to keep beside it), so its config then is unknown"
            )
        return dict(record.config)

    def stored_at(self, entities: Iterable[Entity], at_ms: int) -> list[Stored]:
        """Each entity's config at ``at_ms`` as a :class:`Stored` (as ``describe`` reads the present)."""
        wanted = list(entities)
        unknown = [e for e in wanted if e.path not in self._exists]
        if unknown:
            self._exists.update(
                {s.entity.path: s.exists for s in self.store.read_many(unknown, strict=False)}
            )
        result = []
        for entity in wanted:
            record = self.record_at(entity, at_ms, self._exists.get(entity.path, False))
            config = self._config_of(entity, record)
            version = record.version if record is not None else ABSENT
            result.append(Stored(entity, config, version))
        return result

    def change_number_of(self, record: HistoryRecord) -> int | None:
        """The change number of a write, while its notification is still in ZooKeeper: the one its
        version's place among the entity's notifications gives, else the first notification of
        that entity created at or after the record's time."""
        outside = self.outside_of(record)
        if outside is not None:
            return outside.change_number
        derived = self._derived.get(record.entity_path)
        if derived is not None and record.version in derived.change_numbers:
            return derived.change_numbers[record.version]
        for number, path, ctime in self.notifications():
            if path == record.entity_path and ctime >= record.time_ms:
                return number
        return None


def _unknown_span(write: OutsideWrite) -> str:
    """When a gap's writes happened, as far as is known, in words."""
    low = iso(write.not_before_ms) if write.not_before_ms is not None else "its oldest record"
    last = write.time_ms if write.time_ms is not None else write.not_after_ms
    high = iso(last) if last is not None else "now"
    return f"{write.writes} write(s) outside configctl, not recorded, were made between {low} and {high}"


def resolve(ref: TimeRef, history: History, logs: Sequence[applied.Record] = ()) -> int:
    """The moment ``ref`` names, in epoch ms (``change:N``: the time change N was recorded)."""
    if ref.at_ms is not None:
        return ref.at_ms
    number = ref.change
    assert number is not None
    path, seen_ms = None, None
    for found, entity_path, ctime in history.notifications():
        if found == number:
            path, seen_ms = entity_path, ctime
            break
    if path is None:
        for record in logs:
            if record.change_number == number and record.entity_path and record.kind != applied.OBSERVED:
                path, seen_ms = record.entity_path, record.applied_at_ms
                break
    if path is None or seen_ms is None:
        present = history.notifications()
        if present and number > present[-1][0]:
            raise InvalidInput(
                f"change {number} has not happened yet (the newest is change {present[-1][0]})"
            )
        oldest = f" (the oldest still in ZooKeeper is change {present[0][0]})" if present else ""
        raise BeyondHorizon(
            f"change {number} is older than the change notifications ZooKeeper keeps{oldest} and no applied "
            "log read records it; give a time instead, or --applied-log DIR"
        )
    records = history.records(Entity.from_path(path))
    before = [r for r in records if r.time_ms <= seen_ms]
    # no record at or before it: the write's own record was trimmed (then the moment it was seen
    # lies beyond the horizon, and is refused as such), or history was off
    return before[0].time_ms if before else seen_ms


def applied_records(broker_id: int, given: Sequence[str | Path]) -> list[applied.Record] | None:
    """Broker ``broker_id``'s applied log, from the state directories given (``--applied-log``);
    None when none of them holds one. A directory that is not there, or cannot be read, is one
    line; the same log given twice (or an older copy beside a newer one) is read once, whatever
    the order (:func:`configctl.applied.read_copies`)."""
    places = [Path(p) for p in given]
    found = []
    for place in places:
        if not place.is_dir():
            raise InvalidInput(f"--applied-log {place}: no such directory")
        try:
            if applied.segments(place, broker_id):
                found.append(place)
        except OSError as exc:
            raise InvalidInput(f"--applied-log {place}: cannot read it ({exc.strerror or exc})") from None
    if not found:
        return None
    try:
        return applied.read_copies(found, broker_id)
    except OSError as exc:
        raise InvalidInput(f"--applied-log: cannot read it ({exc.strerror or exc})") from None
