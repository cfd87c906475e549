"""``configctl rollout list -o json`` and ``rollout show ID -o json``: rollouts as their records say.

The console's ``/api/rollouts`` is the list document, and a rollout's page the show document.
Targets and the configs a rollout would restore are masked, as every document masks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configctl.documents.masking import masked
from configctl.errors import InvalidInput
from configctl.rollout.record import Listed, Loaded, Undo
from configctl.znodes import decode_entity_config


@dataclass(frozen=True)
class RolloutListDocument:
    """Every rollout with a record, newest first; an unreadable one is its id and its problem."""

    items: list[Listed]

    def to_json(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = []
        for item in self.items:
            if item.record is None:
                result.append({"id": item.id, "problem": item.problem})
                continue
            record = item.record
            result.append(
                {
                    "id": record.id,
                    "kind": record.kind,
                    "state": record.state,
                    "open": record.open,
                    "step": record.step,
                    "waves": record.waves,
                    "entities": record.entity_count,
                    "created_ms": record.created_ms,
                    "updated_ms": record.updated_ms,
                    "identity": record.identity,
                    "reason": record.reason,
                    "failure": record.failure,
                    "running": item.owner is not None,
                    "owner": item.owner,
                }
            )
        return result


@dataclass(frozen=True)
class RolloutShowDocument:
    """One rollout: its record, its plan (each entity written or not) and what its abort would restore."""

    loaded: Loaded

    def to_json(self) -> dict[str, Any]:
        loaded = self.loaded
        written = {u.entity: u for chunk in loaded.undo for u in chunk.entries}
        return {
            **loaded.record.to_json(),
            "open": loaded.record.open,
            "running": loaded.owner is not None,
            "owner": loaded.owner,
            "planned": [
                {
                    "entity_path": p.entity.path,
                    "wave": p.wave,
                    "expected_version": p.expected_version,
                    "target": masked(p.entity, p.target),
                    "written": p.entity in written,
                }
                for p in loaded.planned
            ],
            "to_undo": [
                {
                    "entity_path": u.entity.path,
                    "previous_version": u.previous_version if u.previous is not None else None,
                    "written_version": u.written_version,
                    "previous_config": _previous_config(u),
                }
                for u in written.values()
            ],
        }


def _previous_config(undo: Undo) -> dict[str, str] | None:
    """The config an abort would restore, masked (None: there was no node, or its bytes are not a config)."""
    if undo.previous is None:
        return None
    try:
        return masked(undo.entity, decode_entity_config(undo.previous))
    except InvalidInput:
        return None
