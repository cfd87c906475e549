"""Who wrote each change still numbered by a notification: configctl, or someone outside it.

The listeners' applied logs and the console's newest changes know change numbers, not who wrote
them; configctl's history, the config nodes' versions and the notifications do
(:mod:`configctl.travel.outside`). ``audit --timeline`` marks its intervals with this
(:mod:`configctl.audit.timeline_outside`), and the console's newest changes can.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.store import ConfigStore
from configctl.travel.past import History


@dataclass
class Writers:
    """Change numbers known to be written outside configctl (with what is known of each), and
    those known to be configctl's."""

    outside: dict[int, dict[str, Any]] = field(default_factory=dict)
    configctl: set[int] = field(default_factory=set)

    def of(self, number: int | None) -> bool | None:
        """True: outside configctl; False: configctl's; None: not known."""
        if number is None:
            return None
        if number in self.outside:
            return True
        return False if number in self.configctl else None


def writers(store: ConfigStore, entity_paths: Iterable[str]) -> Writers:
    """Who wrote the changes of ``entity_paths`` whose notifications ZooKeeper still keeps."""
    entities = []
    for path in dict.fromkeys(entity_paths):
        try:
            entities.append(Entity.from_path(path))
        except InvalidInput:
            continue
    history = History(store)
    history.prefetch(entities)
    found = Writers()
    for entity in entities:
        recorded = {r.version for r in history.recorded(entity)}
        derived = history.derived(entity)
        found.configctl.update(n for v, n in derived.change_numbers.items() if v in recorded)
        for write in derived.outside:
            for number in write.change_numbers:
                found.outside[number] = {
                    "change_number": number,
                    "entity_path": write.entity_path,
                    "version": write.version,
                    "writes": write.writes,
                    "time_ms": write.time_ms,
                    "keys": list(write.moved_keys()),
                    "summary": write.summary(),
                }
    return found
