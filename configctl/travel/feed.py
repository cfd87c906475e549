"""``configctl history --since T [--until T]`` without an entity: the fleet's change feed.

Every write in the window across the fleet, newest first: each recorded write of every entity
with history (deleted entities included: their history directories outlive their config nodes),
and every write made outside configctl (:mod:`configctl.travel.outside`) of any entity, with
history or not. ``keys`` are the keys the write set or removed (the record's delta), never their
values: a feed is safe to paste.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from configctl import applied
from configctl.entities import Entity, EntityType
from configctl.store import ConfigStore
from configctl.travel.outside import OutsideWrite
from configctl.travel.past import History


@dataclass(frozen=True)
class FeedEntry:
    entity_path: str
    version: int
    time_ms: int | None
    identity: str | None
    reason: str | None
    keys: tuple[str, ...]
    outside: OutsideWrite | None = None
    """Set when the write was made outside configctl (``identity`` and ``reason`` are then None,
    and ``time_ms`` None when only its span is known)."""

    @property
    def sort_ms(self) -> int:
        return self.outside.sort_ms if self.outside is not None else (self.time_ms or 0)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "entity_path": self.entity_path,
            "version": self.version,
            "time_ms": self.time_ms,
            "identity": self.identity,
            "reason": self.reason,
            "keys": list(self.keys),
        }
        if self.outside is not None:  # configctl's own entries keep their contract's six fields
            document.update(
                written_outside_configctl=True,
                change_number=self.outside.change_number,
                writes=self.outside.writes,
                not_before_ms=self.outside.not_before_ms,
                not_after_ms=self.outside.not_after_ms,
                summary=self.outside.summary(),
            )
        return document


def feed(
    store: ConfigStore, since_ms: int, until_ms: int | None = None, logs: Sequence[applied.Record] = ()
) -> list[FeedEntry]:
    """Every write in ``[since_ms, until_ms]`` across the fleet, newest first (the store's history:
    with a history archive, its records too, :class:`configctl.archive.ArchivedHistory`; and the
    writes outside configctl, ``logs`` saying what their changes did)."""
    history = History(store, logs)
    entities: dict[str, Entity] = {e.path: e for e in history.entities()}
    others = [e for etype in EntityType for e in store.entities(etype) if e.path not in entities]
    for stored in store.read_many(others, strict=False):
        # an entity configctl never wrote is only of interest if its node was written since
        if stored.modified_ms is None or stored.modified_ms >= since_ms:
            entities.setdefault(stored.entity.path, stored.entity)
    wanted = list(entities.values())
    history.prefetch(wanted)
    entries = []
    for entity in wanted:
        for record in history.recorded(entity):
            if record.time_ms < since_ms or (until_ms is not None and record.time_ms > until_ms):
                continue
            entries.append(
                FeedEntry(
                    record.entity_path or entity.path,
                    record.version,
                    record.time_ms,
                    record.identity,
                    record.reason,
                    tuple(sorted(record.changed)),
                )
            )
        for write in history.outside(entity):
            if within(write, since_ms, until_ms):
                entries.append(
                    FeedEntry(
                        write.entity_path, write.version, write.time_ms, None, None, write.moved_keys(), write
                    )
                )
    entries.sort(key=lambda e: (e.sort_ms, e.entity_path, e.version), reverse=True)
    return entries


def within(write: OutsideWrite, since_ms: int, until_ms: int | None) -> bool:
    """Is ``write`` in the window: its time, or for an undated gap any part of its span; a span
    open to now (a node removed outside configctl, which nothing dates) by where it begins, so a
    topic deleted long ago is not in every window since."""
    if write.time_ms is not None:
        return write.time_ms >= since_ms and (until_ms is None or write.time_ms <= until_ms)
    start = write.sort_ms
    end = write.not_after_ms if write.not_after_ms is not None else start
    return (until_ms is None or start <= until_ms) and end >= since_ms
