"""Plans: the exact difference between a desired-state file and ZooKeeper, and applying it safely.

:func:`compute_plan` is pure: given the desired state and what is stored (with znode versions)
it says, per entity and per key, what to add, change and delete. Listed entities get exactly
the file's config (keys it does not list are deleted); unlisted entities are left alone unless
``prune`` asks to remove their overrides (only for the entity types the file has a section
for, so a topics-only file can never wipe SCRAM credentials).

:func:`apply_plan` writes a plan through :meth:`ZkStore.commit_batches`: each entity's config
node, notification and history record go in one multi with the version seen when planning.
Before the first batch it re-reads the version of every entity the plan looked at, so a change
made since the plan was shown stops the apply before anything is written. Only a write landing
in the milliseconds between that check and a later batch can stop an apply half way; the error
then says exactly which entities were applied, and since applying is idempotent, running
``plan`` again shows what is left.

Secrets never cause a spurious diff: a SCRAM key given as ``password=...`` is compared with the
stored credential by verifying the password (same iterations), a plain broker password by
decrypting the stored value with the brokers' ``password.encoder.secret``; only when they differ
is a new credential (new salt) or ciphertext produced.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from configctl import catalogue, secrets
from configctl.changes import KeyDiff, diff
from configctl.desired import DesiredState, is_scram_spec, label, sort_key
from configctl.entities import Entity, EntityType
from configctl.errors import Conflict, InvalidInput
from configctl.secrets import MASK
from configctl.zkstore import Change, Committed, Stored, VersionConflict, ZkStore

PLAN_FORMAT = "configctl-plan/1"
_LISTED_SHOWN = 10


@dataclass(frozen=True)
class EntityPlan:
    """One entity's change: from ``current`` (at znode ``version``, -1 if absent) to ``target``."""

    entity: Entity
    version: int
    current: Mapping[str, str]
    target: Mapping[str, str]
    diff: tuple[KeyDiff, ...]
    pruned: bool = False

    def change(self) -> Change:
        return Change(self.entity, dict(self.target), self.version, previous=dict(self.current))

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "entity_path": self.entity.path,
            "entity_type": self.entity.type.value,
            "entity_name": self.entity.name,
        }
        if self.entity.client is not None:
            document["client_id"] = self.entity.client
        document.update(
            {
                "version": self.version if self.version >= 0 else None,
                "pruned": self.pruned,
                "keys": [
                    {
                        "name": d.name,
                        "kind": d.kind,
                        "old": _shown(self.entity, d.name, d.old),
                        "new": _shown(self.entity, d.name, d.new),
                    }
                    for d in self.diff
                ],
            }
        )
        return document


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
        result = {"add": 0, "change": 0, "delete": 0}
        for entity_plan in self.entities:
            for key in entity_plan.diff:
                result[key.kind] += 1
        return result

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
            "entities": [e.to_json() for e in self.entities],
        }

    def saved(self, file_digest: str) -> dict[str, Any]:
        """What ``plan --out`` writes: the JSON document plus what ``apply --plan`` checks."""
        document = self.to_json()
        document["format"] = PLAN_FORMAT
        document["file_sha256"] = file_digest
        document["seen"] = {e.path: v for e, v in sorted(self.seen.items(), key=lambda i: i[0].path)}
        return document


def _shown(entity: Entity, name: str, value: str | None) -> str | None:
    if value is not None and catalogue.is_sensitive(entity.schema_type, name):
        return MASK
    return value


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- computing ----------------------------------------------------------------------------------


def compute_plan(
    desired: DesiredState,
    stored: Iterable[Stored],
    *,
    prune: bool = False,
    encoder: secrets.PasswordEncoder | None = None,
) -> Plan:
    """The changes that make ZooKeeper match ``desired``.

    ``stored`` must hold every listed entity (absent ones with version -1) and, with ``prune``,
    every existing entity of the types the file has a section for. ``encoder`` is needed only
    when the file gives a broker password config in plain text.
    """
    by_entity = {s.entity: s for s in stored}
    plans: list[EntityPlan] = []
    seen: dict[Entity, int] = {}
    problems: list[str] = []
    for entity, wanted in desired.configs.items():
        current = by_entity.get(entity) or Stored(entity, {}, -1)
        seen[entity] = current.version
        try:
            target = resolve_secrets(entity, wanted, current.config, encoder=encoder)
        except InvalidInput as exc:
            problems.append(f"{desired.source}: {label(entity)}: {exc.message}")
            continue
        changes = diff(current.config, target)
        if changes:
            plans.append(EntityPlan(entity, current.version, dict(current.config), target, tuple(changes)))
    if problems:
        raise InvalidInput("; ".join(problems))
    if prune:
        for item in by_entity.values():
            if item.entity in desired.configs or item.entity.type not in desired.types:
                continue
            seen[item.entity] = item.version
            if item.config:
                changes = diff(item.config, {})
                plans.append(
                    EntityPlan(item.entity, item.version, dict(item.config), {}, tuple(changes), pruned=True)
                )
    plans.sort(key=lambda p: sort_key(p.entity))
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


def read_for_plan(store: ZkStore, desired: DesiredState, *, prune: bool) -> list[Stored]:
    """Read everything :func:`compute_plan` needs, pipelined."""
    wanted: dict[Entity, None] = dict.fromkeys(desired.configs)
    if prune:
        for etype in desired.types:
            wanted.update(dict.fromkeys(store.entities(etype)))
    return store.read_many(wanted)


def make_plan(
    store: ZkStore,
    desired: DesiredState,
    *,
    prune: bool = False,
    encoder: secrets.PasswordEncoder | None = None,
) -> Plan:
    return compute_plan(desired, read_for_plan(store, desired, prune=prune), prune=prune, encoder=encoder)


# -- staleness ----------------------------------------------------------------------------------


def _listed(entities: Sequence[Entity]) -> str:
    shown = ", ".join(label(e) for e in entities[:_LISTED_SHOWN])
    more = len(entities) - _LISTED_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def moved_since(store: ZkStore, seen: Mapping[Entity, int]) -> list[Entity]:
    """Entities whose znode version is no longer what the plan saw (pipelined reads)."""
    now = store.read_many(seen)
    return [item.entity for item in now if item.version != seen[item.entity]]


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
        shown = ", ".join(moved[:_LISTED_SHOWN]) + (
            f" and {len(moved) - _LISTED_SHOWN} more" if len(moved) > _LISTED_SHOWN else ""
        )
        raise Conflict(f"the state moved since the plan in {source} was made: {shown}; re-run plan")


# -- applying -----------------------------------------------------------------------------------


def _phases(changes: list[Change]) -> list[list[Change]]:
    """Users created by this plan go before their clients' configs, in earlier multis.

    A user+client node lives under its user's node; writing the client's config creates the
    user node (empty) first, which would make the user's own version-checked create fail if
    both were in one multi.
    """
    created_users = {
        c.entity.name for c in changes if c.entity.type is EntityType.USERS and c.entity.client is None
    }
    created_users &= {c.entity.name for c in changes if c.expected_version < 0 and c.entity.client is None}
    later = [c for c in changes if c.entity.client is not None and c.entity.name in created_users]
    if not later:
        return [changes]
    first = [c for c in changes if not (c.entity.client is not None and c.entity.name in created_users)]
    return [first, later]


class StalePlan(Conflict):
    """The state moved since the plan; says what was written before that was noticed."""

    def __init__(self, message: str, applied: list[Entity], not_applied: list[Entity]) -> None:
        super().__init__(message)
        self.applied = applied
        self.not_applied = not_applied


@dataclass(frozen=True)
class ApplyResult:
    committed: tuple[Committed, ...]
    batches: int
    seconds: float

    @property
    def entities(self) -> int:
        return len(self.committed)


def apply_plan(
    store: ZkStore,
    plan: Plan,
    *,
    reason: str = "",
    check_first: bool = True,
    on_batch: Callable[[list[Committed]], None] | None = None,
) -> ApplyResult:
    """Write ``plan`` in batched multis, each entity version-checked against the plan.

    Raises :class:`StalePlan` (a :class:`Conflict`) if the state moved since the plan: before
    anything is written when the pre-check sees it, else after the batches already committed,
    naming what was and was not applied.
    """
    started = time.perf_counter()
    if check_first and plan.seen:
        moved = moved_since(store, plan.seen)
        if moved:
            raise StalePlan(
                f"the state moved since the plan: {_listed(moved)} changed; nothing was written; re-run plan",
                [],
                [e.entity for e in plan.entities],
            )
    changes = plan.changes()
    committed: list[Committed] = []
    batches = 0
    try:
        for phase in _phases(changes):
            for batch in store.commit_batches(phase, reason=reason):
                committed.extend(batch)
                batches += 1
                if on_batch is not None:
                    on_batch(batch)
    except VersionConflict:
        done = {c.entity for c in committed}
        applied = [c.entity for c in committed]
        not_applied = [c.entity for c in changes if c.entity not in done]
        moved = moved_since(store, {c.entity: c.expected_version for c in changes if c.entity not in done})
        what = _listed(moved) if moved else "an entity of the next batch"
        if applied:
            message = (
                f"the state moved since the plan: {what} changed; applied {len(applied)} of "
                f"{len(changes)} entities ({_listed(applied)}), not applied {len(not_applied)} "
                f"({_listed(not_applied)}); re-run plan to see what is left"
            )
        else:
            message = f"the state moved since the plan: {what} changed; nothing was written; re-run plan"
        raise StalePlan(message, applied, not_applied) from None
    return ApplyResult(tuple(committed), batches, time.perf_counter() - started)
