"""``configctl history -o json``: an entity's recorded writes, and ``history --since``'s fleet feed.

The console's entity document holds the first as its ``history``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configctl.documents.masking import masked
from configctl.entities import Entity
from configctl.travel.feed import FeedEntry
from configctl.znodes import HistoryRecord


def history_json(entity: Entity, entry: HistoryRecord) -> dict[str, Any]:
    """A ``history -o json`` element (docs/reference/json-output.md), with sensitive values masked."""
    document = entry.to_json()
    document["config"] = masked(entity, entry.config) if entry.config is not None else None
    return document


@dataclass(frozen=True)
class HistoryDocument:
    """The records of one entity, newest first (as many as were asked for)."""

    entity: Entity
    entries: list[HistoryRecord]

    def to_json(self) -> list[dict[str, Any]]:
        return [history_json(self.entity, entry) for entry in self.entries]


@dataclass(frozen=True)
class FeedDocument:
    """``history --since``: the fleet's writes in a window (keys, never values)."""

    entries: list[FeedEntry]

    def to_json(self) -> list[dict[str, Any]]:
        return [entry.to_json() for entry in self.entries]
