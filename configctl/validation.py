"""Config validation, the library: every problem of one key and its value, as short sentences.

ZooKeeper holds every config value as a string. Validation first turns each string into the
value Kafka's ``ConfigDef`` would parse (:func:`coerce`), then runs the committed JSON Schema
of the key (``schemas/*.json``, via jsonschema's Draft 2020-12 validator) on that value, then
applies the rules JSON Schema has no word for: SCRAM placement here. The family handlers
(:mod:`configctl.handlers`) call this library for each key and add their own rules (broker update
modes, ``<default>`` placement and listener prefixes in :mod:`configctl.brokerkeys`, topic
cross-field rules); a whole config is validated there (:func:`configctl.handlers.validate.validate_config`),
and this module never looks a handler up. Each problem is one sentence that names the key, so an
operator fixes the whole change at once instead of one error per run.

Pure: no I/O beyond the schemas :mod:`configctl.catalogue` loads once; validators are compiled
once per entity type and cached. Sensitive values (passwords, SCRAM credentials) never appear
in a message.

What cannot be checked from an entity's own config (and is left to whoever holds the broker's
effective config, e.g. :mod:`configctl.precedence`): a topic key that is not set falls back to
the broker's effective value of its synonym, so topic cross-field rules compare only keys that
the topic sets itself (Kafka's ZooKeeper-mode ``kafka-configs.sh`` compares against topic
defaults, which can never violate these rules, so nothing Kafka refuses is missed); and the
broker-side ``remote.log.storage.system.enable=true`` that ``remote.storage.enable=true``
needs is not visible here. Kafka's tiered-storage rules that need the previous stored config
(turning remote storage off) or ``remote.log.copy.disable`` are not in the catalogue and not
checked.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from configctl import catalogue, values
from configctl.catalogue import ConfigKey
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import shown as echo

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

__all__ = [
    "Family",
    "check_release_key",
    "check_schema_key",
    "check_value",
    "closest",
    "coerce",
    "unknown_key",
]

_SCRAM_ITERATIONS_RE = re.compile(r",iterations=([0-9]+)$")
_SCRAM_FIELD_RE = re.compile(r"(salt|stored_key|server_key)=([^,]*)")
_ENUM_SHOWN = 8
_RANGE_RE = re.compile(r"^\[(-?[0-9]+)?,\.\.\.(?:,(-?[0-9]+))?\]$")


# --------------------------------------------------------------------------------------------
# String -> typed value, as Kafka's ConfigDef.parseType does it
# --------------------------------------------------------------------------------------------


def coerce(key: ConfigKey, raw: str) -> tuple[Any, str | None]:
    """Turn a stored string into the typed value Kafka's ``ConfigDef`` parses it to.

    int/short/long -> ``int`` (decimal digits with an optional sign, within the Java type's
    range), double -> ``float``, boolean -> ``bool`` (``true``/``false`` in any case), list ->
    ``list[str]`` (split on commas, ``""`` is the empty list), anything else -> ``str``. Like
    ``ConfigDef``, surrounding whitespace is ignored. Returns ``(value, None)`` or
    ``(None, "key: reason")``; the reason never shows a sensitive value.
    """
    if not isinstance(raw, str):
        return None, f"{key.name}: the value must be a string, not {type(raw).__name__}"
    value, reason = values.parse(key.kafka_type, raw, shown="the value" if key.sensitive else None)
    return value, (None if reason is None else f"{key.name}: {reason}")


# --------------------------------------------------------------------------------------------
# Compiled schemas
# --------------------------------------------------------------------------------------------


@cache
def _validators(entity_type: EntityType) -> Mapping[str, Draft202012Validator]:
    """One compiled validator per key: compiled once per process, reused for every value.

    The schemas' own validity is a test (tests/unit/test_catalogue.py), not a run-time step:
    ``check_schema`` on the broker schema costs ~100 ms, too much for every CLI call. jsonschema
    itself is imported here, on the first value the fast path cannot decide: importing it costs a
    one-key ``alter`` about 35 ms of its start.
    """
    from jsonschema import Draft202012Validator

    document = catalogue.schema(entity_type)
    return {name: Draft202012Validator(sub) for name, sub in document["properties"].items()}


_SIMPLE_KEYWORDS = frozenset({"type", "minimum", "maximum"})
_SIMPLE_TYPES = {"integer": (int,), "number": (int, float), "string": (str,), "boolean": (bool,)}


@cache
def _simple_schemas(entity_type: EntityType) -> Mapping[str, tuple[tuple[type, ...], Any, Any]]:
    """Keys whose schema is only a JSON type and a range (most of them): ``(python types, min, max)``.

    A value that plainly passes such a schema is accepted without a jsonschema pass (a listener
    validates 100,000 topic configs at a full load); anything else still goes through jsonschema,
    which alone words the problems.
    """
    simple = {}
    for name, sub in catalogue.schema(entity_type)["properties"].items():
        keywords = {k for k in sub if not k.startswith("x-") and k not in ("description", "title", "default")}
        kind = sub.get("type")
        if keywords <= _SIMPLE_KEYWORDS and isinstance(kind, str) and kind in _SIMPLE_TYPES:
            simple[name] = (_SIMPLE_TYPES[kind], sub.get("minimum"), sub.get("maximum"))
    return simple


def _passes(simple: tuple[tuple[type, ...], Any, Any], value: Any) -> bool:
    types, low, high = simple
    if type(value) not in types:  # exact types: a bool is no integer, as in JSON
        return False
    if low is not None and not value >= low:  # NaN fails both bounds: jsonschema decides
        return False
    return high is None or value <= high


@lru_cache(maxsize=64)
def _lowered(names: tuple[str, ...]) -> Mapping[str, str]:
    return {name.lower(): name for name in names}


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The known name an operator most likely meant: same name in another case, else difflib's best."""
    pool = tuple(candidates)
    lowered = _lowered(pool)
    if name.lower() in lowered:
        return lowered[name.lower()]
    found = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[found[0]] if found else None


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def _plain_path(entity: Entity) -> str:
    """The entity path with plain names, for messages (``users/User:alice/clients/app1``)."""
    path = f"{entity.type.value}/{entity.name}"
    if entity.client is not None:
        path += f"/clients/{entity.client}"
    return path


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            values.java_double(value) if not math.isinf(value) else ("Infinity" if value > 0 else "-Infinity")
        )
    if isinstance(value, str):
        return echo(value)
    return str(value)


def _valid_values_text(schema: Mapping[str, Any]) -> str | None:
    description = schema.get("description", "")
    marker = "valid values "
    start = description.find(marker)
    if start < 0:
        return None
    text = description[start + len(marker) :]
    end = text.find("; update mode")
    return text if end < 0 else text[:end]


def _enum_text(options: list[Any]) -> str:
    shown = ", ".join(str(o) for o in options[:_ENUM_SHOWN])
    return shown if len(options) <= _ENUM_SHOWN else f"{shown}, ... ({len(options)} values)"


def _describe_error(name: str, error: ValidationError, key_schema: Mapping[str, Any], sensitive: bool) -> str:
    """One sentence for one jsonschema error on the coerced value of ``name``."""
    where = name
    item = ""
    if error.absolute_path:
        item = "item "
    shown = "the value" if sensitive else f"{item}{_show(error.instance)}"
    kind = error.validator
    if kind == "minimum":
        return f"{where}: {shown} is less than the minimum {_show(error.validator_value)}"
    if kind == "maximum":
        return f"{where}: {shown} is greater than the maximum {_show(error.validator_value)}"
    if kind == "exclusiveMinimum":
        return f"{where}: {shown} must be greater than {_show(error.validator_value)}"
    if kind == "exclusiveMaximum":
        return f"{where}: {shown} must be less than {_show(error.validator_value)}"
    if kind == "enum":
        options = list(error.validator_value)
        message = f"{where}: {shown} is not one of {_enum_text(options)}"
        if isinstance(error.instance, str) and not sensitive:
            guess = closest(error.instance, [str(o) for o in options])
            if guess is not None:
                message += f" (did you mean {guess!r}?)"
        return message
    if kind == "anyOf":
        valid = _valid_values_text(key_schema)
        return f"{where}: {shown} is not a valid value" + (f" (valid values {valid})" if valid else "")
    if kind == "minItems":
        return f"{where}: the list must not be empty"
    if kind == "minLength":
        return f"{where}: the value must not be empty"
    if kind == "pattern":
        if key_schema.get("x-kafka-type") == "class":
            return f"{where}: {shown} is not a valid Java class name"
        if key_schema.get("x-kafka-type") == "scram_credential":
            return (
                f"{where}: the value is not a stored SCRAM credential "
                "(salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>)"
            )
        if name.endswith("replication.throttled.replicas"):
            return f"{where}: {shown} is not of the form <partition>:<broker-id> (or a lone *)"
        return f"{where}: {shown} does not match {error.validator_value}"
    if kind == "type":
        return f"{where}: {shown} is not of type {error.validator_value}"
    return f"{where}: {error.message}" if not sensitive else f"{where}: the value is not valid"


# --------------------------------------------------------------------------------------------
# Per-key checks
# --------------------------------------------------------------------------------------------


def check_value(
    entity_type: EntityType, name: str, key: ConfigKey, raw: Any, problems: list[str]
) -> Any | None:
    """Type, range, enum and list-item checks for one value; returns the coerced value or None."""
    if not isinstance(raw, str):
        problems.append(f"{name}: the value must be a string, not {type(raw).__name__}")
        return None
    # the value is quoted (None) only if a message needs it: nearly every value passes
    value, reason = values.parse(key.kafka_type, raw, shown="the value" if key.sensitive else None)
    if reason is not None:
        problems.append(f"{name}: {reason}")
        return None
    simple = _simple_schemas(entity_type).get(key.name)
    if simple is None or not _passes(simple, value):  # jsonschema says what is wrong, and how
        validator = _validators(entity_type)[key.name]
        for error in validator.iter_errors(value):
            problems.append(_describe_error(name, error, validator.schema, key.sensitive))
    if (
        isinstance(value, list)  # first: the cheapest test, and most values are no list
        and name.endswith("replication.throttled.replicas")
        and "*" in value
        and len(value) > 1
    ):
        problems.append(f"{name}: '*' (all replicas) must stand alone, not in a list")
    return value


class Family(Protocol):
    """What a message about an unknown key needs of the entity's family (its handler is one)."""

    def label(self, entity: Entity) -> str: ...

    def unknown_hint(self, name: str) -> str | None: ...


def unknown_key(label: str, name: str, pool: Iterable[str], hint: str | None = None) -> str:
    """``unknown <label> config <name>``, with the key the operator most likely meant: the
    family's own ``hint`` when it has one, else the closest name in ``pool``."""
    message = f"unknown {label} config {echo(name)}"
    guess = hint or closest(name, pool)
    if guess is not None:
        message += f" (did you mean {guess!r}?)"
    return message


def _check_scram(entity: Entity, name: str, key: ConfigKey, raw: Any, problems: list[str]) -> None:
    if entity.client is not None or entity.name == DEFAULT:
        problems.append(
            f"{name} can only be set for a named user (users/<user>), not at {_plain_path(entity)}"
        )
        return
    before = len(problems)
    value = check_value(entity.schema_type, name, key, raw, problems)
    if value is None or len(problems) > before:
        return
    facts = catalogue.schema(entity.schema_type)["properties"][key.name]
    iterations = int(_SCRAM_ITERATIONS_RE.search(value).group(1))  # the pattern guarantees it
    low, high = facts.get("x-min-iterations"), facts.get("x-max-iterations")
    if low is not None and iterations < low:
        problems.append(f"{name}: {iterations} iterations is less than the minimum {low}")
    if high is not None and iterations > high:
        problems.append(f"{name}: {iterations} iterations is more than the maximum {high}")
    algorithm = facts.get("x-hash-algorithm")
    if algorithm:
        size = hashlib.new(algorithm.replace("-", "").lower()).digest_size
        lengths = set()
        for field, encoded in _SCRAM_FIELD_RE.findall(value):
            try:
                decoded = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError):
                problems.append(f"{name}: the {field} of the credential is not valid Base64")
                continue
            if field != "salt":
                lengths.add(len(decoded))
        if lengths and lengths != {size}:
            found = "/".join(str(n) for n in sorted(lengths))
            problems.append(
                f"{name}: the credential's keys are {found} bytes long, not the {size} of {algorithm}"
            )


def check_schema_key(family: Family, entity: Entity, name: str, raw: Any, problems: list[str]) -> None:
    """One key of ``entity``'s schema: known, its value typed and in range, SCRAM credentials placed."""
    etype = entity.schema_type
    key = catalogue.keys(etype).get(name)
    if key is None:
        scram_allowed = entity.client is None and entity.name != DEFAULT
        pool = [k.name for k in catalogue.keys(etype).values() if scram_allowed or not _is_scram(k)]
        problems.append(unknown_key(family.label(entity), name, pool, family.unknown_hint(name)))
        return
    if _is_scram(key):
        _check_scram(entity, name, key, raw, problems)
        return
    check_value(etype, name, key, raw, problems)


def _is_scram(key: ConfigKey) -> bool:
    return key.kafka_type == "scram_credential"


# --------------------------------------------------------------------------------------------
# What differs by Kafka release (the store says which: Registrations.kafka_release)
# --------------------------------------------------------------------------------------------


def release_matters(entity: Entity, names: Iterable[str]) -> bool:
    """Whether the release a cluster runs can change the verdict on any of ``names``: a key Kafka 4
    removed, or one only Kafka 4 has. (Most writes: no, and no one need ask the cluster.)"""
    etype = entity.schema_type
    removed, only4 = catalogue.removed_in_kafka4(etype), catalogue.kafka4_only_keys(etype)
    return any(name in removed or name in only4 for name in names)


def check_release_key(entity: Entity, name: str, raw: Any, release: str | None, problems: list[str]) -> bool:
    """Kafka 4's verdict on one key, where it differs from 3.9's; True when it decided the key
    (the 3.9 checks are then skipped), False to leave the key to them (always so on 3.x).

    - A key Kafka 4 removed is refused, naming the release: a 4.4 broker refuses a topic's
      (``Unknown topic config name``) and keeps a broker's as an unknown key that does nothing.
    - A key only Kafka 4 has is checked for its type and numeric range, as Kafka 4.4 defines them
      (its other validators are the brokers' to apply: ``--dry-run`` asks them); a read-only
      broker key, or a per-broker one at ``brokers/<default>``, is refused as 3.9's are
      (:mod:`configctl.placement` words those for the 3.9 keys).
    """
    if not catalogue.is_kafka4(release):
        return False
    etype = entity.schema_type
    if name in catalogue.removed_in_kafka4(etype):
        problems.append(
            f"{name} was removed in Kafka 4; this cluster runs {release}: Kafka "
            f"{catalogue.kafka4_release()} has no {entity.type.value[:-1]} config of that name, drop it"
        )
        return True
    key = catalogue.kafka4_only_keys(etype).get(name)
    if key is None:
        return False
    if key.read_only:
        problems.append(
            f"{name} is read-only in Kafka {catalogue.kafka4_release()}: set it in server.properties "
            "and restart the broker"
        )
        return True
    if key.per_broker and entity.name == DEFAULT:  # only broker keys have an update mode
        problems.append(f"{name} can only be set per broker (brokers/<id>), not at brokers/{DEFAULT}")
        return True
    if not isinstance(raw, str):
        problems.append(f"{name}: the value must be a string, not {type(raw).__name__}")
        return True
    value, reason = values.parse(key.kafka_type, raw, shown="the value" if key.sensitive else None)
    if reason is not None:
        problems.append(f"{name}: {reason}")
        return True
    problem = _outside_kafka4_range(etype, name, value, "the")
    if problem is not None:
        problems.append(problem)
    return True


def _outside_kafka4_range(etype: EntityType, name: str, value: Any, whose: str) -> str | None:
    """``value`` against Kafka 4.4's numeric range for ``name`` (its validator's own words,
    ``[1,...]``, ``[0,...,9]``), or None when within it, not a number, or the key has none."""
    found = _RANGE_RE.match(catalogue.kafka4_valid_values(etype, name) or "")
    if found is None or not isinstance(value, int) or isinstance(value, bool):
        return None
    low, high = found.group(1), found.group(2)
    if low is not None and value < int(low):
        return f"{name}: {value} is less than {whose} minimum {low}"
    if high is not None and value > int(high):
        return f"{name}: {value} is greater than {whose} maximum {high}"
    return None


def kafka4_range_refusal(entity: Entity, name: str, raw: str) -> str | None:
    """Why Kafka 4 refuses ``raw`` for a key both lines have, when its range moved (``segment.bytes``
    is at least 14 on 3.9 and 1048576 on 4.x, KIP-1030), else None. Only numeric ranges, as Kafka
    4.4's own validators word them (``[1048576,...]``); the other validators are the brokers'."""
    etype = entity.schema_type
    key = catalogue.lookup(etype, name)
    if key is None or key.kafka_type not in ("int", "long", "short"):
        return None
    value, reason = values.parse(key.kafka_type, raw, shown=None)
    if reason is not None:
        return None
    return _outside_kafka4_range(etype, name, value, f"Kafka {catalogue.kafka4_release()}'s")


# --------------------------------------------------------------------------------------------
# Desired-state values -> stored strings
# --------------------------------------------------------------------------------------------
