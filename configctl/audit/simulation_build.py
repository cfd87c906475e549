"""Building a simulated fleet: the deterministic world for a spec, drift injected at known places.

Drift injected, each count ``round(drift_rate * brokers)`` (at least one when the rate is
positive and the fleet is big enough for that kind of drift to be visible):

* stale brokers: stopped applying changes before the newest one;
* local patches: a broker holds another value (or no line) for a topic, quota or
  ``brokers/<default>`` key;
* static skew: one broker's server.properties sets a key differently;
* per-broker overrides: ``brokers/<id>`` entries in the desired state;
* optionally malformed lines (``malformed``), half unparseable and half missing fields.

Generation is deterministic for a seed (one :class:`random.Random`, drawn from in a fixed
order): same seed and sizes, same fleet. What was injected is recorded on the fleet
(``Fleet.injected``), beside the ground truth the fleet implies.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from typing import Any

from configctl.audit.schema import BROKER_DEFAULT_PATH
from configctl.audit.simulation_model import Fleet, SimulatedChange, SimulationSpec, apply_changes
from configctl.audit.simulation_values import (
    BUILTIN,
    DEFAULT_BASE,
    DEFAULT_VALUES,
    PER_BROKER_VALUES,
    QUOTA_BASE,
    QUOTA_VALUES,
    SKEW_VALUES,
    STATIC_SHARED,
    TOPIC_PREFIXES,
    TOPIC_VALUES,
)
from configctl.secrets import digest


def _count(rate: float, brokers: int, minimum_brokers: int) -> int:
    if rate <= 0 or brokers < minimum_brokers:
        return 0
    return max(1, round(rate * brokers))


def _other(rng: random.Random, choices: Iterable[str], current: str | None) -> str:
    options = sorted({c for c in choices if c != current})
    return rng.choice(options) if options else f"{current}-drifted"


def build_fleet(spec: SimulationSpec) -> Fleet:
    """The deterministic fleet for ``spec`` (same seed and sizes, same fleet)."""
    rng = random.Random(spec.seed)
    brokers = list(range(1, spec.brokers + 1))
    static = {b: _static_for(b) for b in brokers}

    base: dict[str, dict[str, str]] = {BROKER_DEFAULT_PATH: dict(DEFAULT_BASE)}
    base.update({path: dict(config) for path, config in QUOTA_BASE.items()})
    topic_keys = sorted(TOPIC_VALUES)
    for index in range(spec.topics):
        topic = f"topics/{TOPIC_PREFIXES[index % len(TOPIC_PREFIXES)]}.{index:05d}"
        keys = rng.sample(topic_keys, rng.randint(1, 3))
        base[topic] = {k: rng.choice(TOPIC_VALUES[k]) for k in sorted(keys)}

    injected: list[dict[str, Any]] = []
    for _ in range(_count(spec.drift_rate, spec.brokers, 1)):
        broker = rng.choice(brokers)
        name = rng.choice(sorted(PER_BROKER_VALUES))
        values = PER_BROKER_VALUES[name] or (digest(f"keystore-of-broker-{broker}"),)
        base.setdefault(f"brokers/{broker}", {})[name] = rng.choice(values)
        injected.append({"kind": "per_broker_override", "broker_id": broker, "name": name})

    base_number = 1000 + spec.topics
    changes = _changes(rng, spec, base, base_number, brokers)

    applied_max = base_number + spec.changes - spec.pending
    applied = dict.fromkeys(brokers, applied_max)
    stale_count = min(_count(spec.drift_rate, spec.brokers, 2), spec.brokers - 1)
    for broker in sorted(rng.sample(brokers, stale_count)):
        if applied_max > base_number:
            applied[broker] = rng.randint(base_number, applied_max - 1)
            injected.append({"kind": "stale", "broker_id": broker, "change_number": applied[broker]})

    final = apply_changes(base, changes)
    patches: dict[int, dict[tuple[str, str], str | None]] = {b: {} for b in brokers}
    patchable = sorted(
        (path, name)
        for path, config in final.items()
        if not path.startswith("brokers/") or path == BROKER_DEFAULT_PATH
        for name in config
    )
    for _ in range(_count(spec.drift_rate, spec.brokers, 2)):
        if not patchable:
            break
        broker = rng.choice(brokers)
        path, name = rng.choice(patchable)
        if rng.random() < 0.25:
            value = None
        elif path == BROKER_DEFAULT_PATH:
            value = _other(rng, DEFAULT_VALUES[name], final[path][name])
        elif path.startswith("topics/"):
            value = _other(rng, TOPIC_VALUES[name], final[path][name])
        else:
            value = _other(rng, QUOTA_VALUES[name], final[path][name])
        patches[broker][(path, name)] = value
        injected.append(
            {"kind": "patch", "broker_id": broker, "entity_path": path, "name": name, "value": value}
        )

    for _ in range(_count(spec.drift_rate, spec.brokers, 2)):
        broker = rng.choice(brokers)
        name = rng.choice(sorted(SKEW_VALUES))
        current = static[broker].get(name, BUILTIN.get(name))
        static[broker][name] = _other(rng, SKEW_VALUES[name], current)
        injected.append({"kind": "static_skew", "broker_id": broker, "name": name})

    fleet = Fleet(spec, brokers, static, base, base_number, changes, applied, patches, injected=injected)
    fleet.malformed = _malformed(rng, spec, brokers, base_number)
    return fleet


def _static_for(broker: int) -> dict[str, str]:
    static = dict(STATIC_SHARED)
    static.update(
        {
            "broker.id": str(broker),
            "broker.rack": f"rack-{(broker - 1) % 3 + 1}",
            "listeners": "PLAINTEXT://0.0.0.0:9092,INTERNAL://0.0.0.0:9093",
            "advertised.listeners": f"PLAINTEXT://broker-{broker}.kafka.internal:9092,"
            f"INTERNAL://10.0.{broker // 250}.{broker % 250 + 1}:9093",
            "log.dirs": f"/var/lib/kafka/data-{broker}a,/var/lib/kafka/data-{broker}b",
            "ssl.keystore.password": digest(f"keystore-of-broker-{broker}"),
        }
    )
    return static


def _changes(
    rng: random.Random,
    spec: SimulationSpec,
    base: dict[str, dict[str, str]],
    base_number: int,
    brokers: list[int],
) -> list[SimulatedChange]:
    """Later changes, each to a different key: edits, additions and deletions of every kind."""
    changes: list[SimulatedChange] = []
    used: set[tuple[str, str]] = set()
    kinds = ("topic", "topic", "default", "quota", "per-broker")
    attempts = 0
    while len(changes) < spec.changes and attempts < spec.changes * 50:
        attempts += 1
        state = apply_changes(base, changes)
        kind = kinds[len(changes) % len(kinds)] if len(changes) < len(kinds) else rng.choice(kinds)
        if kind == "topic":
            topics = sorted(p for p in state if p.startswith("topics/"))
            if not topics:
                continue
            path = rng.choice(topics)
            name = rng.choice(sorted(TOPIC_VALUES))
            current = state[path].get(name)
            value = (
                None
                if current is not None and rng.random() < 0.3
                else _other(rng, TOPIC_VALUES[name], current)
            )
        elif kind == "default":
            path = BROKER_DEFAULT_PATH
            name = rng.choice(sorted(DEFAULT_VALUES))
            current = state.get(path, {}).get(name)
            value = (
                None
                if current is not None and rng.random() < 0.3
                else _other(rng, DEFAULT_VALUES[name], current)
            )
        elif kind == "quota":
            path = rng.choice(sorted(QUOTA_BASE))
            name = rng.choice(sorted(QUOTA_BASE[path]))
            value = _other(rng, QUOTA_VALUES[name], state.get(path, {}).get(name))
        else:
            broker = rng.choice(brokers)
            path = f"brokers/{broker}"
            name = rng.choice([n for n in sorted(PER_BROKER_VALUES) if PER_BROKER_VALUES[n]])
            value = _other(rng, PER_BROKER_VALUES[name], state.get(path, {}).get(name))
        if (path, name) in used:
            continue
        used.add((path, name))
        changes.append(SimulatedChange(base_number + len(changes) + 1, path, name, value))
    return changes


def _malformed(
    rng: random.Random, spec: SimulationSpec, brokers: list[int], cn: int
) -> list[tuple[int, int, str, str]]:
    lines = []
    for index in range(spec.malformed):
        broker = rng.choice(brokers)
        if index % 2 == 0:
            kind = "unparseable"
            text = (
                f'{{"broker_id":{broker},"change_number":{cn},"entity_path":"topics/orders","name":"retenti'
            )
        else:
            kind = "missing_fields"
            text = json.dumps({"broker_id": broker, "entity_path": "topics/orders", "name": "retention.ms"})
        lines.append((broker, rng.randint(0, 10_000), kind, text))
    return lines
