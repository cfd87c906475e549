"""What to fix before a cluster's configs meet Kafka 4: ``configctl migration lint``, ``plan --to-kafka``.

Kafka 4 keeps every stored config it is given, also one it no longer understands, and judges a
stored value only when something writes the entity again; so a cluster that upgrades with keys
Kafka 4 removed, or values it now refuses, finds out later, at a write that fails. Each finding
here is one stored key (or entity) with what Kafka 4 does with it and what to do:

- ``removed``: a key Kafka 4 no longer defines (``message.format.version`` ...), named with its
  replacement when it has one; delete it before the upgrade;
- ``refused-value``: a value Kafka 4's validator refuses where 3.9's took it (``segment.bytes``
  below 1 MiB, KIP-1030), the key's range read from Kafka 4.4's own definitions;
- ``broker-min-isr``: ``min.insync.replicas`` on one broker (``brokers/<id>``), which Kafka 4.1's
  eligible leader replicas (KIP-966) refuse: it is a cluster-wide or per-topic setting there;
- ``unregistered-broker``: a per-broker config of a broker that does not run, which KRaft keeps
  and no broker applies;
- ``clear-password``: a password ZooKeeper holds encrypted, which the migration decrypts into the
  KRaft metadata log, where it is kept in clear text.

Pure: the rules of Kafka 4 are :mod:`configctl.catalogue`'s facts and
:mod:`configctl.validation`'s checks, called here, not restated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from configctl import catalogue, validation
from configctl.entities import Entity, EntityType

TARGETS = catalogue.KAFKA4_RELEASES
"""The Kafka 4 releases a lint can aim at (their removed keys and ranges are 4.4's, read from its
jars: Kafka 4.1-4.4 removed no dynamic key 4.0 kept)."""
ELR_FROM = "4.1"
"""Eligible leader replicas (KIP-966) are on by default from Kafka 4.1."""

RENAMED = {
    "message.timestamp.difference.max.ms": "message.timestamp.before.max.ms and message.timestamp.after.max.ms",
    "log.message.timestamp.difference.max.ms": (
        "log.message.timestamp.before.max.ms and log.message.timestamp.after.max.ms"
    ),
}
"""Removed keys whose meaning lives on under other names (KIP-937)."""


@dataclass(frozen=True)
class Finding:
    """One stored key (``key`` None: the whole entity) and what to do about it before the upgrade."""

    kind: str
    entity: Entity
    key: str | None
    problem: str
    action: str

    @property
    def line(self) -> str:
        where = self.entity.display if self.key is None else f"{self.entity.display}: {self.key}"
        return f"{where}: {self.problem}; {self.action}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "entity": self.entity.path,
            "key": self.key,
            "problem": self.problem,
            "action": self.action,
            "line": self.line,
        }


def _release_at_least(release: str, floor: str) -> bool:
    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split(".") if p.isdigit())

    return parts(release) >= parts(floor)


def lint(
    configs: Iterable[tuple[Entity, dict[str, str]]],
    *,
    target: str = TARGETS[-1],
    running_brokers: set[int] | None = None,
    encrypted_passwords: bool = False,
) -> list[Finding]:
    """Every finding for ``configs`` (entity, stored config) against Kafka ``target``.

    ``running_brokers``: the brokers that run now (None: not known, no ``unregistered-broker``
    finding); ``encrypted_passwords``: the configs were read from ZooKeeper, where Kafka keeps a
    broker password encrypted (``clear-password`` findings).
    """
    found: list[Finding] = []
    for entity, config in configs:
        if entity.type not in (EntityType.TOPICS, EntityType.BROKERS):
            continue
        per_broker = entity.type is EntityType.BROKERS and not entity.is_default
        if per_broker and running_brokers is not None and config and int(entity.name) not in running_brokers:
            found.append(
                Finding(
                    "unregistered-broker",
                    entity,
                    None,
                    f"broker {entity.name} does not run, so no broker applies this config and KRaft keeps it as it is",
                    f"delete it (configctl alter --broker {entity.name} --delete-config ...) unless broker "
                    f"{entity.name} comes back",
                )
            )
        for key, value in sorted(config.items()):
            found.extend(_key_findings(entity, key, value, target, per_broker, encrypted_passwords))
    return found


def _key_findings(
    entity: Entity, key: str, value: str, target: str, per_broker: bool, encrypted_passwords: bool
) -> Iterable[Finding]:
    etype = entity.schema_type
    delete = f"delete it before the upgrade ({_delete_command(entity, key)})"
    if key in catalogue.removed_in_kafka4(etype):
        instead = RENAMED.get(key)
        yield Finding(
            "removed",
            entity,
            key,
            "Kafka 4 no longer defines it (removed in 4.0); a Kafka 4 cluster keeps it stored, unused",
            f"{delete}, and set {instead} instead" if instead else delete,
        )
        return
    refusal = validation.kafka4_range_refusal(entity, key, value)
    if refusal is not None:
        yield Finding(
            "refused-value",
            entity,
            key,
            refusal.partition(": ")[2]
            + "; Kafka 4 refuses the next write of this entity until it is changed",
            "set a value within the range before the upgrade",
        )
    if per_broker and key == "min.insync.replicas" and _release_at_least(target, ELR_FROM):
        yield Finding(
            "broker-min-isr",
            entity,
            key,
            f"Kafka {ELR_FROM} and later, with eligible leader replicas (KIP-966), refuse min.insync.replicas "
            "on one broker",
            "set it at the broker default (--broker-defaults) or on the topics, and delete it here",
        )
    if encrypted_passwords and entity.type is EntityType.BROKERS and catalogue.is_sensitive(etype, key):
        yield Finding(
            "clear-password",
            entity,
            key,
            "ZooKeeper holds it encrypted (password.encoder.secret); the migration decrypts it into the KRaft "
            "metadata log, which keeps it in clear text",
            "restrict access to the metadata log directories of every controller and broker, or move it to "
            "server.properties or a config provider",
        )


def _delete_command(entity: Entity, key: str) -> str:
    if entity.type is EntityType.TOPICS:
        target = f"--topic {entity.name}"
    elif entity.is_default:
        target = "--broker-defaults"
    else:
        target = f"--broker {entity.name}"
    return f"configctl alter {target} --delete-config {key}"


__all__ = ["ELR_FROM", "RENAMED", "TARGETS", "Finding", "lint"]
