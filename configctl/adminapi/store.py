"""The store with a second path: while brokers run, every write goes through the brokers themselves.

Kafka 3.9 takes dynamic configs through its brokers (``kafka-configs.sh --bootstrap-server``), so
its authorizer (ALTER_CONFIGS) and ``alter.config.policy.class.name`` judge each, and a broker may
veto a reconfiguration in its own step. With ``--bootstrap-server``, configctl composes its store
with these writes (:func:`configctl.cli.context.new_store`, the one place the choice is made):
after configctl's own validation, topic and broker configs go by IncrementalAlterConfigs, quotas
by AlterClientQuotas, SCRAM credentials by AlterUserScramCredentials
(:mod:`configctl.adminapi.families` says which path each change takes). ZooKeeper is written
directly only where Kafka's ``--zookeeper`` still writes: a broker that is not running, a
cluster with no live broker, and SCRAM credentials in their stored form (bootstrap); every read
goes to ZooKeeper as before. The broker writes the config node and its change notification
itself; this store then records the write in configctl's history (who, when, why, before and
after) and reports the change number the broker's notification got, so ``--wait``, ``status``,
canaries and waves work as they do on the ZooKeeper path.

A write request sent and never answered (a timeout, a connection cut) may have been written by
the broker: it is :class:`~configctl.store.CommitInterrupted` with that change ``unknown``, and
:meth:`landed` re-reads ZooKeeper for it, recording the history of one the broker wrote (exit 8
either way: the broker's answer is lost, :class:`~configctl.errors.KafkaAnswerLost`).

A broker's loggers (``broker-loggers/<id>``) live in that broker's memory only: no node holds
them, so they are read from the broker itself (:meth:`read_in_memory`: every logger it reports)
at the version configctl's history gives them (:func:`configctl.handlers.brokerlogger.history_version`),
written through it alone, recorded in the same history, with no change notification.

What differs, and is said so by :attr:`capabilities`: a broker write cannot share a transaction
with other nodes (``extra_nodes``): a rollout's record goes first, in its own ZooKeeper write, and
the broker writes follow it one by one. The version check is made just before the request (the
Admin API has no compare-and-set): a write racing another between the read and the request is not
detected; the history record shows both.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator, Iterable, Sequence
from pathlib import Path

from configctl import agreement, catalogue
from configctl.adminapi import families
from configctl.adminapi.client import KafkaAdmin, refuse_unsendable
from configctl.adminapi.connection import bootstrap_servers
from configctl.entities import Entity, EntityType
from configctl.errors import ConfigctlError, InvalidInput, KafkaAnswerLost, unrecorded
from configctl.handlers import brokerlogger
from configctl.store import (
    ABSENT,
    Capabilities,
    Change,
    CommitInterrupted,
    Committed,
    ConfigStore,
    NodeOp,
    Stored,
    VersionConflict,
    version_after,
)

NOTIFICATION_WAIT = 10.0
"""How long to wait for the broker's change notification to appear after a write it accepted."""


class BrokersThroughAdmin:
    """The writes role (:class:`configctl.store.ConfigWrites`) with every family sent through the
    brokers' Admin API while they run.

    Everything else goes to ``inner``, the ZooKeeper store: other writes, the reads this path
    needs (what runs, the version just before the request, the broker's notification) and the
    history record of each broker write. The choice point composes it with ``inner``
    (:class:`configctl.store.Store`), which keeps every other role.
    """

    def __init__(self, inner: ConfigStore, bootstrap: str, command_config: Path | None = None) -> None:
        bootstrap_servers(bootstrap)  # refused now, not once a write first needs a broker
        self.inner = inner
        self.bootstrap = bootstrap
        self.command_config = command_config
        self._admin: KafkaAdmin | None = None
        self._unanswered: dict[Entity, tuple[Stored, str, int]] = {}
        """Writes sent and never answered: what the entity was before, the reason to record, and
        how many requests (each a write of its node) they were."""
        self._as_written: dict[Entity, Change] = {}
        """Each change sent to ZooKeeper as it was written there (a SCRAM password salted), for :meth:`landed`."""

    @property
    def admin(self) -> KafkaAdmin:
        """The Admin API client, connected on first use (a read-only command never connects)."""
        if self._admin is None:
            self._admin = KafkaAdmin(self.bootstrap, self.command_config, timeout=self.inner.timeout)
        return self._admin

    @property
    def kind(self) -> str:
        """The whole store's name as the operator knows it."""
        return f"{self.inner.kind} + Kafka Admin API ({self.bootstrap})"

    @property
    def capabilities(self) -> Capabilities:
        return dataclasses.replace(self.inner.capabilities, extra_nodes=False, brokers_validate=True)

    def close(self) -> None:
        """Close the Admin API client (``inner`` is closed by whoever composed the store)."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # -- writes ---------------------------------------------------------------------------------

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]:
        """ZooKeeper's part in one multi (with ``extra``), then each change the brokers take, one by one."""
        through, direct, via = self._split(changes)
        committed = self.inner.commit(direct, reason=reason, extra=extra) if direct or extra else []
        for index, change in enumerate(through):
            committed.append(self._through_broker(change, reason, via, committed, through[index + 1 :]))
        return committed

    def commit_batches(
        self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2
    ) -> Generator[list[Committed], None, None]:
        through, direct, via = self._split(changes)
        done: list[Committed] = []  # what this call committed, for its account if a write is cut off
        if direct:
            yield from _noted(self.inner.commit_batches(direct, reason=reason, in_flight=in_flight), done)
        for index, change in enumerate(through):
            committed = self._through_broker(change, reason, via, done, through[index + 1 :])
            done.append(committed)
            yield [committed]

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        """ZooKeeper's account of its own writes; for a write sent through a broker and never
        answered, whether the node now holds what was asked, at the version that write gives it
        (a write found there is recorded in history, as an answered one is)."""
        direct = {c.entity: c for c in changes if c.entity not in self._unanswered}
        written = [self._as_written.get(entity, c) for entity, c in direct.items()]
        found, lost = self.inner.landed(written) if written else ([], [])
        landed, missed = [direct[c.entity] for c in found], [direct[c.entity] for c in lost]
        for change in changes:
            if change.entity in self._unanswered:
                (landed if self._landed_through_broker(change) else missed).append(change)
        return landed, missed

    def validate(self, changes: Sequence[Change]) -> None:
        """Ask the brokers to judge each of ``changes`` they would take, applying nothing
        (validateOnly); a SCRAM credential is checked here only (its request has no such form)."""
        through, _, via = self._split(changes)
        for change in through:
            families.send(self.admin, change, self._requests(change)[1], via, validate_only=True)

    def _split(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change], int | None]:
        """(through the brokers, through ZooKeeper, the broker a default goes through): every change
        the brokers can take while any runs (:func:`~configctl.adminapi.families.goes_through`)."""
        running = (self.inner.running_brokers() or set()) if changes else set()
        through, direct = [], []
        for change in changes:
            if families.goes_through(change, running):
                through.append(change)
            else:
                direct.append(zookeeper_form := families.for_zookeeper(change))
                self._as_written[change.entity] = zookeeper_form
        _refuse_unsendable(through)  # every one, before the first is sent
        return through, direct, min(running) if running else None

    def _requests(self, change: Change) -> tuple[Stored, families.Requests]:
        """The entity as it is now, and the requests that make it ``change.config``."""
        if change.entity.type.in_broker_memory and change.expected_version == ABSENT:
            # A broker always has loggers: a change built on none was read from ZooKeeper, whose
            # "no node" says nothing of them (this store's reads must be InMemoryReads').
            raise InvalidInput(
                f"{change.entity.display}: its loggers were read from ZooKeeper, which has no place for "
                "them, not from the broker; nothing was written"
            )
        current = self._read(change.entity)
        return current, families.requests_of(change, current)

    def _read(self, entity: Entity) -> Stored:
        """``entity`` as it is now: from ZooKeeper, or a broker's loggers from that broker."""
        if entity.type.in_broker_memory:
            return self.read_in_memory(entity)
        return self.inner.read(entity, strict=False)

    def read_in_memory(self, entity: Entity) -> Stored:
        """A broker's loggers as that broker reports them (every one, at its level), at the version
        configctl's history gives them: what a read of them is, wherever the store is composed."""
        levels = self.admin.logger_levels(entity)
        return Stored(entity, levels, brokerlogger.history_version(self.inner.history(entity), levels))

    def _through_broker(
        self,
        change: Change,
        reason: str,
        via: int | None,
        committed: Sequence[Committed] = (),
        rest: Sequence[Change] = (),
    ) -> Committed:
        """Write ``change`` through the brokers and record it; ``committed`` and ``rest`` (this
        commit's writes done and still to send) are its account if the answer never comes."""
        entity = change.entity
        current, requests = self._requests(change)
        if current.version != change.expected_version:
            raise VersionConflict(f"{entity.path} moved from version {change.expected_version}")
        before = None if entity.type.in_broker_memory else self.inner.latest_change_number()
        try:
            families.send(self.admin, change, requests, via)
        except KafkaAnswerLost as lost:
            self._unanswered[entity] = (current, reason, requests.count)
            raise CommitInterrupted(list(committed), [change], list(rest), lost.message, lost) from None
        if entity.type.in_broker_memory:  # no node, no notification: the broker's answer is all
            return self._recorded_in_memory(change, current, reason)
        after = self.inner.read(entity, strict=False)
        recorded = Change(entity, after.config, current.version, previous=current.config)
        self._record(recorded, after.version, reason)
        return Committed(entity, after.version, self._notification_of(entity.path, before))

    def _recorded_in_memory(self, change: Change, before: Stored, reason: str) -> Committed:
        """Record a write a broker took into its memory (its loggers), as the broker reports them
        now, one version past ``before``."""
        after = self.read_in_memory(change.entity)
        version = version_after(before.version)
        recorded = Change(change.entity, after.config, before.version, previous=before.config)
        self._record(recorded, version, reason)
        return Committed(change.entity, version, None)

    def _landed_through_broker(self, change: Change) -> bool:
        """Whether the unanswered write of ``change`` is in ZooKeeper: the node at the version its
        requests give it (or gone, for a quota entity emptied, as Kafka 3.5+ removes it), holding
        every key asked and no other, each value as asked (a quota as a number; a password or SCRAM
        credential is stored salted or encrypted by the broker: there, only that it is set).
        Recorded in history if so."""
        entity = change.entity
        before, reason, requests = self._unanswered[entity]
        if entity.type.in_broker_memory:  # asked of the broker: its loggers at the levels asked
            del self._unanswered[entity]
            now = self.read_in_memory(entity).config
            if not brokerlogger.levels_taken(change.config, change.previous, now):
                return False
            self._recorded_in_memory(change, before, reason)
            return True
        after = self.inner.read(entity, strict=False)  # ZooKeeper away: resolve() asks again
        del self._unanswered[entity]
        version = before.version
        for _ in range(requests):
            version = version_after(version)
        emptied = not change.config and after.version == ABSENT and entity.type is not EntityType.BROKERS
        if not emptied and (after.version != version or set(after.config) != set(change.config)):
            return False
        asked = {k: v for k, v in change.config.items() if not catalogue.is_sensitive(entity.type, k)}
        if entity.type in (EntityType.BROKERS, EntityType.TOPICS):
            if any(after.config[k] != v for k, v in asked.items()):
                return False
        elif agreement.quotas(entity.path, asked, {k: after.config[k] for k in asked}):
            return False
        recorded = Change(entity, after.config, before.version, previous=before.config)
        self._record(recorded, after.version, reason)
        return True

    def _record(self, recorded: Change, version: int, reason: str) -> None:
        """Record a write a broker took; a record that cannot be written is said as such (exit 8)."""
        try:
            self.inner.record_history(recorded, version, reason=reason)
        except ConfigctlError as exc:
            raise unrecorded(recorded.entity.display, recorded.entity.path, exc) from None

    def _notification_of(self, entity_path: str, before: int | None) -> int | None:
        """The number of the change notification the broker wrote for ``entity_path`` after ``before``."""
        deadline = time.monotonic() + NOTIFICATION_WAIT
        while True:
            newer = [n for n in self.inner.notifications() if before is None or n.number > before]
            for notification in reversed(newer):  # one at a time: a gone or unreadable one is left out
                if self.inner.notified_paths([notification]) == [entity_path]:
                    return notification.number  # the newest: a user's quotas and SCRAM are two writes
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)


class InMemoryReads:
    """The reads role (:class:`configctl.store.ConfigReads`) of a ZooKeeper-mode cluster with
    ``--bootstrap-server``: a broker's loggers asked of that broker (:meth:`BrokersThroughAdmin.read_in_memory`),
    every other entity read from ``inner`` (ZooKeeper) as before. No listing of stored configs
    has a broker's loggers (nothing stores them)."""

    def __init__(self, inner: ConfigStore, through: BrokersThroughAdmin) -> None:
        self.inner = inner
        self.through = through

    def read(self, entity: Entity, *, strict: bool = True) -> Stored:
        (stored,) = self.read_many([entity], strict=strict)
        return stored

    def read_many(self, entities: Iterable[Entity], *, strict: bool = True) -> list[Stored]:
        wanted = list(entities)
        stored = [e for e in wanted if not e.type.in_broker_memory]
        found = {s.entity: s for s in self.inner.read_many(stored, strict=strict)} if stored else {}
        return [found[e] if e in found else self.through.read_in_memory(e) for e in wanted]

    def read_type(self, entity_type: EntityType, *, strict: bool = True) -> list[Stored]:
        return self.inner.read_type(entity_type, strict=strict)

    def read_all(self, *, strict: bool = True) -> list[Stored]:
        return self.inner.read_all(strict=strict)

    def entities(self, entity_type: EntityType) -> list[Entity]:
        return self.inner.entities(entity_type)

    def entity_names(self, entity_type: EntityType, *, user: str | None = None) -> list[str]:
        return self.inner.entity_names(entity_type, user=user)

    def last_written(self, entity: Entity) -> Stored | None:
        return None if entity.type.in_broker_memory else self.inner.last_written(entity)


def _noted(
    batches: Generator[list[Committed], None, None], done: list[Committed]
) -> Generator[list[Committed], None, None]:
    """``batches`` passed on and each noted in ``done``; a failure thrown in at a batch is thrown
    on into ``batches``, as ``yield from`` does, so that store still gives its own account."""
    thrown: BaseException | None = None
    while True:
        try:
            batch = next(batches) if thrown is None else batches.throw(thrown)
        except StopIteration:
            return
        thrown = None
        done.extend(batch)
        try:
            yield batch
        except GeneratorExit:
            batches.close()
            raise
        except BaseException as exc:  # Ctrl-C too: handed on whole
            thrown = exc


def _refuse_unsendable(through: Sequence[Change]) -> None:
    """A key or value the Admin API cannot carry, in any change going through a broker, is refused
    before the first of them is sent (:func:`~configctl.adminapi.client.refuse_unsendable`)."""
    for change in through:
        changed = {k: v for k, v in change.config.items() if change.previous.get(k) != v}
        removed = [k for k in change.previous if k not in change.config]
        refuse_unsendable(changed, removed, f"change {change.entity.display}")
