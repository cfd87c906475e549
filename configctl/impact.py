"""What a write would do to effective configs, judged before anything is written.

Per-key validation (:mod:`configctl.validation`) sees one key at a time. Here every changed
entity is placed in the configs around it (read from ZooKeeper) and resolved by its family's
handler, exactly as the listener will resolve it; the result before and after the change is then
checked against Kafka's cross-key rules (:mod:`configctl.crosskey`) and the operator's policies
(:mod:`configctl.policies`). ``alter``, ``apply`` and ``rollback`` all call :func:`check_write`.

Which broker's view: broker entities are judged on every running listener's broker (its published
server.properties included; ``brokers/<id>`` on that broker alone), and on a broker with no
server.properties when no listener runs. Other entities are judged on the dynamic layers alone:
their effective configs do not depend on a broker's files except through topic fallbacks, and
judging 100,000 topics once per broker would cost more than the rules are worth.

What differs between families (which writes can break a rule, which rules, on which brokers) is
asked of the entity's handler (:mod:`configctl.handlers`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from configctl import fleet, policies
from configctl.effective import view_from
from configctl.entities import Entity
from configctl.errors import InvalidInput, ValidationFailed
from configctl.handlers import BROKER, BrokerView, handler_for
from configctl.store import ConfigStore

REFERENCE_BROKER = -1
"""The broker id of the view used when no listener has published its server.properties."""


@dataclass(frozen=True)
class Write:
    """One entity's stored config before and after a proposed write."""

    entity: Entity
    before: Mapping[str, str]
    after: Mapping[str, str]


def _judged(write: Write) -> bool:
    """Can this write break a cross-key rule? (Most writes cannot: they are judged for free.)"""
    return handler_for(write.entity).may_break_rules(write.before, write.after)


def check_write(store: ConfigStore, writes: Sequence[Write], *, reason: str = "", identity: str = "") -> None:
    """Raise :class:`ValidationFailed` naming every cross-key rule or policy the writes break."""
    chosen = policies.load()
    judged = [w for w in writes if chosen or _judged(w)]
    if not judged:
        return
    judged_ids = {id(w) for w in judged}
    stored, statics = _read(store, judged)
    views: dict[int, tuple[BrokerView, BrokerView]] = {}

    def view(broker_id: int) -> tuple[BrokerView, BrokerView]:
        """Broker ``broker_id``'s view before and after every write, built once."""
        if broker_id not in views:
            before = view_from(broker_id, statics.get(broker_id, {}), stored)
            views[broker_id] = (
                before,
                _after(before, [w for w in writes if id(w) in judged_ids or _shared(w)]),
            )
        return views[broker_id]

    problems: list[str] = []
    requests: list[policies.PolicyRequest] = []
    for write in judged:
        entity = write.entity
        handler = handler_for(entity)
        if handler.admit(entity, dict(write.after), change_number=None, decrypt=None).config is None:
            continue  # per-key validation reports why, in the write side's words
        for broker_id in handler.judged_on(entity, sorted(statics)) or [REFERENCE_BROKER]:
            before, after = view(broker_id)
            old, new = handler.effective(entity, before), handler.effective(entity, after)
            broker = {n: v.value for n, v in after.resolution.values.items()}
            where = f" (broker {broker_id})" if broker_id in statics else ""
            problems.extend(
                f"{entity.label}{where}: {p}"
                for p in handler.effective_rules({n: v.value for n, v in new.items()}, broker)
            )
            if chosen:
                requests.append(
                    policies.PolicyRequest(entity, write.before, write.after, old, new, reason, identity)
                )
    problems.extend(policies.refusals(requests, chosen))
    if problems:
        raise ValidationFailed(list(dict.fromkeys(problems)))


def _shared(write: Write) -> bool:
    """A write other entities' effective values depend on (broker layers, quota and IP levels)."""
    return not handler_for(write.entity).independent


def _after(view: BrokerView, writes: Sequence[Write]) -> BrokerView:
    """``view`` with every write its broker follows in place (admitted as the listener admits it)."""
    replaced = {}
    for write in writes:
        handler = handler_for(write.entity)
        if not handler.follows(write.entity, view.broker_id):
            continue
        admitted = handler.admit(write.entity, dict(write.after), change_number=None, decrypt=None)
        replaced[write.entity.path] = admitted.config or {}
    return view.with_configs(replaced)


def _read(store: ConfigStore, writes: Sequence[Write]) -> tuple[list, dict[int, dict[str, str]]]:
    """The configs the judged entities' effective values depend on, and each running listener's
    published server.properties."""
    states = fleet.broker_states(store)
    statics = {
        broker_id: {str(k): str(v) for k, v in state["static_config"].items()}
        for broker_id, state in states.items()
        if isinstance(state.get("static_config"), Mapping)
    }
    layers = [BROKER.layer(None), *(BROKER.layer(broker_id) for broker_id in statics)]
    wanted: dict[str, Entity] = {}
    for layer in layers:
        wanted.setdefault(layer.path, layer)
    for write in writes:
        wanted.setdefault(write.entity.path, write.entity)
        reads = handler_for(write.entity).reads(write.entity, REFERENCE_BROKER)
        for path in reads.paths:
            try:
                wanted.setdefault(path, Entity.from_path(path))
            except InvalidInput:
                continue
        for etype in reads.types:
            for found in store.entities(etype):
                wanted.setdefault(found.path, found)
    return store.read_many(wanted.values(), strict=False), statics
