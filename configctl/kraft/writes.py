"""Writes to a KRaft cluster: every family through the Admin API, each checked, read back and recorded.

The requests each change becomes are :mod:`configctl.adminapi.families`' (the one home of which
request carries which family, shared with the ZooKeeper-mode cluster's brokers). What differs on
KRaft is what surrounds them:

- there is no ZooKeeper path: every change goes through the brokers, whatever runs;
- there is no compare-and-set: the entity is read just before its request and refused
  (:class:`~configctl.store.VersionConflict`, nothing sent) if it moved since the caller read it,
  and read back after: a config other than the one asked means another writer's request landed
  between the two, which is recorded in history as found and reported
  (:class:`~configctl.errors.Conflict`), never lost silently;
- there are no change notifications: a commit's change number is None.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Sequence

from configctl import agreement, catalogue, secrets
from configctl.adminapi import families
from configctl.adminapi.client import refuse_unsendable
from configctl.entities import Entity, EntityType
from configctl.errors import ConfigctlError, Conflict, KafkaAnswerLost, unrecorded
from configctl.handlers import brokerlogger
from configctl.kraft.store import KRaftStore
from configctl.retrying import Backoff
from configctl.store import (
    Capabilities,
    Change,
    CommitInterrupted,
    Committed,
    NodeOp,
    Stored,
    VersionConflict,
    version_after,
)

SETTLE = 5.0
"""How long a write's read-back waits for the brokers to report what the controller committed."""


class KRaftWrites:
    """The writes role (:class:`configctl.store.ConfigWrites`) of a :class:`KRaftStore`."""

    def __init__(self, store: KRaftStore) -> None:
        self.store = store
        self._unanswered: dict[Entity, tuple[Stored, str]] = {}

    @property
    def capabilities(self) -> Capabilities:
        return self.store.capabilities

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]:
        if extra:
            raise ValueError("a KRaft cluster writes no nodes beside configs (capabilities.extra_nodes)")
        committed: list[Committed] = []
        for batch in self.commit_batches(changes, reason=reason):
            committed.extend(batch)
        return committed

    def commit_batches(
        self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2
    ) -> Generator[list[Committed], None, None]:
        """One change at a time (each its own requests), so a failure leaves an exact account."""
        for change in changes:
            _refuse_unsendable(change)
        done: list[Committed] = []
        for index, change in enumerate(changes):
            try:
                committed = self._write(change, reason)
            except KafkaAnswerLost as lost:
                raise CommitInterrupted(
                    done, [change], list(changes[index + 1 :]), lost.message, lost
                ) from None
            done.append(committed)
            yield [committed]

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        """Whether each unanswered write is what the cluster holds now (recorded in history if so)."""
        landed, missed = [], []
        for change in changes:
            before, reason = self._unanswered.pop(change.entity, (None, ""))
            after = self.store.read(change.entity, strict=False)
            if before is not None and _holds(after, change):
                self._record(change, before, after, reason)
                landed.append(change)
            else:
                missed.append(change)
        return landed, missed

    def validate(self, changes: Sequence[Change]) -> None:
        """Ask the brokers (and through them the controllers) to judge each change, writing nothing."""
        via = self._via()
        for change in changes:
            _refuse_unsendable(change)
            current = self.store.read(change.entity, strict=False)
            requests = families.requests_of(change, current)
            families.send(self.store.admin, change, requests, via, validate_only=True)

    def _via(self) -> int | None:
        running = self.store.running_brokers()
        return min(running) if running else None

    def _write(self, change: Change, reason: str) -> Committed:
        entity = change.entity
        current = self.store.read(entity, strict=False)
        if current.version != change.expected_version:
            raise VersionConflict(f"{entity.path} moved from version {change.expected_version}")
        requests = families.requests_of(change, current)
        try:
            families.send(self.store.admin, change, requests, self._via())
        except KafkaAnswerLost:
            self._unanswered[entity] = (current, reason)
            raise
        after = self._read_back(change)
        version = self._record(change, current, after, reason)
        if not _holds(after, change):
            raise Conflict(
                f"{entity.display}: written, but the cluster now holds {_shown(after)} instead: another "
                f"writer's change landed at the same time (both are in history, version {version}); "
                "read it and write again if yours must win"
            )
        return Committed(entity, version, None)

    def _read_back(self, change: Change) -> Stored:
        """The entity as the brokers report it once they hold ``change``, or after
        :data:`SETTLE` seconds: the controller answers once the change is committed, and the
        brokers replay it from the metadata log a moment later."""
        backoff = Backoff(start=0.02, maximum=0.5)
        deadline = time.monotonic() + SETTLE
        while True:
            after = self.store.read(change.entity, strict=False)
            if _holds(after, change) or time.monotonic() >= deadline:
                return after
            time.sleep(backoff.next_delay())

    def _record(self, change: Change, before: Stored, after: Stored, reason: str) -> int:
        """Record the write the cluster now holds; a record that cannot be written is said as
        such (exit 8): the config is in the cluster, only its history record is missing."""
        version = version_after(before.version)
        recorded = Change(change.entity, after.config, before.version, previous=before.config)
        try:
            self.store.record_history(recorded, version, reason=reason)
        except ConfigctlError as exc:
            raise unrecorded(change.entity.display, change.entity.path, exc) from None
        self.store.note_written(Stored(change.entity, after.config, version))
        return version


def _holds(after: Stored, change: Change) -> bool:
    """Whether the cluster holds what ``change`` asked: the same keys, each value as asked (a
    quota as a number, :func:`configctl.agreement.quotas`; a secret or a SCRAM credential only
    as set, since the cluster never hands it back)."""
    entity = change.entity
    if entity.type.in_broker_memory:  # every logger the broker has moves with what it inherits
        return brokerlogger.levels_taken(change.config, change.previous, after.config)
    if set(after.config) != set(change.config):
        return False
    shown = {
        k: v
        for k, v in change.config.items()
        if not (catalogue.is_sensitive(entity.type, k) or secrets.is_scram_mechanism(k))
    }
    if entity.type in (EntityType.TOPICS, EntityType.BROKERS):
        return all(after.config[k] == v for k, v in shown.items())
    return not agreement.quotas(entity.path, shown, {k: after.config[k] for k in shown})


def _shown(stored: Stored) -> str:
    masked = {k: (secrets.MASK if secrets.is_scram_mechanism(k) else v) for k, v in stored.config.items()}
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(masked.items())) + "}"


def _refuse_unsendable(change: Change) -> None:
    changed = {k: v for k, v in change.config.items() if change.previous.get(k) != v}
    removed = [k for k in change.previous if k not in change.config]
    refuse_unsendable(changed, removed, f"change {change.entity.display}")


__all__ = ["KRaftWrites"]
