"""``describe --effective``: what a broker ends up with, answered by the listener's own handlers.

The dynamic layers come from ZooKeeper; the static layer (server.properties) is the one the
broker's listener published in ``/configctl/brokers/<id>`` (docs/reference/state-and-fleet-nodes.md). Every config read is
admitted by its entity family's handler and the answer comes from the same handler's
``effective``, exactly as the listener computes it (:mod:`configctl.handlers`). What the broker
has not applied yet is said, not hidden: ``last_applied_change``, ``pending`` (a change to an
entity the answer depends on is newer than what the broker applied) and the broker's problems
with those entities.

The value shown is the one in force on that broker, not only the one stored: where the broker
refused a change (its listener publishes the config it kept, ``in_force``) the answer is computed
from what it kept, and beside a real broker a ``mismatch`` puts the value the broker reports in
place; the stored value is then given beside it (``"stored"``).

What the answer rests on is said too (``truth``, :func:`configctl.fleet.truth`): ``observed`` (a
sidecar asked its Kafka broker), ``computed`` (a Kafka broker registered with the id was not asked),
``down (not registered)`` (a Kafka broker that Kafka no longer registers: nothing runs it, whatever
its listener computes), ``unreachable``, or ``config manager`` (no Kafka broker has the id). A topic
Kafka does not have is refused as ``alter`` refuses it (by :func:`configctl.guards.refusals`, the
rule :func:`configctl.writer.check_kafka_rules` applies), not answered with the broker's defaults.

On KRaft (a store whose capabilities say ``broker_reports`` and no ``fleet_state``) nothing is
computed: broker N itself is asked (DescribeConfigs sent to it) and its values, sources and
synonyms are shown as it reports them, labelled ``reported`` (:func:`reported_effective`). A
quota or IP entity is refused there: the Admin API reports what is stored for it, not what a
broker resolves.

Only a running listener publishes its static config, so asking about a broker without one is a
:class:`NotFound` error rather than a guess that would label server.properties values as
built-in defaults. Its sensitive static values are published masked; they are masked in the
output anyway.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from configctl import fleet, guards
from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput, NotFound, ValidationFailed
from configctl.handlers import BROKER, BrokerView, handler_for
from configctl.handlers.base import MISMATCH, Problem
from configctl.precedence import EffectiveValue, Ignored, Synonym
from configctl.reported import not_applied
from configctl.secrets import MASK
from configctl.sources import SERVER_PROPERTIES_SOURCES, STATIC_BROKER_CONFIG
from configctl.store import ConfigStore, Stored
from configctl.store.roles import broker_reports
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
    stored: Mapping[str, str | None] = field(default_factory=dict)
    """Keys whose stored value is not the one in force on the broker: the stored value."""
    at_ms: int | None = None
    """Answered as of this moment (``--at``), from history: None for now."""
    applied_log: Mapping[str, Any] | None = None
    """With ``--at``: what the broker's applied log says it ran then (None: no log was readable)."""
    truth: str | None = None
    """Now: what the answer rests on (:func:`configctl.fleet.truth`); None as of a past moment."""

    def to_json(self) -> dict[str, Any]:
        """``{"broker_id","entity_path","configs":[...]}`` plus the broker's progress (docs/reference/json-output.md)."""
        document = {
            "broker_id": self.broker_id,
            "entity_path": self.entity_path,
            "last_applied_change": self.last_applied_change,
            "pending": self.pending,
            "problems": [p.to_json() for p in self.problems],
            "configs": [self._entry(value) for value in self.values],
        }
        if self.truth is not None:
            document["truth"] = self.truth
        if self.at_ms is not None:
            document["at_ms"] = self.at_ms
            document["applied_log"] = dict(self.applied_log) if self.applied_log is not None else None
        return document

    def only_overrides(self) -> EffectiveReport:
        """The same report with dynamic values only (``--only-overrides``): what ZooKeeper sets,
        not what server.properties or Kafka's defaults give."""
        kept = tuple(v for v in self.values if is_override(v))
        return dataclasses.replace(self, values=kept)

    def _entry(self, value: EffectiveValue) -> dict[str, Any]:
        """An entry whose stored value is not in force adds ``"stored"``."""
        entry = value.to_json(mask=True)
        if value.name in self.stored:
            entry["stored"] = self.stored[value.name]
        return entry


def is_override(value: EffectiveValue) -> bool:
    """Set dynamically (a ZooKeeper layer), not by server.properties or a built-in default."""
    return value.source not in SERVER_PROPERTIES_SOURCES


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


def broker_static(store: ConfigStore, broker_id: int) -> dict[str, str]:
    """Broker ``broker_id``'s server.properties, as far as it is known: as its listener published
    it (ZooKeeper), or on KRaft as the broker reports it when asked itself (every key whose source
    is ``STATIC_BROKER_CONFIG``, a secret masked): what ``--at`` and ``blame`` put under the
    dynamic layers of the past."""
    if store.capabilities.broker_reports and not store.capabilities.fleet_state:
        reported = broker_reports(store, what="describe --effective --at").reported_keys(
            broker_id, BROKER.layer(broker_id)
        )
        return {
            name: MASK if key.sensitive or key.value is None else key.value
            for name, key in sorted(reported.items())
            if key.source == STATIC_BROKER_CONFIG
        }
    return static_config(published_state(store, broker_id))


def view_from(
    broker_id: int,
    static: Mapping[str, str],
    stored: Sequence[Stored],
    kept: Mapping[str, Mapping[str, str]] | None = None,
) -> BrokerView:
    """What broker ``broker_id`` runs, from configs as read: each admitted by its handler, as the
    listener admits it (passwords stay encrypted: only the broker holds its encoder secret).
    ``kept``: entities whose config in force is not the stored one (already admitted), by path."""
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
    for path, config in (kept or {}).items():
        if config:
            configs[path] = dict(config)
        else:
            configs.pop(path, None)
    return BrokerView(broker_id, static, configs)


def target_entity(broker_id: int, target: Entity | None) -> Entity:
    """The entity asked about (the broker itself when none), refused unless one broker answers for it."""
    entity = target or BROKER.layer(broker_id)
    handler = handler_for(entity)
    if not handler.follows(entity, broker_id) or (handler.layered and entity.is_default):
        raise InvalidInput(f"--effective shows one broker: --broker {broker_id}, not {entity.path}")
    return entity


def dependencies(
    broker_id: int, entity: Entity, listed: Callable[[EntityType], Iterable[Entity]]
) -> dict[str, Entity]:
    """Every stored entity ``entity``'s effective config on ``broker_id`` depends on, by path: the
    broker's two layers and what its handler reads (``listed`` names the members of a family)."""
    reads = handler_for(entity).reads(entity, broker_id)
    wanted = {e.path: e for e in (BROKER.layer(broker_id), BROKER.layer(None))}
    for path in reads.paths:
        wanted.setdefault(path, Entity.from_path(path))
    for etype in reads.types:
        for found in listed(etype):
            wanted.setdefault(found.path, found)
    return wanted


def static_config(state: Mapping[str, Any]) -> dict[str, str]:
    """server.properties as the broker's listener published it (sensitive values masked)."""
    return {str(k): str(v) for k, v in state["static_config"].items()}


def effective_config(store: ConfigStore, broker_id: int, target: Entity | None = None) -> EffectiveReport:
    """Broker ``broker_id``'s effective config, or ``target``'s (topic, quota entity, IP) as it sees it."""
    entity = target_entity(broker_id, target)
    handler = handler_for(entity)
    if handler.created_by_kafka:  # a topic Kafka does not have (a typo): refused, as alter refuses it
        refused = guards.refusals(
            [entity], running_brokers=None, existing_topics=store.existing_topics([entity.name])
        )
        if refused:
            raise ValidationFailed(refused)
    if store.capabilities.broker_reports and not store.capabilities.fleet_state:
        return reported_effective(store, broker_id, entity)
    state = published_state(store, broker_id)
    kafka = store.running_brokers()
    static = static_config(state)
    last = state.get("last_applied_change")
    last = last if isinstance(last, int) else None
    wanted = dependencies(broker_id, entity, store.entities)
    stored = store.read_many(wanted.values(), strict=False)
    depends = set(wanted)
    problems = tuple(p for p in fleet.problems_of(state) if p.entity_path in depends)
    kept = _kept(state, depends)
    view = view_from(broker_id, static, stored, kept)
    values = handler.effective(entity, view)
    as_stored = handler.effective(entity, view_from(broker_id, static, stored)) if kept else dict(values)
    for problem in problems:  # beside a real broker: what it reports wins over what was computed
        found = values.get(problem.key or "")
        if problem.kind == MISMATCH and found is not None and not found.sensitive:
            values[found.name] = dataclasses.replace(found, value=problem.reported)
    differs = {
        name: as_stored[name].value if name in as_stored else None
        for name, value in values.items()
        if not value.sensitive and (name not in as_stored or as_stored[name].value != value.value)
    }
    ordered = tuple(values[name] for name in sorted(values))
    ignored = view.resolution.ignored if handler.layered else ()
    return EffectiveReport(
        broker_id,
        entity.path,
        ordered,
        tuple(ignored),
        last,
        pending=_pending(store, last, depends),
        problems=problems,
        stored=differs,
        truth=fleet.truth(state, fleet.registered_now(state, kafka, broker_id)),
    )


def reported_effective(store: ConfigStore, broker_id: int, entity: Entity) -> EffectiveReport:
    """``entity`` (broker ``broker_id`` itself, or a topic) as broker ``broker_id`` reports it when
    asked itself: every key with its value, source and synonyms, nothing computed (``reported``)."""
    if entity.type not in (EntityType.BROKERS, EntityType.TOPICS):
        raise InvalidInput(
            f"describe --effective of {entity.path} on KRaft: a broker reports its own and its topics' "
            f"configs when asked, but only what is stored for {entity.type.value} (no broker resolves "
            "it, and no listener computes it); use describe"
        )
    reports = broker_reports(store, what="describe --effective")
    reported = reports.reported_keys(broker_id, entity)
    values = tuple(
        EffectiveValue(
            key.name,
            key.value,
            key.source,
            tuple(Synonym(s.name, s.value, s.source) for s in key.synonyms),
            key.sensitive,
        )
        for key in (reported[name] for name in sorted(reported))
    )
    refused = not_applied(reported) if entity.type is EntityType.BROKERS else []
    problems = tuple(  # what it holds but refused to apply, in its own words
        Problem(
            MISMATCH,
            n.entity(broker_id).path,
            None,
            n.sentence(broker_id),
            key=n.key,
            expected=n.held,
            reported=n.running,
        )
        for n in refused
    )
    stored = {n.key: n.held for n in refused}
    return EffectiveReport(
        broker_id, entity.path, values, (), None, problems=problems, stored=stored, truth=fleet.REPORTED
    )


def _kept(state: Mapping[str, Any], depends: set[str]) -> dict[str, dict[str, str]]:
    """The configs the broker kept for the entities ``depends`` on that it refused a change of."""
    published = state.get("in_force")
    if not isinstance(published, Mapping):
        return {}
    return {
        path: {str(k): str(v) for k, v in config.items()}
        for path, config in published.items()
        if path in depends and isinstance(config, Mapping)
    }


def _pending(store: ConfigStore, last: int | None, paths: set[str]) -> bool:
    """Is a change to one of ``paths`` newer than what the broker applied? (Read from the
    notifications still in ZooKeeper: anything older was purged and long applied.)"""
    newer = [n for n in store.notifications() if last is None or n.number > last]
    if not newer:
        return False
    return any(path in paths for path in store.notified_paths(newer))
