"""``configctl migration check``: does the KRaft side hold exactly what ZooKeeper's ``/config`` holds?

Kafka's migration copies every config of ZooKeeper's ``/config`` into the KRaft metadata log
(``ConfigRecord``, ``ClientQuotaRecord``, ``UserScramCredentialRecord``) and, in dual-write,
every KRaft change back. Nothing of Kafka's says whether the two agree; an operator about to
finalize (after which ZooKeeper is never written again) needs exactly that. This compares the two
stores' reads family by family, with the comparison rules the rest of configctl uses
(:mod:`configctl.agreement`, the one home of "do these two agree"):

- topics, brokers and the broker ``<default>``: each key's value; a secret (a password Kafka
  encrypts in ZooKeeper and never reports) only by whether it is set, never printed;
- users, clients, user/client pairs and IPs, with their ``<default>`` entities: each quota as a
  number (``1e3`` is ``1000``);
- SCRAM credentials: each mechanism and its iteration count (Kafka reports nothing more).

A per-broker config of a broker that does not run now cannot be asked of any broker (Kafka
answers DescribeConfigs only for a registered broker): it is listed as not checked, never as
equal. So is a whole family the KRaft side cannot report yet (``unread``: while a broker still
runs ZooKeeper mode, only the controllers can say what the KRaft side holds, and they report
topics and the broker default only; :mod:`configctl.kraft.migratingside`). Written against the store roles: ZooKeeper's store and the KRaft store are both
:class:`~configctl.store.ConfigReads`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from configctl import agreement, catalogue, secrets
from configctl.entities import Entity, EntityType
from configctl.store import Stored

FAMILIES = ("topics", "brokers", "default", "quotas", "scram")
"""The families a check reports, each counted on its own."""

_SET = "set (secret, not shown)"


@dataclass(frozen=True)
class Difference:
    """One key (or one whole entity) the two sides hold otherwise."""

    family: str
    entity: Entity
    key: str
    zookeeper: str | None
    kraft: str | None

    @property
    def line(self) -> str:
        return (
            f"{self.entity.display}: {self.key}: ZooKeeper holds {_shown(self.zookeeper)}, "
            f"the KRaft side {_shown(self.kraft)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "entity": self.entity.path,
            "key": self.key,
            "zookeeper": self.zookeeper,
            "kraft": self.kraft,
            "line": self.line,
        }


@dataclass
class Proof:
    """The outcome: the entities compared per family, every difference, what was not checked."""

    compared: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAMILIES, 0))
    differences: list[Difference] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        """``configctl migration check -o json`` (docs/reference/json-output.md)."""
        per_family = {
            family: {
                "entities": self.compared[family],
                "differences": sum(1 for d in self.differences if d.family == family),
            }
            for family in FAMILIES
        }
        return {
            "equal": self.equal,
            "families": per_family,
            "differences": [d.to_json() for d in self.differences],
            "unchecked": list(self.unchecked),
        }


def _shown(value: str | None) -> str:
    return "nothing" if value is None else repr(value) if value != _SET else value


def family_of(entity: Entity) -> str:
    if entity.type is EntityType.TOPICS:
        return "topics"
    if entity.type is EntityType.BROKERS:
        return "default" if entity.is_default else "brokers"
    return "quotas"


def compared_types() -> tuple[EntityType, ...]:
    """What ZooKeeper can hold: not Kafka 4's families, not a broker's loggers (in its memory)."""
    return tuple(t for t in EntityType if not t.kraft_only and not t.in_broker_memory)


def prove(
    zookeeper: Iterable[Stored],
    kraft: Iterable[Stored],
    running_brokers: set[int] | None,
    own_topics: Collection[str] = (),
    unread: Mapping[str, str] | None = None,
) -> Proof:
    """Compare ZooKeeper's configs with the KRaft side's (``running_brokers``: the brokers the
    KRaft side lists, the only ones it can report a per-broker config for). configctl's own topics
    (``own_topics``: created in the cluster during the migration, so dual-written to ZooKeeper,
    and never listed by the KRaft store) are not the operator's configs and are left out.
    ``unread``: family → why the KRaft side cannot report it now; what ZooKeeper holds of such a
    family is counted as not checked, one line per family."""
    types = compared_types()
    skipped = dict(unread or {})
    not_read: dict[str, int] = {}

    def kept(stored: Stored) -> bool:
        entity = stored.entity
        return entity.type in types and not (entity.type is EntityType.TOPICS and entity.name in own_topics)

    ours = {s.entity: s for s in zookeeper if kept(s) and (s.exists or s.problem)}
    theirs = {s.entity: s for s in kraft if kept(s) and s.exists}
    proof = Proof()
    for entity in sorted(set(ours) | set(theirs)):
        zk = ours.get(entity)
        if zk is not None and zk.problem is not None:
            proof.differences.append(
                Difference(family_of(entity), entity, "(node)", f"an unreadable node: {zk.problem}", None)
            )
            continue
        if (
            entity.type is EntityType.BROKERS
            and not entity.is_default
            and entity not in theirs
            and running_brokers is not None
            and int(entity.name) not in running_brokers
        ):
            proof.unchecked.append(
                f"{entity.display}: broker {entity.name} does not run, so no broker reports its config "
                "(Kafka answers DescribeConfigs only for a registered broker)"
            )
            continue
        left = dict(zk.config) if zk is not None else {}
        right = dict(theirs[entity].config) if entity in theirs else {}
        for family in _families(entity, left):
            if family in skipped:
                not_read[family] = not_read.get(family, 0) + 1
        _compare(proof, entity, left, right, skipped)
    for family in FAMILIES:
        if family in skipped:
            count = not_read.get(family, 0)
            proof.unchecked.append(
                f"{family}: {count} entit{'y' if count == 1 else 'ies'} ZooKeeper holds: {skipped[family]}"
            )
    return proof


def _families(entity: Entity, config: Mapping[str, str]) -> list[str]:
    """The families ``entity``'s stored keys belong to (a user may hold quotas and SCRAM both)."""
    if entity.type in (EntityType.TOPICS, EntityType.BROKERS):
        return [family_of(entity)]
    found = []
    if any(not secrets.is_scram_mechanism(k) for k in config):
        found.append("quotas")
    if any(secrets.is_scram_mechanism(k) for k in config):
        found.append("scram")
    return found


def _compare(
    proof: Proof, entity: Entity, zk: Mapping[str, str], kraft: Mapping[str, str], skipped: Mapping[str, str]
) -> None:
    family = family_of(entity)
    if entity.type in (EntityType.TOPICS, EntityType.BROKERS):
        if family in skipped:
            return
        proof.compared[family] += 1
        for key in sorted(set(zk) | set(kraft)):
            ours, theirs = zk.get(key), kraft.get(key)
            if catalogue.is_sensitive(entity.type, key):
                ours = None if ours is None else _SET
                theirs = None if theirs is None else _SET
            if ours != theirs:
                proof.differences.append(Difference(family, entity, key, ours, theirs))
        return
    quota_keys = {k for k in set(zk) | set(kraft) if not secrets.is_scram_mechanism(k)}
    if quota_keys and "quotas" not in skipped:
        proof.compared["quotas"] += 1
        for mismatch in agreement.quotas(entity.path, zk, kraft):
            proof.differences.append(
                Difference("quotas", entity, mismatch.key, mismatch.expected, mismatch.reported)
            )
    if "scram" not in skipped and any(secrets.is_scram_mechanism(k) for k in set(zk) | set(kraft)):
        proof.compared["scram"] += 1
        reported = {k: secrets.iterations_of(v) for k, v in kraft.items() if secrets.is_scram_mechanism(k)}
        for mismatch in agreement.scram(entity.path, zk, reported):
            proof.differences.append(
                Difference("scram", entity, mismatch.key, mismatch.expected, mismatch.reported)
            )


__all__ = ["FAMILIES", "Difference", "Proof", "compared_types", "family_of", "prove"]
