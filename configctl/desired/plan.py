"""Plans: the exact difference between a desired-state file and ZooKeeper.

:func:`compute_plan` is pure: given the desired state and what is stored (with znode versions)
it says, per entity and per key, what to add, change and delete. Listed entities get exactly
the file's config (keys it does not list are deleted); unlisted entities are left alone unless
``prune`` asks to remove their overrides (only for the entity types the file has a section
for, so a topics-only file can never wipe SCRAM credentials).

A plan also remembers the znode version of every entity it looked at (``seen``): that is what
makes it safe to apply later (:mod:`configctl.desired.apply` re-checks them) and what a plan
saved with ``plan --out`` is checked against (:func:`check_saved_plan`).

Secrets never cause a spurious diff: a SCRAM key given as ``password=...`` is compared with the
stored credential by verifying the password (same iterations), a plain broker password by
decrypting the stored value with the brokers' ``password.encoder.secret``; only when they differ
is a new credential (new salt) or ciphertext produced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from configctl import agreement, catalogue, impact, secrets, writer
from configctl.changes import KeyDiff, diff
from configctl.desired.document import DesiredState, is_scram_spec, secret_keys
from configctl.entities import Entity, EntityType
from configctl.errors import Conflict, InvalidInput, ValidationFailed
from configctl.files import read_json
from configctl.gcpause import collector_paused
from configctl.store import Change, ConfigStore, Stored

PLAN_FORMAT = "configctl-plan/1"
ENTITY_ACTIONS = ("create", "update", "clear", "prune", "replace")
"""A new config node; a changed one; every override removed; removed by ``--prune`` (not in the file);
a node that was not a Kafka config, overwritten whole (``--replace-corrupt``)."""
KEY_ACTIONS = ("add", "change", "delete")
LISTED_SHOWN = 10
"""Entities named in a one-line message before "and N more"."""


@dataclass(frozen=True)
class EntityPlan:
    """One entity's change: from ``current`` (at znode ``version``, -1 if absent) to ``target``."""

    entity: Entity
    version: int
    current: Mapping[str, str]
    target: Mapping[str, str]
    diff: tuple[KeyDiff, ...]
    pruned: bool = False
    corrupt: str | None = None
    """Why the stored node is not a Kafka config (it is replaced whole: ``--replace-corrupt``)."""

    @property
    def action(self) -> str:
        """What happens to the entity as a whole: one of :data:`ENTITY_ACTIONS`."""
        if self.corrupt is not None:
            return "replace"
        if self.version < 0:
            return "create"
        if self.pruned:
            return "prune"
        return "update" if self.target else "clear"

    def change(self) -> Change:
        return Change(self.entity, dict(self.target), self.version, previous=dict(self.current))

    def to_json(self) -> dict[str, Any]:
        """This entity's part of the ``plan --output json`` document (sensitive values masked)."""
        document: dict[str, Any] = {
            "entity_path": self.entity.path,
            "entity_type": self.entity.type.value,
            "entity_name": self.entity.name,
        }
        if self.entity.client is not None:
            document["client_id"] = self.entity.client
        old, new = self.shown_configs()
        document.update(
            {
                "version": self.version if self.version >= 0 else None,
                "pruned": self.pruned,
                "keys": [
                    {"name": d.name, "kind": d.kind, "old": old.get(d.name), "new": new.get(d.name)}
                    for d in self.diff
                ],
            }
        )
        if self.corrupt is not None:
            document["corrupt"] = self.corrupt
        return document

    def shown_configs(self) -> tuple[dict[str, str], dict[str, str]]:
        """``current`` and ``target`` as they may be shown: sensitive values masked."""

        def sensitive(key: str) -> bool:
            return catalogue.is_sensitive(self.entity.schema_type, key)

        return secrets.mask_config(self.current, sensitive), secrets.mask_config(self.target, sensitive)


@dataclass(frozen=True)
class Plan:
    """Every entity that changes, plus the version of every entity that was looked at.

    ``seen`` is what makes a plan safe to apply later: if any of those versions moved (or an
    entity appeared), the state the plan was computed from is gone.
    """

    source: str
    prune: bool
    entities: tuple[EntityPlan, ...]
    seen: Mapping[Entity, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.entities)

    def counts(self) -> dict[str, int]:
        result = dict.fromkeys(KEY_ACTIONS, 0)
        for entity_plan in self.entities:
            for key in entity_plan.diff:
                result[key.kind] += 1
        return result

    def summary(self) -> dict[str, dict[str, dict[str, int]]]:
        """Per entity type with changes (in the usual order): entity actions and key changes, counted.

        What ``--summary`` shows instead of every key: a plan for thousands of entities is
        reviewed by its shape (how many topics are created, how many keys deleted), not read.
        """
        result: dict[str, dict[str, dict[str, int]]] = {}
        for entity_plan in self.entities:  # sorted by type already
            counts = result.setdefault(
                entity_plan.entity.type.value,
                {"entities": dict.fromkeys(ENTITY_ACTIONS, 0), "keys": dict.fromkeys(KEY_ACTIONS, 0)},
            )
            counts["entities"][entity_plan.action] += 1
            for key in entity_plan.diff:
                counts["keys"][key.kind] += 1
        return result

    @property
    def lines(self) -> int:
        """Lines of the full text plan: a header per entity, a line per key, the closing count."""
        return len(self.entities) + self.key_changes + 1

    @property
    def key_changes(self) -> int:
        return sum(len(e.diff) for e in self.entities)

    def changes(self) -> list[Change]:
        return [e.change() for e in self.entities]

    def to_json(self) -> dict[str, Any]:
        """The ``plan --output json`` document (sensitive values masked)."""
        counts = self.counts()
        return {
            "file": self.source,
            "prune": self.prune,
            "changes": self.key_changes,
            "add": counts["add"],
            "change": counts["change"],
            "delete": counts["delete"],
            "entities_changed": len(self.entities),
            "entities_examined": len(self.seen),
            "summary": self.summary(),
            "entities": [e.to_json() for e in self.entities],
        }

    def saved(self, file_digest: str) -> dict[str, Any]:
        """What ``plan --out`` writes: the JSON document plus what ``apply --plan`` checks."""
        document = self.to_json()
        document["format"] = PLAN_FORMAT
        document["file_sha256"] = file_digest
        document["seen"] = {e.path: v for e, v in sorted(self.seen.items(), key=lambda i: i[0].path)}
        return document


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- computing ----------------------------------------------------------------------------------


_QUOTA_TYPES = (EntityType.USERS, EntityType.CLIENTS, EntityType.IPS)


def _moved(entity: Entity, current: Mapping[str, str], target: Mapping[str, str]) -> list[KeyDiff]:
    """The keys to change: a quota asked as Kafka already holds it is none (``50`` and ``50.0`` are
    one double: ZooKeeper keeps what was written, KRaft reports the number), or a file exported
    from ZooKeeper would never stop planning a change on KRaft."""
    changes = diff(current, target)
    if entity.type not in _QUOTA_TYPES:
        return changes
    return [
        d for d in changes if secrets.is_scram_mechanism(d.name) or not agreement.same_quota(d.old, d.new)
    ]


def compute_plan(
    desired: DesiredState,
    stored: Iterable[Stored],
    *,
    prune: bool = False,
    encoder: secrets.PasswordEncoder | None = None,
    replace_corrupt: bool = False,
) -> Plan:
    """The changes that make ZooKeeper match ``desired``.

    ``stored`` must hold every listed entity (absent ones with version -1) and, with ``prune``,
    every existing entity of the types the file has a section for. ``encoder`` is needed only
    when the file gives a broker password config in plain text. A node that is not a Kafka config
    (``Stored.problem``) is refused unless ``replace_corrupt`` says to overwrite it whole.
    """
    by_entity = {s.entity: s for s in stored}
    corrupt = [
        s for s in by_entity.values() if s.problem is not None and (s.entity in desired.configs or prune)
    ]
    if corrupt and not replace_corrupt:
        shown = ", ".join(f"{s.entity.label} ({s.problem})" for s in corrupt[:3])
        more = f" and {len(corrupt) - 3} more" if len(corrupt) > 3 else ""
        raise InvalidInput(
            f"{len(corrupt)} node(s) are not Kafka config nodes: {shown}{more}; "
            "--replace-corrupt overwrites them with what the file says"
        )
    plans: list[EntityPlan] = []
    seen: dict[Entity, int] = {}
    problems: list[str] = []
    for entity, wanted in desired.configs.items():
        current = by_entity.get(entity) or Stored(entity, {}, -1)
        seen[entity] = current.version
        try:
            target = resolve_secrets(entity, wanted, current.config, encoder=encoder)
        except InvalidInput as exc:
            problems.append(f"{desired.source}: {entity.label}: {exc.message}")
            continue
        if desired.secrets_omitted:
            for key, value in secret_keys(entity, current.config).items():
                target.setdefault(key, value)
        changes = _moved(entity, current.config, target)
        if changes or current.problem is not None:
            plans.append(
                EntityPlan(
                    entity,
                    current.version,
                    dict(current.config),
                    target,
                    tuple(changes),
                    corrupt=current.problem,
                )
            )
    if problems:
        raise ValidationFailed(problems)  # counted, and listed within one readable line
    if prune:
        for item in by_entity.values():
            if item.entity in desired.configs or item.entity.type not in desired.types:
                continue
            seen[item.entity] = item.version
            target = secret_keys(item.entity, item.config) if desired.secrets_omitted else {}
            changes = _moved(item.entity, item.config, target)
            if changes or item.problem is not None:
                plans.append(
                    EntityPlan(
                        item.entity,
                        item.version,
                        dict(item.config),
                        target,
                        tuple(changes),
                        pruned=True,
                        corrupt=item.problem,
                    )
                )
    plans.sort(key=lambda p: p.entity.sort_key())
    return Plan(desired.source, prune, tuple(plans), seen)


def resolve_secrets(
    entity: Entity,
    wanted: Mapping[str, str],
    current: Mapping[str, str],
    *,
    encoder: secrets.PasswordEncoder | None = None,
) -> dict[str, str]:
    """``wanted`` with plain secrets in stored form: the stored value itself when it already matches."""
    result = dict(wanted)
    for key, value in wanted.items():
        if is_scram_spec(entity, key, value):
            result[key] = _scram(key, value, current.get(key))
        elif (
            entity.type is EntityType.BROKERS
            and catalogue.is_sensitive(EntityType.BROKERS, key)
            and not looks_encrypted(value)
        ):
            result[key] = _broker_password(key, value, current.get(key), encoder)
    return result


def _scram(key: str, spec: str, stored: str | None) -> str:
    password, iterations = secrets.parse_scram_spec(key, spec)
    if stored is not None:
        try:
            same = secrets.parse_scram_credential(
                stored
            ).iterations == iterations and secrets.verify_scram_password(key, stored, password)
        except InvalidInput:  # a malformed stored credential is replaced
            same = False
        if same:
            return stored
    return secrets.scram_credential(key, password, iterations)


def _broker_password(
    key: str, plain: str, stored: str | None, encoder: secrets.PasswordEncoder | None
) -> str:
    if encoder is None:
        raise InvalidInput(
            f"{key} is given in plain text: pass the brokers' password.encoder.secret "
            "(--password-encoder-secret or CONFIGCTL_PASSWORD_ENCODER_SECRET) so it can be compared "
            "and stored encrypted, or write the stored (encrypted) value that export shows"
        )
    if stored is not None and looks_encrypted(stored) and encoder.decode(stored, name=key) == plain:
        return stored
    return encoder.encode(plain)


def looks_encrypted(value: str) -> bool:
    """Is this a value in Kafka's ``EncryptingPasswordEncoder`` form (rather than a plain password)?"""
    return "encryptedPassword:" in value and "cipherAlgorithm:" in value


def read_for_plan(store: ConfigStore, desired: DesiredState, *, prune: bool) -> list[Stored]:
    """Read everything :func:`compute_plan` needs, pipelined."""
    wanted: dict[Entity, None] = dict.fromkeys(desired.configs)
    if prune:
        for etype in desired.types:
            wanted.update(dict.fromkeys(store.entities(etype)))
    return store.read_many(wanted, strict=False)


@collector_paused()  # what it reads, plans and commits stays alive: collections find nothing
def make_plan(
    store: ConfigStore,
    desired: DesiredState,
    *,
    prune: bool = False,
    encoder: secrets.PasswordEncoder | None = None,
    allow_running_brokers: bool = False,
    reason: str = "",
    replace_corrupt: bool = False,
) -> Plan:
    """The plan from ZooKeeper's state to ``desired``, refused when Kafka's admin path would refuse
    it, a cross-key rule breaks, or a policy says no (the checks every write path makes)."""
    plan = compute_plan(
        desired,
        read_for_plan(store, desired, prune=prune),
        prune=prune,
        encoder=encoder,
        replace_corrupt=replace_corrupt,
    )
    if plan.entities:
        entities = [e.entity for e in plan.entities]
        # The keys each entity sets, judged by the release the cluster runs (the file was
        # validated before any store was asked which): on Kafka 4, a key it removed is refused.
        written = {e.entity: {d.name: d.new for d in e.diff if d.new is not None} for e in plan.entities}
        writer.check_kafka_rules(
            store, entities, allow_running_brokers=allow_running_brokers, written=written
        )
        writes = [impact.Write(e.entity, e.current, e.target) for e in plan.entities]
        impact.check_write(store, writes, reason=reason, identity=store.identity)
    return plan


# -- saved plans --------------------------------------------------------------------------------


def listed(labels: Sequence[str], limit: int = LISTED_SHOWN) -> str:
    """The first ``limit`` labels and how many more: names in one short line, however many there are."""
    shown = ", ".join(labels[:limit])
    more = len(labels) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def read_saved_plan(path: str) -> dict[str, Any]:
    """The JSON document ``plan --out`` saved at ``path`` (a bounded read; checked by :func:`check_saved_plan`)."""
    document = read_json(path, "saved plan")
    if not isinstance(document, dict):
        raise InvalidInput(f"{path} is not a plan saved by configctl plan --out")
    return document


def check_saved_plan(plan: Plan, saved: Mapping[str, Any], *, file_digest: str, source: str) -> None:
    """Refuse to apply if the file or the stored state differ from when ``plan --out`` saved ``saved``."""
    if saved.get("format") != PLAN_FORMAT or not isinstance(saved.get("seen"), Mapping):
        raise InvalidInput(f"{source} is not a plan saved by configctl plan --out")
    if saved.get("file_sha256") != file_digest:
        raise InvalidInput(
            f"the desired-state file changed since the plan in {source} was saved; re-run plan"
        )
    if bool(saved.get("prune")) != plan.prune:
        raise InvalidInput(
            f"the plan in {source} was made {'with' if saved.get('prune') else 'without'} --prune; "
            "apply it the same way"
        )
    now = {e.path: v for e, v in plan.seen.items()}
    moved = sorted(path for path in set(now) | set(saved["seen"]) if now.get(path) != saved["seen"].get(path))
    if moved:
        raise Conflict(f"the state moved since the plan in {source} was made: {listed(moved)}; re-run plan")
