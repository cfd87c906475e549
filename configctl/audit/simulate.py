"""A fleet simulator: snapshots with drift injected at known places, and the findings they imply.

The model is the ZooKeeper side (a dynamic config at some base change number plus a list of
later changes) and, per broker, what it applied: its last change number, its server.properties,
and local patches (values a broker holds that no change explains). Each broker's snapshot is
what a correct listener would write for that view (see docs/reference/snapshots.md). The ground truth is computed
from the model alone, in plain Python, by rules written independently of the Spark job: that
is what makes it an oracle for the audit rather than a copy of it.

Drift injected, each count ``round(drift_rate * brokers)`` (at least one when the rate is
positive and the fleet is big enough for that kind of drift to be visible):

* stale brokers: stopped applying changes before the newest one;
* local patches: a broker holds another value (or no line) for a topic, quota or
  ``brokers/<default>`` key;
* static skew: one broker's server.properties sets a key differently;
* per-broker overrides: ``brokers/<id>`` entries in the desired state;
* optionally malformed lines (``malformed``), half unparseable and half missing fields.

Generation is deterministic for a seed and fast enough for benchmark fleets of tens of
millions of lines: lines shared by every broker are serialized once.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from configctl import snapshot
from configctl.audit.expected import ExpectedState, ExpectedValue
from configctl.audit.schema import BROKER_DEFAULT_PATH, is_per_broker_by_nature, is_sensitive
from configctl.files import read_bytes
from configctl.secrets import digest
from configctl.sources import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_BROKER_SOURCES,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    SERVER_PROPERTIES_SOURCES,
    STATIC_BROKER_CONFIG,
)

GROUND_TRUTH_FILE = "ground_truth.json"
# The audit findings a ground truth pins down (an audit document has more: counts, heatmap, examples).
GROUND_TRUTH_FIELDS = (
    "brokers",
    "rows",
    "latest_change_number",
    "stale_brokers",
    "divergent",
    "per_broker_overrides",
    "static_skew",
    "missed_changes",
)
DESIRED_STATE_FILE = "desired_state.json"
BASE_TIME_MS = 1_763_780_000_000

# Built-in defaults of the broker keys the simulated brokers report (Kafka 3.9 values).
BUILTIN: dict[str, str | None] = {
    "advertised.listeners": None,
    "auto.create.topics.enable": "true",
    "background.threads": "10",
    "broker.id": "-1",
    "broker.rack": None,
    "compression.type": "producer",
    "default.replication.factor": "1",
    "delete.topic.enable": "true",
    "group.initial.rebalance.delay.ms": "3000",
    "leader.imbalance.check.interval.seconds": "300",
    "listeners": "PLAINTEXT://:9092",
    "log.cleaner.dedupe.buffer.size": "134217728",
    "log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
    "log.cleaner.threads": "1",
    "log.cleanup.policy": "delete",
    "log.dirs": None,
    "log.retention.hours": "168",
    "log.segment.bytes": "1073741824",
    "max.connections": "2147483647",
    "max.connections.per.ip": "2147483647",
    "message.max.bytes": "1048588",
    "min.insync.replicas": "1",
    "num.io.threads": "8",
    "num.network.threads": "3",
    "num.partitions": "1",
    "num.recovery.threads.per.data.dir": "1",
    "num.replica.fetchers": "1",
    "offsets.topic.replication.factor": "3",
    "queued.max.requests": "500",
    "replica.fetch.max.bytes": "1048576",
    "replica.lag.time.max.ms": "30000",
    "socket.receive.buffer.bytes": "102400",
    "socket.request.max.bytes": "104857600",
    "socket.send.buffer.bytes": "102400",
    "ssl.keystore.password": None,
    "ssl.truststore.password": None,
    "transaction.state.log.replication.factor": "3",
    "unclean.leader.election.enable": "false",
    "zookeeper.connect": None,
    "zookeeper.session.timeout.ms": "18000",
}

# server.properties every broker shares (identity keys are added per broker).
STATIC_SHARED: dict[str, str] = {
    "zookeeper.connect": "zk-1:2181,zk-2:2181,zk-3:2181/kafka",
    "num.network.threads": "8",
    "num.io.threads": "16",
    "num.partitions": "6",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "auto.create.topics.enable": "false",
    "log.retention.hours": "72",
    "offsets.topic.replication.factor": "3",
    "socket.request.max.bytes": "104857600",
    "ssl.truststore.password": digest("fleet-truststore-secret"),
}

# Keys a broker's server.properties may set differently (skew); none is ever set dynamically.
SKEW_VALUES: dict[str, tuple[str, ...]] = {
    "num.io.threads": ("8", "24", "32"),
    "num.network.threads": ("3", "5", "16"),
    "num.partitions": ("3", "12"),
    "log.retention.hours": ("168", "24"),
    "queued.max.requests": ("1000", "2000"),
    "replica.fetch.max.bytes": ("4194304",),
    "replica.lag.time.max.ms": ("10000", "45000"),
    "ssl.truststore.password": (digest("old-truststore-secret"),),
}

# brokers/<default> keys: the base set, and the values later changes or patches pick from.
DEFAULT_BASE: dict[str, str] = {"message.max.bytes": "2097152", "max.connections": "20000"}
DEFAULT_VALUES: dict[str, tuple[str, ...]] = {
    "message.max.bytes": ("2097152", "4194304", "8388608"),
    "max.connections": ("20000", "30000", "50000"),
    "log.segment.bytes": ("536870912", "268435456"),
    "compression.type": ("lz4", "zstd"),
    # a double: written as a broker reports it (Double.toString), as a listener's snapshot has it
    "log.cleaner.io.max.bytes.per.second": ("5.24288E7", "1.048576E8"),
    "background.threads": ("16", "20"),
    "max.connections.per.ip": ("1000", "500"),
}

# Keys operators set per broker (brokers/<id>); the keystore password is a secret.
PER_BROKER_VALUES: dict[str, tuple[str, ...]] = {
    "num.replica.fetchers": ("2", "4", "8"),
    "log.cleaner.threads": ("2", "4"),
    "num.recovery.threads.per.data.dir": ("2", "4"),
    "listener.name.internal.ssl.keystore.password": (),  # a per-broker digest, made on the spot
}

TOPIC_PREFIXES = (
    "orders",
    "payments",
    "clicks",
    "inventory",
    "audit-log",
    "metrics",
    "sessions",
    "shipments",
)
TOPIC_VALUES: dict[str, tuple[str, ...]] = {
    "retention.ms": ("86400000", "259200000", "604800000", "3600000", "1209600000"),
    "cleanup.policy": ("compact", "delete", "compact,delete"),
    "min.insync.replicas": ("1", "2", "3"),
    "max.message.bytes": ("2097152", "5242880", "10485760"),
    "segment.bytes": ("268435456", "536870912"),
    "compression.type": ("lz4", "zstd", "snappy"),
    "retention.bytes": ("1073741824", "10737418240", "-1"),
}

QUOTA_BASE: dict[str, dict[str, str]] = {
    "clients/<default>": {"consumer_byte_rate": "10485760"},
    "clients/reporting": {"consumer_byte_rate": "2097152"},
    "users/<default>": {"producer_byte_rate": "5242880"},
    "users/User%3Aalice": {
        "producer_byte_rate": "1048576",
        "SCRAM-SHA-256": digest("salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"),
    },
    "users/User%3Abob/clients/app-1": {"request_percentage": "200"},
    "ips/<default>": {"connection_creation_rate": "100"},
    "ips/10.1.2.3": {"connection_creation_rate": "20"},
}
QUOTA_VALUES: dict[str, tuple[str, ...]] = {
    "consumer_byte_rate": ("10485760", "20971520", "4194304"),
    "producer_byte_rate": ("1048576", "2097152", "5242880"),
    "request_percentage": ("200", "150", "50"),
    "connection_creation_rate": ("100", "50", "20", "10"),
    "SCRAM-SHA-256": tuple(digest(f"salt=cm90YXRlZA==,rotation={i}") for i in range(3)),
}


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
class Change:
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
    changes: list[Change]
    applied: dict[int, int]
    patches: dict[int, dict[tuple[str, str], str | None]]
    malformed: list[tuple[int, int, str, str]] = field(default_factory=list)  # broker, position, kind, text
    injected: list[dict[str, Any]] = field(default_factory=list)

    @property
    def latest_change_number(self) -> int:
        return self.changes[-1].number if self.changes else self.base_number

    def desired_config(self) -> dict[str, dict[str, str]]:
        """ZooKeeper's /config after every change."""
        return _apply(self.base, self.changes)

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


def _apply(base: dict[str, dict[str, str]], changes: Iterable[Change]) -> dict[str, dict[str, str]]:
    state = {path: dict(config) for path, config in base.items()}
    for change in changes:
        config = state.setdefault(change.entity_path, {})
        if change.value is None:
            config.pop(change.name, None)
        else:
            config[change.name] = change.value
    return {path: config for path, config in state.items() if config}


def _source(path: str) -> str:
    return DYNAMIC_TOPIC_CONFIG if path.startswith("topics/") else path


# -- building a fleet -------------------------------------------------------------------------------


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

    final = _apply(base, changes)
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
) -> list[Change]:
    """Later changes, each to a different key: edits, additions and deletions of every kind."""
    changes: list[Change] = []
    used: set[tuple[str, str]] = set()
    kinds = ("topic", "topic", "default", "quota", "per-broker")
    attempts = 0
    while len(changes) < spec.changes and attempts < spec.changes * 50:
        attempts += 1
        state = _apply(base, changes)
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
        changes.append(Change(base_number + len(changes) + 1, path, name, value))
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


# -- writing ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrittenFleet:
    directory: Path
    files: int
    rows: int

    def to_json(self) -> dict[str, Any]:
        """Where the fleet was written: its directory, broker files, rows, ground truth and desired state."""
        return {
            "directory": str(self.directory),
            "brokers": self.files,
            "rows": self.rows,
            "ground_truth": str(self.directory / GROUND_TRUTH_FILE),
            "desired_state": str(self.directory / DESIRED_STATE_FILE),
        }


def write_fleet(fleet: Fleet, out_dir: str | Path, *, ground_truth: bool = True) -> WrittenFleet:
    """Write ``broker-<id>.jsonl`` per broker, plus ``ground_truth.json`` and ``desired_state.json``.

    Existing ``broker-*.jsonl`` files in ``out_dir`` are removed first.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("broker-*.jsonl"):  # a smaller fleet must not inherit a bigger one's files
        old.unlink()
    touched = fleet.touched()
    shared = [
        snapshot.body(path, name, value, _source(path))
        for path, config in sorted(fleet.base.items())
        if not path.startswith("brokers/")
        for name, value in sorted(config.items())
        if (path, name) not in touched
    ]
    touched_entities = sorted(k for k in touched if not k[0].startswith("brokers/"))
    malformed_by_broker: dict[int, list[tuple[int, str]]] = {}
    for broker, position, _kind, text in fleet.malformed:
        malformed_by_broker.setdefault(broker, []).append((position, text))
    rows = 0
    for broker in fleet.brokers:
        cn = fleet.applied[broker]
        captured = BASE_TIME_MS + broker * 17 + cn
        head = snapshot.head(broker, cn)
        tail = snapshot.tail(captured)  # ends the line
        fragments = [
            snapshot.body(f"brokers/{broker}", name, value, source)
            for name, (value, source) in fleet.broker_config(broker).items()
        ]
        fragments.extend(shared)
        for path, name in touched_entities:
            value = fleet.view(broker, path, name)
            if value is not None:
                fragments.append(snapshot.body(path, name, value, _source(path)))
        lines = [head + fragment + tail for fragment in fragments]
        for position, text in sorted(malformed_by_broker.get(broker, [])):
            lines.insert(min(position, len(lines)), text + "\n")
        rows += len(lines)
        (out / snapshot.file_name(broker)).write_text("".join(lines), encoding="utf-8")
    if ground_truth:
        truth = compute_ground_truth(fleet, rows)
        (out / GROUND_TRUTH_FILE).write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
        (out / DESIRED_STATE_FILE).write_text(
            json.dumps(fleet.expected_state().to_json(), indent=1) + "\n", encoding="utf-8"
        )
    return WrittenFleet(out, len(fleet.brokers), rows)


def simulate(spec: SimulationSpec, out_dir: str | Path, *, ground_truth: bool = True) -> WrittenFleet:
    return write_fleet(build_fleet(spec), out_dir, ground_truth=ground_truth)


# -- the oracle -------------------------------------------------------------------------------------


def _groups(values: dict[int, str | None]) -> list[dict[str, Any]]:
    by_value: dict[str | None, list[int]] = {}
    for broker, value in values.items():
        by_value.setdefault(value, []).append(broker)
    groups = [{"value": v, "count": len(b), "brokers": sorted(b)} for v, b in by_value.items()]
    groups.sort(key=lambda g: (-g["count"], g["value"] is None, g["value"] or ""))
    return groups


def compute_ground_truth(fleet: Fleet, rows: int) -> dict[str, Any]:
    """The findings the audit must report, without and with the desired state."""
    snapshot_latest = max(fleet.applied.values())
    common = _common_findings(fleet)
    malformed = {
        "unparseable": sum(1 for m in fleet.malformed if m[2] == "unparseable"),
        "missing_fields": sum(1 for m in fleet.malformed if m[2] == "missing_fields"),
    }

    def doc(latest: int, with_desired: bool) -> dict[str, Any]:
        return {
            "brokers": len(fleet.brokers),
            "rows": rows,
            "malformed": malformed,
            "latest_change_number": latest,
            "stale_brokers": [
                {"broker_id": b, "change_number": cn, "behind": latest - cn}
                for b, cn in sorted(fleet.applied.items())
                if cn < latest
            ],
            **common,
            "missed_changes": _missed_changes(fleet) if with_desired else None,
        }

    return {
        "spec": {
            "brokers": fleet.spec.brokers,
            "topics": fleet.spec.topics,
            "drift_rate": fleet.spec.drift_rate,
            "seed": fleet.spec.seed,
            "malformed": fleet.spec.malformed,
            "changes": fleet.spec.changes,
            "pending": fleet.spec.pending,
        },
        "injected": fleet.injected,
        "snapshots_only": doc(snapshot_latest, False),
        "with_desired_state": doc(fleet.latest_change_number, True),
    }


def _common_findings(fleet: Fleet) -> dict[str, Any]:
    configs = {b: fleet.broker_config(b) for b in fleet.brokers}
    divergent = []
    for path, name in sorted(k for k in fleet.touched() if not k[0].startswith("brokers/")):
        groups = _groups({b: fleet.view(b, path, name) for b in fleet.brokers})
        if len(groups) > 1:
            divergent.append(
                {"entity_path": path, "name": name, "values": groups, "majority_value": groups[0]["value"]}
            )
    names = sorted({n for config in configs.values() for n in config if not is_per_broker_by_nature(n)})
    static_skew = []
    for name in names:
        sources = {b: configs[b].get(name, (None, None)) for b in fleet.brokers}
        if any(source == DYNAMIC_DEFAULT_BROKER_CONFIG for _, source in sources.values()):
            population = {b: v for b, (v, source) in sources.items() if source != DYNAMIC_BROKER_CONFIG}
            groups = _groups(population)
            if len(groups) > 1:
                divergent.append(
                    {
                        "entity_path": BROKER_DEFAULT_PATH,
                        "name": name,
                        "values": groups,
                        "majority_value": groups[0]["value"],
                    }
                )
        else:
            population = {b: v for b, (v, source) in sources.items() if source in SERVER_PROPERTIES_SOURCES}
            groups = _groups(population)
            if len(groups) > 1:
                static_skew.append({"name": name, "values": groups, "majority_value": groups[0]["value"]})
    divergent.sort(key=lambda d: (d["entity_path"], d["name"]))
    overrides = [
        {"broker_id": b, "name": name, "value": value}
        for b in fleet.brokers
        for name, (value, source) in configs[b].items()
        if source == DYNAMIC_BROKER_CONFIG
    ]
    return {"divergent": divergent, "per_broker_overrides": overrides, "static_skew": static_skew}


def _missed_changes(fleet: Fleet) -> list[dict[str, Any]]:
    final = fleet.desired_config()
    default = final.get(BROKER_DEFAULT_PATH, {})
    missed = []
    for b in fleet.brokers:
        own = final.get(f"brokers/{b}", {})
        for name, (value, source) in fleet.broker_config(b).items():
            expected = own.get(name, default.get(name))
            if expected is not None:
                if value != expected:
                    missed.append((b, f"brokers/{b}", name, expected, value))
            elif source in DYNAMIC_BROKER_SOURCES and not is_sensitive(name):
                missed.append((b, f"brokers/{b}", name, None, value))
        # Expected broker keys the broker has no line for at all.
        for name in sorted((set(own) | set(default)) - set(fleet.broker_config(b))):
            missed.append((b, f"brokers/{b}", name, own.get(name, default.get(name)), None))
        for path, name in sorted(k for k in fleet.touched() if not k[0].startswith("brokers/")):
            expected = final.get(path, {}).get(name)
            actual = fleet.view(b, path, name)
            if expected != actual:
                missed.append((b, path, name, expected, actual))
    missed.sort(key=lambda m: (m[0], m[1], m[2]))
    return [
        {"broker_id": b, "entity_path": p, "name": n, "expected_value": e, "actual_value": a}
        for b, p, n, e, a in missed
    ]


def fingerprint(out_dir: str | Path) -> str:
    """A digest of the snapshot files (to check determinism)."""
    h = hashlib.sha256()
    for path in sorted(Path(out_dir).glob("broker-*.jsonl")):
        h.update(path.name.encode())
        h.update(read_bytes(path, "snapshot"))
    return h.hexdigest()
