"""The simulated world: ZooKeeper's history and each broker's view of it.

The model is the ZooKeeper side (a dynamic config at some base change number plus a list of
later changes) and, per broker, what it applied: its last change number, its server.properties,
and local patches (values a broker holds that no change explains). A :class:`Fleet` answers
what each broker runs (per-broker > default > static > built-in); the snapshots
(:mod:`configctl.audit.simulate`) and the ground truth (:mod:`configctl.audit.simulation_truth`)
are both read off it, and :mod:`configctl.audit.simulation_build` makes one for a
:class:`SimulationSpec`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from configctl.audit.expected import ExpectedState, ExpectedValue
from configctl.audit.schema import BROKER_DEFAULT_PATH
from configctl.audit.simulation_values import BUILTIN
from configctl.sources import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
)


@dataclass(frozen=True)
class SimulationSpec:
    brokers: int = 3
    topics: int = 10
    drift_rate: float = 0.1
    seed: int = 0
    malformed: int = 0
    changes: int = 8  # changes after the base state
    pending: int = 0  # of those, how many no broker has applied yet (only ZooKeeper knows them)

    def __post_init__(self) -> None:
        if self.brokers < 1:
            raise ValueError("a fleet needs at least one broker")
        if self.topics < 0 or self.malformed < 0 or self.changes < 0:
            raise ValueError("topics, malformed and changes must not be negative")
        if not 0.0 <= self.drift_rate <= 1.0:
            raise ValueError("drift rate must be between 0 and 1")
        if not 0 <= self.pending <= self.changes:
            raise ValueError("pending must be between 0 and the number of changes")


@dataclass(frozen=True)
class SimulatedChange:
    number: int
    entity_path: str
    name: str
    value: str | None  # None deletes the key


@dataclass
class Fleet:
    """The simulated world: ZooKeeper's history and each broker's view of it."""

    spec: SimulationSpec
    brokers: list[int]
    static: dict[int, dict[str, str]]
    base: dict[str, dict[str, str]]
    base_number: int
    changes: list[SimulatedChange]
    applied: dict[int, int]
    patches: dict[int, dict[tuple[str, str], str | None]]
    malformed: list[tuple[int, int, str, str]] = field(default_factory=list)  # broker, position, kind, text
    injected: list[dict[str, Any]] = field(default_factory=list)

    @property
    def latest_change_number(self) -> int:
        return self.changes[-1].number if self.changes else self.base_number

    def desired_config(self) -> dict[str, dict[str, str]]:
        """ZooKeeper's /config after every change."""
        return apply_changes(self.base, self.changes)

    def expected_state(self) -> ExpectedState:
        """What ZooKeeper says every broker should run (the simulator's desired_state.json)."""
        expected = []
        for path, config in self.desired_config().items():
            broker_id = (
                int(path.split("/")[1]) if path.startswith("brokers/") and path[8:].isdigit() else None
            )
            for name, value in config.items():
                expected.append(ExpectedValue(broker_id, path, name, value))
        return ExpectedState(self.latest_change_number, tuple(sorted(expected, key=_expected_key)))

    # -- a broker's view -----------------------------------------------------------------------

    def touched(self) -> set[tuple[str, str]]:
        """Keys whose value may differ between brokers (changed after the base, or patched)."""
        keys = {(c.entity_path, c.name) for c in self.changes}
        for patch in self.patches.values():
            keys.update(patch)
        return keys

    def view(self, broker: int, path: str, name: str) -> str | None:
        patch = self.patches.get(broker, {})
        if (path, name) in patch:
            return patch[(path, name)]
        value = self.base.get(path, {}).get(name)
        for change in self.changes:
            if change.number <= self.applied[broker] and (change.entity_path, change.name) == (path, name):
                value = change.value
        return value

    def dynamic_view(self, broker: int, path: str) -> dict[str, str]:
        names = set(self.base.get(path, {}))
        names.update(c.name for c in self.changes if c.entity_path == path)
        names.update(name for (p, name) in self.patches.get(broker, {}) if p == path)
        view = {name: self.view(broker, path, name) for name in sorted(names)}
        return {k: v for k, v in view.items() if v is not None}

    def broker_config(self, broker: int) -> dict[str, tuple[str | None, str]]:
        """Every effective broker key with its source: per-broker > default > static > built-in."""
        per_broker = self.dynamic_view(broker, f"brokers/{broker}")
        default = self.dynamic_view(broker, BROKER_DEFAULT_PATH)
        static = self.static[broker]
        result: dict[str, tuple[str | None, str]] = {}
        for name in sorted(set(BUILTIN) | set(static) | set(default) | set(per_broker)):
            if name in per_broker:
                result[name] = (per_broker[name], DYNAMIC_BROKER_CONFIG)
            elif name in default:
                result[name] = (default[name], DYNAMIC_DEFAULT_BROKER_CONFIG)
            elif name in static:
                result[name] = (static[name], STATIC_BROKER_CONFIG)
            else:
                result[name] = (BUILTIN[name], DEFAULT_CONFIG)
        return result


def _expected_key(e: ExpectedValue) -> tuple[Any, ...]:
    return (e.broker_id is not None, e.broker_id or 0, e.entity_path, e.name)


def apply_changes(
    base: dict[str, dict[str, str]], changes: Iterable[SimulatedChange]
) -> dict[str, dict[str, str]]:
    """ZooKeeper's /config after ``changes`` on ``base``: a change to None deletes its key, and an
    entity left with no key is gone (building a fleet replays the changes made so far with it)."""
    state = {path: dict(config) for path, config in base.items()}
    for change in changes:
        config = state.setdefault(change.entity_path, {})
        if change.value is None:
            config.pop(change.name, None)
        else:
            config[change.name] = change.value
    return {path: config for path, config in state.items() if config}
