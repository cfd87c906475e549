"""What configctl knows about each config key, read from the committed ``schemas/``.

The schemas are the single source of facts: validation runs them through jsonschema, and
this module exposes their ``x-`` annotations (Kafka type, default, update mode, synonyms,
sensitivity) as small frozen records for precedence, masking and rendering. Loaded once per
process and cached; pure otherwise.

The schemas hold Kafka 3.9's facts. Kafka 4's differences come from
``configctl/data/kafka-4.4-configs.json``, read from Kafka 4.4.0's own jars by
``scripts/generate_kafka4_facts.py``: which 3.9 keys Kafka 4 no longer has
(:func:`removed_in_kafka4`) and the keys new in Kafka 4 (:func:`kafka4_only_keys`). Which release a
cluster runs is the store's answer (``Registrations.kafka_release``); :func:`is_kafka4` reads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from configctl.entities import EntityType

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

LISTENER_PREFIX = "listener.name."
KAFKA4_FACTS = "kafka-4.4-configs.json"
KAFKA4_RELEASES = ("4.0", "4.1", "4.2", "4.3", "4.4")
"""The Kafka 4 releases configctl knows (the facts are 4.4's: 4.1 to 4.4 removed no key 4.0 kept)."""
"""Kafka 4's topic and broker config facts (``configctl/data/``), generated from 4.4.0's jars."""


@dataclass(frozen=True)
class ConfigKey:
    """One known config key of one entity type."""

    name: str
    entity_type: EntityType
    kafka_type: str
    default: str | None
    sensitive: bool
    importance: str | None = None
    update_mode: str | None = None
    synonyms: tuple[str, ...] = ()
    broker_synonyms: tuple[tuple[str, str], ...] = ()
    dynamic_only: bool = False

    @property
    def read_only(self) -> bool:
        return self.update_mode == "read-only"

    @property
    def per_broker(self) -> bool:
        return self.update_mode == "per-broker"


def schemas_dir() -> Traversable:
    """Where the schemas live: inside the package (an installed wheel, or a zip shipped to a
    Spark cluster with ``--py-files``), else the source checkout's ``schemas/``."""
    packaged = resources.files("configctl") / "_schemas"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "schemas"


@cache
def schema(entity_type: EntityType) -> Mapping[str, Any]:
    """The raw JSON Schema document for an entity type."""
    path = schemas_dir() / f"{EntityType(entity_type).value}.json"
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def keys(entity_type: EntityType) -> Mapping[str, ConfigKey]:
    """Every known key of an entity type, by name."""
    etype = EntityType(entity_type)
    result = {}
    for name, prop in schema(etype)["properties"].items():
        result[name] = ConfigKey(
            name=name,
            entity_type=etype,
            kafka_type=prop["x-kafka-type"],
            default=prop.get("x-default"),
            sensitive=bool(prop.get("x-sensitive")),
            importance=prop.get("x-importance"),
            update_mode=prop.get("x-update-mode"),
            synonyms=tuple(prop.get("x-synonyms") or ()),
            broker_synonyms=tuple((n, c) for n, c in prop.get("x-broker-synonyms") or ()),
            dynamic_only=bool(prop.get("x-dynamic-only")),
        )
    return MappingProxyType(result)


def split_listener_prefix(name: str) -> tuple[str | None, str]:
    """``listener.name.internal.ssl.keystore.location`` -> (``internal``, ``ssl.keystore.location``).

    Also strips a SASL mechanism segment (``listener.name.l.plain.sasl.jaas.config``) when the
    remainder is one of Kafka's per-mechanism configs. Unprefixed names return (None, name).
    """
    if not name.startswith(LISTENER_PREFIX):
        return None, name
    rest = name[len(LISTENER_PREFIX) :]
    listener, _, config = rest.partition(".")
    if not listener or not config:
        return None, name
    mechanism_configs = schema(EntityType.BROKERS).get("x-listener-mechanism-configs", [])
    _mechanism, _, after = config.partition(".")
    if after in mechanism_configs and config not in keys(EntityType.BROKERS):
        return listener, after
    return listener, config


def lookup(entity_type: EntityType, name: str) -> ConfigKey | None:
    """The facts for ``name``; a listener-prefixed broker key answers with its base key's facts."""
    table = keys(entity_type)
    if name in table:
        return table[name]
    if EntityType(entity_type) is EntityType.BROKERS:
        listener, base = split_listener_prefix(name)
        if listener is not None and base in table:
            return table[base]
    return None


def synonym_group(name: str) -> frozenset[str]:
    """``name`` and every broker key that is its synonym, either way round (``log.retention.ms``,
    ``.minutes``, ``.hours``): one key to a person, several names to Kafka."""
    group = {name}
    known = lookup(EntityType.BROKERS, name)
    if known is not None:
        group.update(known.synonyms)
    for key in keys(EntityType.BROKERS).values():
        if name in key.synonyms:
            group.add(key.name)
            group.update(key.synonyms)
    return frozenset(group)


def is_sensitive(entity_type: EntityType, name: str) -> bool:
    """Password configs (brokers) and SCRAM credentials (users) never leave configctl in the clear.

    Unknown broker keys whose names end like a password config (Kafka's rule for custom
    listener configs) count as sensitive too.
    """
    found = lookup(entity_type, name)
    if found is not None:
        return found.sensitive
    if EntityType(entity_type) is EntityType.BROKERS:
        suffixes = schema(EntityType.BROKERS).get("x-password-config-suffixes", [])
        return any(name.endswith(suffix) for suffix in suffixes)
    return False


@cache
def sensitive_names() -> tuple[frozenset[str], tuple[str, ...]]:
    """Every key name that holds a secret in some entity type, and the password-config suffixes.

    For readers that see a key name without its entity type (snapshot lines, the Spark audit):
    a name is sensitive when it is one of the names, or ends with ``.`` plus a suffix (a
    listener-prefixed password config). Derived from the schemas, never kept by hand.
    """
    names = frozenset(key.name for etype in EntityType for key in keys(etype).values() if key.sensitive)
    suffixes = tuple(schema(EntityType.BROKERS).get("x-password-config-suffixes", ()))
    return names, suffixes


@cache
def listener_prefix_required() -> frozenset[str]:
    """Broker security configs Kafka updates dynamically only as ``listener.name.<l>.<config>``."""
    return frozenset(schema(EntityType.BROKERS)["x-listener-prefix-required"])


@cache
def listener_prefixed_cluster_wide() -> frozenset[str]:
    """Listener-prefixed configs that may be set cluster-wide (the rest are per broker)."""
    return frozenset(schema(EntityType.BROKERS)["x-listener-prefixed-cluster-wide"])


def custom_keys_allowed(entity_type: EntityType) -> bool:
    return bool(schema(entity_type).get("x-custom-keys-allowed"))


def quota_precedence() -> tuple[str, ...]:
    """The 8 quota levels, most specific first, as path templates."""
    return tuple(schema(EntityType.USERS)["x-quota-precedence"])


def known_names(entity_type: EntityType) -> tuple[str, ...]:
    return tuple(keys(entity_type))


# --------------------------------------------------------------------------------------------
# Kafka 4: what changed since 3.9 (configctl/data/kafka-4.4-configs.json)
# --------------------------------------------------------------------------------------------


def is_kafka4(release: str | None) -> bool:
    """Whether ``release`` (a store's ``kafka_release()``: ``3.9``, ``4.4``, ``4.x``) is Kafka 4 or
    newer; None (not known) is not: 3.9's rules, as before."""
    if not release:
        return False
    major = release.partition(".")[0]
    return major.isdigit() and int(major) >= 4


@cache
def kafka4_facts() -> Mapping[str, Any]:
    """The generated Kafka 4 facts document (its ``source`` says how it was made)."""
    path = resources.files("configctl") / "data" / KAFKA4_FACTS
    return json.loads(path.read_text(encoding="utf-8"))


def kafka4_release() -> str:
    """The Kafka 4 release the facts were read from (``4.4``)."""
    return str(kafka4_facts()["release"])


@cache
def removed_in_kafka4(entity_type: EntityType) -> frozenset[str]:
    """Keys of this entity type that Kafka 3.9 has and Kafka 4 no longer defines."""
    removed = kafka4_facts()["removed"].get(EntityType(entity_type).value, ())
    return frozenset(removed)


@cache
def kafka4_only_keys(entity_type: EntityType) -> Mapping[str, ConfigKey]:
    """Keys Kafka 4 defines that the 3.9 schemas do not (documented ones only: Kafka's internal
    keys are not for operators), as records like :func:`keys` gives."""
    etype = EntityType(entity_type)
    facts = kafka4_facts().get(etype.value, {})
    known = keys(etype)
    result = {}
    for name, fact in facts.items():
        if name in known or fact.get("internal"):
            continue
        result[name] = ConfigKey(
            name=name,
            entity_type=etype,
            kafka_type=fact["type"],
            default=fact.get("default"),
            sensitive=bool(fact.get("sensitive")),
            importance=fact.get("importance"),
            update_mode=fact.get("update_mode"),
        )
    return MappingProxyType(result)


def kafka4_valid_values(entity_type: EntityType, name: str) -> str | None:
    """Kafka 4's own wording of a key's valid values (its validator's ``toString``), if any."""
    fact = kafka4_facts().get(EntityType(entity_type).value, {}).get(name)
    return None if fact is None else fact.get("valid_values")
