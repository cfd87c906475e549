"""``configctl diff``: two brokers' effective configs (now or at T), or one broker at two moments.

Each side is answered exactly as ``describe --effective`` answers it: the present from ZooKeeper
and the broker's published state (:func:`configctl.effective.effective_config`), a past moment from
history (:func:`configctl.travel.at.effective_at`). Each side says what it rests on (``truth``:
observed from its Kafka broker, or ``computed`` without asking it, ``down (not registered)``...),
and where a broker reports a value (a ``mismatch``) that value is the side's. A secret is compared by what is stored (its
encrypted form) and shown masked: never in clear.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from configctl.effective import EffectiveReport, effective_config
from configctl.entities import Entity
from configctl.precedence import EffectiveValue
from configctl.secrets import MASK
from configctl.store import ConfigStore
from configctl.timeref import TimeRef
from configctl.travel.at import effective_at


@dataclass(frozen=True)
class Side:
    """One side of a diff: a broker, now (``at`` None) or at a moment."""

    broker_id: int
    at: TimeRef | None = None


@dataclass
class Diff:
    left: dict[str, Any]
    right: dict[str, Any]
    differences: list[dict[str, Any]] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        return {"left": self.left, "right": self.right, "differences": self.differences}


def report(
    store: ConfigStore, side: Side, target: Entity | None, applied_dirs: Sequence[str | Path]
) -> EffectiveReport:
    if side.at is None:
        return effective_config(store, side.broker_id, target)
    return effective_at(store, side.broker_id, target, side.at, applied_dirs)


def diff(
    store: ConfigStore,
    left: Side,
    right: Side,
    target: Entity | None = None,
    applied_dirs: Sequence[str | Path] = (),
) -> Diff:
    """Every key whose effective value differs between the two sides."""
    one, two = report(store, left, target, applied_dirs), report(store, right, target, applied_dirs)
    result = Diff(_label(left, one), _label(right, two))
    mine = {v.name: v for v in one.values}
    theirs = {v.name: v for v in two.values}
    for name in sorted(mine.keys() | theirs.keys()):
        a, b = mine.get(name), theirs.get(name)
        if _raw(a) == _raw(b):
            continue
        result.differences.append(
            {
                "entity_path": one.entity_path,
                "key": name,
                "left": _shown(a),
                "right": _shown(b),
                "left_source": a.source if a is not None else None,
                "right_source": b.source if b is not None else None,
            }
        )
    return result


def _label(side: Side, answer: EffectiveReport) -> dict[str, Any]:
    return {
        "broker_id": side.broker_id,
        "entity_path": answer.entity_path,
        "at": side.at.text if side.at is not None else None,
        "at_ms": answer.at_ms,
        "truth": answer.truth,
    }


def _raw(value: EffectiveValue | None) -> str | None:
    return None if value is None else value.value


def _shown(value: EffectiveValue | None) -> str | None:
    if value is None:
        return None
    return MASK if value.sensitive and value.value is not None else value.value
