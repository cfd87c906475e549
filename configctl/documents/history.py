"""``configctl history -o json``: an entity's writes, and ``history --since``'s fleet feed.

Both hold configctl's own records and, beside them, the writes made outside configctl (Kafka's
tools, Cruise Control, another admin client), derived when read (:mod:`configctl.travel.outside`),
each element saying which it is (``written_outside_configctl``). The console's entity document
holds the first as its ``history`` (:func:`entity_history`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from configctl import applied
from configctl.documents.masking import masked
from configctl.entities import Entity
from configctl.store import ConfigStore
from configctl.travel.feed import FeedEntry
from configctl.travel.outside import OutsideWrite
from configctl.travel.past import History
from configctl.znodes import HistoryRecord

Entry: TypeAlias = HistoryRecord | OutsideWrite
"""One write in an entity's history: configctl's record, or a write outside configctl."""


def history_json(entity: Entity, entry: HistoryRecord) -> dict[str, Any]:
    """A ``history -o json`` element (docs/reference/json-output.md), with sensitive values masked."""
    document = entry.to_json()
    document["config"] = masked(entity, entry.config) if entry.config is not None else None
    return document


def outside_json(entity: Entity, write: OutsideWrite) -> dict[str, Any]:
    """The element of a write outside configctl, with sensitive values masked (the applied log
    holds them as digests already)."""
    document = write.to_json()
    document["config"] = masked(entity, write.config) if write.config is not None else None
    if write.changed is not None:
        shown = masked(entity, {k: v for k, v in write.changed.items() if v is not None})
        document["changed"] = {k: shown.get(k) for k in sorted(write.changed)}
    return document


def keys_changed(entry: Entry) -> list[str]:
    """The keys a write is known to have set or removed (never their values)."""
    if isinstance(entry, OutsideWrite):
        return list(entry.moved_keys())
    return sorted(entry.changed)


def entry_time(entry: Entry) -> int:
    """Where an entry stands, newest first: its time, or for an undated gap the earliest it can be."""
    return entry.sort_ms if isinstance(entry, OutsideWrite) else entry.time_ms


def merged(records: Sequence[HistoryRecord], outside: Sequence[OutsideWrite]) -> list[Entry]:
    """configctl's records and the writes outside it, newest first (at one time, the higher version first)."""
    entries: list[Entry] = [*records, *outside]
    entries.sort(key=lambda e: (entry_time(e), e.version), reverse=True)
    return entries


@dataclass(frozen=True)
class HistoryDocument:
    """The writes of one entity, newest first (as many as were asked for)."""

    entity: Entity
    entries: Sequence[Entry]

    def to_json(self) -> list[dict[str, Any]]:
        return [
            outside_json(self.entity, e) if isinstance(e, OutsideWrite) else history_json(self.entity, e)
            for e in self.entries
        ]

    @property
    def outside(self) -> list[OutsideWrite]:
        return [e for e in self.entries if isinstance(e, OutsideWrite)]


def entity_history(
    store: ConfigStore, entity: Entity, logs: Sequence[applied.Record] = ()
) -> HistoryDocument:
    """Every write of ``entity`` known: configctl's records and the writes outside it (what
    ``history`` prints and the console's entity page shows)."""
    history = History(store, logs)
    return HistoryDocument(entity, merged(history.recorded(entity), history.outside(entity)))


@dataclass(frozen=True)
class FeedDocument:
    """``history --since``: the fleet's writes in a window (keys, never values)."""

    entries: list[FeedEntry]

    def to_json(self) -> list[dict[str, Any]]:
        return [entry.to_json() for entry in self.entries]
