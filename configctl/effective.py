"""``describe --effective``: what a broker ends up with, answered by the listener's own handlers.

The dynamic layers come from ZooKeeper; the static layer (server.properties) is the one the
broker's listener published in ``/configctl/brokers/<id>`` (docs/reference/state-and-fleet-nodes.md). Every config read is
admitted by its entity family's handler and the answer comes from the same handler's
``effective``, exactly as the listener computes it (:mod:`configctl.handlers`). What the broker
has not applied yet is said, not hidden: ``last_applied_change``, ``pending`` (a change to an
entity the answer depends on is newer than what the broker applied) and the broker's problems
with those entities.

Only a running listener publishes its static config, so asking about a broker without one is a
:class:`NotFound` error rather than a guess that would label server.properties values as
built-in defaults. Its sensitive static values are published masked; they are masked in the
output anyway.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from configctl import fleet
from configctl.entities import Entity
from configctl.errors import InvalidInput, NotFound
from configctl.handlers import BROKER, BrokerView, handler_for
from configctl.handlers.base import Problem
from configctl.precedence import EffectiveValue, Ignored
from configctl.store import ConfigStore, Stored
from configctl.znodes import BrokerStateZNode


@dataclass(frozen=True)
class EffectiveReport:
    """One entity's effective config on one broker, ready for rendering."""

    broker_id: int
    entity_path: str
    values: tuple[EffectiveValue, ...]
    ignored: tuple[Ignored, ...]
    last_applied_change: int | None
    pending: bool = False
    problems: tuple[Problem, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"broker_id","entity_path","configs":[...]}`` plus the broker's progress (docs/reference/json-output.md)."""
        return {
            "broker_id": self.broker_id,
            "entity_path": self.entity_path,
            "last_applied_change": self.last_applied_change,
            "pending": self.pending,
            "problems": [p.to_json() for p in self.problems],
            "configs": [value.to_json(mask=True) for value in self.values],
        }


def published_state(store: ConfigStore, broker_id: int) -> dict[str, Any]:
    """The state broker ``broker_id``'s listener published (NotFound without a running listener)."""
    store.capabilities.require("fleet_state", what="describe --effective")
    state = fleet.broker_state(store, broker_id)
    if state is None:
        raise NotFound(
            f"broker {broker_id} has no running listener ({BrokerStateZNode.path(broker_id)} is absent), "
            "so its server.properties is unknown; start it with: configctl listener run "
            f"--broker-id {broker_id} --server-properties FILE"
        )
    if not isinstance(state.get("static_config"), Mapping):
        raise InvalidInput(f"{BrokerStateZNode.path(broker_id)} holds no static_config object")
    return state


def view_from(broker_id: int, static: Mapping[str, str], stored: Sequence[Stored]) -> BrokerView:
    """What broker ``broker_id`` runs, from configs as read: each admitted by its handler, as the
    listener admits it (passwords stay encrypted: only the broker holds its encoder secret)."""
    configs: dict[str, dict[str, str]] = {}
    for item in stored:
        if item.problem is not None or not item.config:
            continue
        handler = handler_for(item.entity)
        if not handler.follows(item.entity, broker_id):
            continue
        admitted = handler.admit(item.entity, item.config, change_number=None, decrypt=None)
        if admitted.config:
            configs[item.entity.path] = admitted.config
    return BrokerView(broker_id, static, configs)


def effective_config(store: ConfigStore, broker_id: int, target: Entity | None = None) -> EffectiveReport:
    """Broker ``broker_id``'s effective config, or ``target``'s (topic, quota entity, IP) as it sees it."""
    entity = target or BROKER.layer(broker_id)
    handler = handler_for(entity)
    if not handler.follows(entity, broker_id) or (handler.layered and entity.is_default):
        raise InvalidInput(f"--effective shows one broker: --broker {broker_id}, not {entity.path}")
    state = published_state(store, broker_id)
    static = {str(k): str(v) for k, v in state["static_config"].items()}
    last = state.get("last_applied_change")
    last = last if isinstance(last, int) else None
    reads = handler.reads(entity, broker_id)
    layers = [BROKER.layer(broker_id), BROKER.layer(None)]
    wanted = {e.path: e for e in layers}
    for path in reads.paths:
        wanted.setdefault(path, Entity.from_path(path))
    for etype in reads.types:
        for found in store.entities(etype):
            wanted.setdefault(found.path, found)
    stored = store.read_many(wanted.values(), strict=False)
    view = view_from(broker_id, static, stored)
    values = handler.effective(entity, view)
    ordered = tuple(values[name] for name in sorted(values))
    ignored = view.resolution.ignored if handler.layered else ()
    depends = set(wanted)
    problems = tuple(
        p
        for p in (Problem.from_json(doc) for doc in state.get("problems") or () if isinstance(doc, Mapping))
        if p.entity_path in depends
    )
    return EffectiveReport(
        broker_id,
        entity.path,
        ordered,
        tuple(ignored),
        last,
        pending=_pending(store, last, depends),
        problems=problems,
    )


def _pending(store: ConfigStore, last: int | None, paths: set[str]) -> bool:
    """Is a change to one of ``paths`` newer than what the broker applied? (Read from the
    notifications still in ZooKeeper: anything older was purged and long applied.)"""
    newer = [n for n in store.notifications() if last is None or n.number > last]
    if not newer:
        return False
    return any(path in paths for path in store.notified_paths(newer))
