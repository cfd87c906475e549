"""Effective config values, where each one comes from, and what it hides.

This is Kafka's ZooKeeper-mode precedence (DynamicBrokerConfig, ConfigHelper's describe, the
quota callback's entity walk) as pure functions over plain ``str -> str`` dicts, exactly as
stored in ZooKeeper. The listener recomputes with it on every change and ``describe --effective``
renders its answers, so both agree by construction.

Broker config, per key: ``brokers/<id>`` > ``brokers/<default>`` > server.properties > built-in
default. A layer that sets *any* synonym of a key (``log.retention.ms`` > ``.minutes`` > ``.hours``)
hides every synonym below it (Kafka removes them when it merges the layers). What is reported
for a key is what a Kafka 3.9 broker reports through DescribeConfigs (checked against real
brokers in ``tests/kafka``): its *own* value in the winning layer, else its own built-in default
(``log.retention.ms`` is null while only ``log.retention.hours`` is set); its synonyms in layer
order, with those before the first occurrence of the key's own name dropped (ConfigHelper's
``dropWhile``), and the source of the first synonym kept, else ``DEFAULT_CONFIG``. Values that
Kafka drops when it loads the dynamic layers (read-only keys, per-broker or password keys at the
cluster default, security configs without a listener prefix, values of the wrong type) are
dropped here too and reported as :class:`Ignored`.

Topic config: the topic's override > the broker's value of the synonym server key(s), taken as
KafkaConfig derives it (``log.retention.ms``, else ``.minutes``, else ``.hours``, converted)
> the topic default; its synonyms and source are the primary server key's, as reported. Quotas
and IP connection rates are :mod:`configctl.entitylevels`': the first stored entity, most specific
first, that defines the key.

Everything that depends only on the catalogue (synonym groups, unit conversions, default values)
is computed once per process, so one broker resolution touches only the keys that are set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from configctl import brokerkeys, catalogue
from configctl.entities import DEFAULT, EntityType
from configctl.secrets import MASK
from configctl.sources import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
)
from configctl.values import kafka_text

# Time units by name suffix, in milliseconds. Only synonyms whose units differ are converted.
_UNIT_MS = {".ms": 1, ".minutes": 60_000, ".hours": 3_600_000}
_TOPIC_CONVERSIONS = {"identity": 1, "minutes_to_ms": 60_000, "hours_to_ms": 3_600_000}
_INT_RE = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Synonym:
    """One place a value for a key (or one of its synonyms) is set, with its raw stored value."""

    name: str
    value: str | None
    source: str

    def to_json(self, mask: bool | Callable[[str], str] = True, sensitive: bool = False) -> dict[str, Any]:
        return {"name": self.name, "value": _masked(self.value, sensitive, mask), "source": self.source}


@dataclass(frozen=True)
class EffectiveValue:
    """The value a key ends up with, the source that supplied it, and every synonym occurrence.

    ``synonyms`` lists, highest precedence first, every place a synonym of the key is set (the
    winner first); values there are raw (unconverted). ``value`` is None when nothing sets the
    key and its default is null.
    """

    name: str
    value: str | None
    source: str
    synonyms: tuple[Synonym, ...]
    sensitive: bool

    def to_json(self, mask: bool | Callable[[str], str] = True) -> dict[str, Any]:
        """The ``describe --effective`` entry ``{"name","value","source","synonyms"}`` (docs/reference/json-output.md).

        ``mask``: True replaces sensitive values (also in synonyms) by ``******``; a callable
        maps each sensitive value (e.g. to ``sha256:<hex>`` for snapshots); False shows them.
        """
        return {
            "name": self.name,
            "value": _masked(self.value, self.sensitive, mask),
            "source": self.source,
            "synonyms": [s.to_json(mask, self.sensitive) for s in self.synonyms],
        }


@dataclass(frozen=True)
class Ignored:
    """A dynamic broker value Kafka would drop on load (with an error log), and why."""

    entity_path: str
    name: str
    reason: str


class BrokerValues(Mapping[str, EffectiveValue]):
    """Read-only name -> :class:`EffectiveValue` map of one broker's effective config.

    Also remembers, lazily, the broker-derived fallback of every topic key, so resolving
    100,000 topics against the same broker does that work once.
    """

    __slots__ = ("_topic_fallbacks", "_values")

    def __init__(self, values: dict[str, EffectiveValue]) -> None:
        self._values = values
        self._topic_fallbacks: dict[str, EffectiveValue] | None = None

    def __getitem__(self, name: str) -> EffectiveValue:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def __repr__(self) -> str:
        return f"BrokerValues({len(self._values)} keys)"

    def topic_fallbacks(self) -> dict[str, EffectiveValue]:
        if self._topic_fallbacks is None:
            self._topic_fallbacks = _compute_topic_fallbacks(self._values)
        return self._topic_fallbacks


@dataclass(frozen=True)
class BrokerResolution:
    """A broker's effective config plus the dynamic values that were dropped."""

    values: BrokerValues
    ignored: tuple[Ignored, ...]


# --------------------------------------------------------------------------------------------
# Per-process tables
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _KeyPlan:
    """What resolving one broker key needs, computed once: synonyms, unit factors, defaults."""

    name: str
    synonyms: tuple[str, ...]
    # Per synonym: (multiplier to ms, divisor from ms) into the key's unit; None = keep raw.
    conversions: tuple[tuple[int, int] | None, ...]
    default_synonyms: tuple[Synonym, ...]
    sensitive: bool
    unset: EffectiveValue
    own_default: str | None = None
    removers: tuple[str, ...] = ()
    """Other names whose setting in a layer removes this key from every layer below it."""


def _unit(name: str) -> int | None:
    for suffix, ms in _UNIT_MS.items():
        if name.endswith(suffix):
            return ms
    return None


def _conversion(synonym: str, key: str) -> tuple[int, int] | None:
    src, dst = _unit(synonym), _unit(key)
    if src is None or dst is None or src == dst:
        return None
    return src, dst


def _convert(raw: str, conversion: tuple[int, int] | None) -> str:
    """Convert a time value between units; negative sentinels (-1, -2) are kept as they are.

    Going to a coarser unit (ms -> hours) divides by an integer and is lossy, as in Kafka's own
    int-typed hours/minutes configs: 5,400,000 ms reads as 1 hour. A value that is not an integer
    (only possible in server.properties, which Kafka itself would refuse) is returned raw.
    """
    if conversion is None:
        return raw
    text = raw.strip()
    if not _INT_RE.fullmatch(text):
        return raw
    number = int(text)
    if number < 0:
        return text
    multiplier, divisor = conversion
    return str(number * multiplier // divisor)


def _default_synonyms(
    synonyms: tuple[str, ...], table: Mapping[str, catalogue.ConfigKey]
) -> tuple[Synonym, ...]:
    found = []
    for name in synonyms:
        facts = table.get(name)
        if facts is not None and facts.default is not None:
            found.append(Synonym(name, facts.default, DEFAULT_CONFIG))
    return tuple(found)


def reported_synonyms(name: str, found: tuple[Synonym, ...]) -> tuple[Synonym, ...]:
    """The synonyms Kafka reports for ``name``: those from the first one named ``name`` on.

    Kafka 3.9's ConfigHelper lists every layer's synonyms in order (per-broker, default,
    static, built-in) and then drops the leading ones until it meets the key's own name
    (``dropWhile(s => s.name != name)``): ``log.roll.ms`` with only ``log.roll.hours``'s
    default reports no synonyms at all, and its source is then ``DEFAULT_CONFIG``.
    """
    for index, synonym in enumerate(found):
        if synonym.name == name:
            return found[index:]
    return ()


def _reported(name: str, value: str | None, found: tuple[Synonym, ...], sensitive: bool) -> EffectiveValue:
    shown = reported_synonyms(name, found)
    if value is not None:
        facts = catalogue.lookup(EntityType.BROKERS, name)
        value = kafka_text(facts.kafka_type if facts is not None else None, value)
    return EffectiveValue(name, value, shown[0].source if shown else DEFAULT_CONFIG, shown, sensitive)


def _make_plan(
    name: str, synonyms: tuple[str, ...], sensitive: bool, removers: tuple[str, ...] = ()
) -> _KeyPlan:
    table = catalogue.keys(EntityType.BROKERS)
    conversions = tuple(_conversion(s, name) for s in synonyms)
    defaults = _default_synonyms(synonyms, table)
    own = table.get(name)
    own_default = own.default if own is not None else None
    unset = _reported(name, own_default, defaults, sensitive)
    return _KeyPlan(name, synonyms, conversions, defaults, sensitive, unset, own_default, removers)


@cache
def _broker_tables() -> tuple[dict[str, _KeyPlan], dict[str, tuple[str, ...]], dict[str, EffectiveValue]]:
    """Plans for every catalogue key, which keys each stored name affects, and the all-unset result."""
    table = catalogue.keys(EntityType.BROKERS)
    plans: dict[str, _KeyPlan] = {}
    affects: dict[str, list[str]] = {}
    # DynamicBrokerConfig.overrideProps: a key set in a layer removes its synonyms (Kafka's
    # brokerConfigSynonyms, which the catalogue lists) from the layers below. The relation is
    # not symmetric: log.flush.interval.ms removes log.flush.scheduler.interval.ms, not back.
    removed_by: dict[str, set[str]] = {}
    for name, facts in table.items():
        for synonym in facts.synonyms:
            if synonym != name:
                removed_by.setdefault(synonym, set()).add(name)
    for name, facts in table.items():
        synonyms = facts.synonyms or (name,)
        if name not in synonyms:
            synonyms = (name, *synonyms)
        removers = tuple(sorted(removed_by.get(name, ())))
        plans[name] = _make_plan(name, synonyms, facts.sensitive, removers)
        for synonym in (*synonyms, *removers):
            affects.setdefault(synonym, []).append(name)
    # Broker-only dynamic keys (replication throttles) are not KafkaConfig settings: a broker
    # reports them only while a layer sets them.
    unset = {name: plan.unset for name, plan in plans.items() if not table[name].dynamic_only}
    return plans, {k: tuple(v) for k, v in affects.items()}, unset


@lru_cache(maxsize=8192)
def _extra_plan(name: str) -> _KeyPlan:
    """Plan for a name outside the catalogue: listener-prefixed (synonyms [prefixed, base]) or custom."""
    listener, base = catalogue.split_listener_prefix(name)
    sensitive = catalogue.is_sensitive(EntityType.BROKERS, name)
    if listener is not None:
        return _make_plan(name, (name, base), sensitive)
    return _make_plan(name, (name,), sensitive)


_key_problem = lru_cache(maxsize=65536)(brokerkeys.problem)
"""Why a dynamic broker key does not take effect (:func:`configctl.brokerkeys.problem`), memoized:
a layer is screened at every load."""


def _screen(
    layer: Mapping[str, str], entity_path: str, cluster_default: bool, ignored: list[Ignored]
) -> dict[str, str]:
    """The part of a dynamic layer that takes effect; the rest goes to ``ignored``.

    Kafka drops (and logs) read-only keys, misplaced keys and values it cannot parse when it loads
    a dynamic layer; the rule is :mod:`configctl.brokerkeys`' per-key check, the one the write
    side refuses with, so nothing configctl writes is dropped here.
    """
    kept: dict[str, str] = {}
    for name, raw in layer.items():
        reason = (
            _key_problem(name, raw, at_default=cluster_default) if isinstance(raw, str) else "not a string"
        )
        if reason is None:
            kept[name] = raw
        else:
            ignored.append(Ignored(entity_path, name, reason))
    return kept


def _resolve_plan(plan: _KeyPlan, layers: tuple[tuple[Mapping[str, str], str], ...]) -> EffectiveValue:
    found: list[Synonym] = []
    value: str | None = None
    decided = False
    for layer, source in layers:
        if not layer:
            continue
        for synonym in plan.synonyms:
            raw = layer.get(synonym)
            if raw is not None:
                found.append(Synonym(synonym, raw, source))
        if not decided:
            # Highest layer first: the key's own setting, or a synonym that removed it from
            # every layer below when Kafka merged them (then its built-in default stands).
            own = layer.get(plan.name)
            if own is not None:
                value, decided = own, True
            elif any(synonym in layer for synonym in plan.removers):
                decided = True
    if not found:
        return plan.unset
    return _reported(
        plan.name,
        value if value is not None else plan.own_default,
        (*found, *plan.default_synonyms),
        plan.sensitive,
    )


def resolve_broker(
    broker_id: int | str,
    per_broker: Mapping[str, str],
    cluster_default: Mapping[str, str],
    static: Mapping[str, str],
) -> BrokerResolution:
    """Every effective config of broker ``broker_id`` with its source and synonyms.

    ``per_broker`` is ``/config/brokers/<id>``, ``cluster_default`` is ``/config/brokers/<default>``,
    ``static`` is server.properties. The result holds every catalogue key, plus every custom or
    listener-prefixed key that takes effect in some layer.
    """
    plans, affects, unset = _broker_tables()
    static = _id_synonyms(static)
    ignored: list[Ignored] = []
    mine = _screen(per_broker, f"brokers/{broker_id}", False, ignored) if per_broker else {}
    shared = _screen(cluster_default, f"brokers/{DEFAULT}", True, ignored) if cluster_default else {}
    layers = (
        (mine, DYNAMIC_BROKER_CONFIG),
        (shared, DYNAMIC_DEFAULT_BROKER_CONFIG),
        (static, STATIC_BROKER_CONFIG),
    )
    values = dict(unset)
    touched: set[str] = set()
    extras: set[str] = set()
    for layer in (mine, shared, static):
        for name in layer:
            names = affects.get(name)
            if names is not None:
                touched.update(names)
            else:
                extras.add(name)
    for name in touched:
        values[name] = _resolve_plan(plans[name], layers)
    for name in sorted(extras):
        values[name] = _resolve_plan(_extra_plan(name), layers)
    return BrokerResolution(BrokerValues(values), tuple(ignored))


def _id_synonyms(static: Mapping[str, str]) -> Mapping[str, str]:
    """server.properties as KafkaConfig reads it: ``broker.id`` and ``node.id`` each fill the other.

    KafkaConfig.populateSynonyms copies whichever of the two is set into the other before
    anything else reads them, so a ZooKeeper-mode broker reports ``node.id`` as its static id.
    """
    broker_id, node_id = static.get("broker.id"), static.get("node.id")
    if (broker_id is None) == (node_id is None):
        return static
    filled = dict(static)
    filled["node.id" if node_id is None else "broker.id"] = broker_id if node_id is None else node_id
    return filled


# --------------------------------------------------------------------------------------------
# Topics
# --------------------------------------------------------------------------------------------


@cache
def _topic_plans() -> tuple[tuple[str, str | None, tuple[tuple[str, int], ...], bool], ...]:
    """(key, topic default, ((server key, multiplier), ...), sensitive) for every topic key."""
    plans = []
    for name, facts in catalogue.keys(EntityType.TOPICS).items():
        chain = tuple((server, _TOPIC_CONVERSIONS[conv]) for server, conv in facts.broker_synonyms)
        plans.append((name, facts.default, chain, facts.sensitive))
    return tuple(plans)


def _compute_topic_fallbacks(broker: Mapping[str, EffectiveValue]) -> dict[str, EffectiveValue]:
    """What each topic key is when the topic does not override it, given the broker's values."""
    result: dict[str, EffectiveValue] = {}
    for name, default, chain, sensitive in _topic_plans():
        # The value: KafkaConfig's derived accessor (the first server key of the chain with a
        # value, in the topic key's unit); synonyms and source: the primary server key's report.
        value = default
        for server_key, multiplier in chain:
            effective = broker.get(server_key)
            if effective is not None and effective.value is not None:
                value = _convert(effective.value, (multiplier, 1) if multiplier != 1 else None)
                break
        primary = broker.get(chain[0][0]) if chain else None
        synonyms = primary.synonyms if primary is not None else ()
        source = synonyms[0].source if synonyms else DEFAULT_CONFIG
        result[name] = EffectiveValue(name, value, source, synonyms, sensitive)
    return result


def resolve_topic(
    topic: str, overrides: Mapping[str, str], broker: Mapping[str, EffectiveValue]
) -> dict[str, EffectiveValue]:
    """Every topic key's effective value for ``topic`` on a broker whose effective config is ``broker``.

    Pass ``BrokerResolution.values`` as ``broker``: its broker-derived fallbacks are computed once
    and shared by every topic, so one call costs only the topic's own overrides. Override keys
    that are not topic configs are reported as set (Kafka would have refused to store them).
    """
    fallbacks = _topic_fallbacks_of(broker)
    result = dict(fallbacks)
    result.update(_overrides(overrides, fallbacks))
    return result


def topic_overrides(
    overrides: Mapping[str, str], broker: Mapping[str, EffectiveValue]
) -> dict[str, EffectiveValue]:
    """Only the keys a topic overrides itself, as :func:`resolve_topic` gives them.

    What a snapshot lists for a topic: resolving the ~40 keys of 100,000 topics to keep two
    each would cost 20 times the work. ``broker`` as for :func:`resolve_topic`.
    """
    return _overrides(overrides, _topic_fallbacks_of(broker))


def _overrides(
    overrides: Mapping[str, str], fallbacks: Mapping[str, EffectiveValue]
) -> dict[str, EffectiveValue]:
    result: dict[str, EffectiveValue] = {}
    types = _topic_types()
    for name, raw in overrides.items():
        # Kafka reports the topic's own value parsed and written back, in the value and in its
        # own synonym alike (the broker synonyms below it stay raw).
        text = kafka_text(types.get(name), raw) if isinstance(raw, str) else raw
        own = Synonym(name, text, DYNAMIC_TOPIC_CONFIG)
        below = fallbacks.get(name)
        if below is None:
            result[name] = EffectiveValue(name, text, DYNAMIC_TOPIC_CONFIG, (own,), False)
        else:
            result[name] = EffectiveValue(
                name, text, DYNAMIC_TOPIC_CONFIG, (own, *below.synonyms), below.sensitive
            )
    return result


@cache
def _topic_types() -> dict[str, str]:
    return {name: facts.kafka_type for name, facts in catalogue.keys(EntityType.TOPICS).items()}


def _topic_fallbacks_of(broker: Mapping[str, EffectiveValue]) -> Mapping[str, EffectiveValue]:
    if isinstance(broker, BrokerValues):
        return broker.topic_fallbacks()
    return _compute_topic_fallbacks(broker)


def _masked(value: str | None, sensitive: bool, mask: bool | Callable[[str], str]) -> str | None:
    if value is None or not sensitive or mask is False:
        return value
    if mask is True:
        return MASK
    return mask(value)
