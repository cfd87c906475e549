"""``configctl history --since T [--until T]`` without an entity: the fleet's change feed.

Every recorded write of every entity with history in the window, deleted entities included
(their history directories outlive their config nodes), newest first. ``keys`` are the keys the
write set or removed (the record's delta), never their values: a feed is safe to paste.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configctl.store import ConfigStore


@dataclass(frozen=True)
class FeedEntry:
    entity_path: str
    version: int
    time_ms: int
    identity: str
    reason: str
    keys: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "entity_path": self.entity_path,
            "version": self.version,
            "time_ms": self.time_ms,
            "identity": self.identity,
            "reason": self.reason,
            "keys": list(self.keys),
        }


def feed(store: ConfigStore, since_ms: int, until_ms: int | None = None) -> list[FeedEntry]:
    """Every write recorded in ``[since_ms, until_ms]`` across the fleet, newest first (the store's
    history: with a history archive, its records too, :class:`configctl.archive.ArchivedHistory`)."""
    histories = store.histories(store.history_entities())
    entries = []
    for path, records in histories.items():
        for record in records:
            if record.time_ms < since_ms or (until_ms is not None and record.time_ms > until_ms):
                continue
            entries.append(
                FeedEntry(
                    record.entity_path or path,
                    record.version,
                    record.time_ms,
                    record.identity,
                    record.reason,
                    tuple(sorted(record.changed)),
                )
            )
    entries.sort(key=lambda e: (e.time_ms, e.entity_path, e.version), reverse=True)
    return entries
