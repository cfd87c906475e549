"""The store of a KRaft cluster: every role over the Admin API and configctl's history topic, no ZooKeeper.

Since Kafka 4.0 a cluster's configs live in its metadata log, reached only through the brokers'
Admin API. :class:`KRaftStore` plays the store's roles (:mod:`configctl.store.roles`) there:

- reads: what the cluster stores for each entity (:mod:`configctl.kraft.reads`);
- registrations: the cluster's id and brokers (DescribeCluster) and its topics (Metadata);
- history: configctl's records in a compacted topic of the cluster (:mod:`configctl.kraft.historytopic`);
- writes are not its own: the choice point composes it with the Admin API writes
  (:class:`configctl.kraft.writes.KRaftWrites`), which send every family through the brokers
  and record each write here, and with the rollout records kept in the cluster
  (:mod:`configctl.kraft.rollouts`).

**Versions.** KRaft keeps no version per config and its config RPCs have no compare-and-set.
configctl numbers an entity's writes itself, in its history: an entity is at the version of its
newest record while the cluster holds the config that record left, and one past it once the
cluster holds anything else (a write outside configctl, or one that raced configctl's). A write
checks the version just before it is sent and reads the entity back after it: a write that
raced it between those two moments is found and reported (docs/kraft.md says exactly what is and
is not guaranteed).

What KRaft has no place for is declared in :attr:`capabilities` and refused in one line by the
features that need it: change notifications and the listeners' fleet state (each broker is asked
instead: ``broker_reports``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from configctl import applied, catalogue
from configctl.adminapi.client import KafkaAdmin
from configctl.adminapi.features import ClusterMode, cluster_mode
from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput, KafkaUnavailable
from configctl.handlers import brokerlogger
from configctl.identity import default_identity
from configctl.kraft import appliedtopic, historytopic, recordertopic, rollouttopic
from configctl.kraft.metadatafold import MetadataChange
from configctl.kraft.nofleet import NoFleetState
from configctl.kraft.owntopics import OwnTopicClients
from configctl.kraft.reads import OWN_SOURCE, own_layer, read_entity
from configctl.migration import KRAFT, MetadataOwner
from configctl.secrets import MASK, mask_config
from configctl.store import (
    ABSENT,
    Capabilities,
    Change,
    Committed,
    FleetWatch,
    NodeOp,
    Rollouts,
    Stored,
)
from configctl.store.capabilities import Unsupported
from configctl.store.roles import BrokerReports
from configctl.znodes import HistoryRecord

log = logging.getLogger(__name__)

CAPABILITIES = Capabilities(
    versioned_writes=True,
    extra_nodes=False,
    watches=False,
    history=True,
    notifications=False,
    fleet_state=False,
    rollout_records=True,
    brokers_validate=True,
    broker_reports=True,
)


class KRaftStore(NoFleetState):
    """A KRaft cluster at ``bootstrap`` as configctl's store (reads, registrations, history)."""

    def __init__(
        self,
        bootstrap: str,
        command_config: Path | None = None,
        *,
        timeout: float = 30.0,
        identity: str | None = None,
        history_limit: int = 100,
        admin: KafkaAdmin | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.command_config = command_config
        self._timeout = timeout
        self._identity = identity or default_identity()
        self._history_limit = history_limit
        self._admin: KafkaAdmin | None = admin
        self.mode: ClusterMode | None = None
        """What the cluster said it runs (its metadata version and release), once asked."""
        self._records: dict[str, list[HistoryRecord]] | None = None
        self._recorder: recordertopic.Recorded | None = None
        self._writer: OwnTopicClients | None = None
        self._producer: Any = None
        self._written: dict[Entity, Stored] = {}
        self._applied: dict[int, list[applied.Record] | None] = {}

    # -- Connection ---------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def history_limit(self) -> int:
        return self._history_limit

    @property
    def kind(self) -> str:
        return f"KRaft cluster (Kafka Admin API, {self.bootstrap})"

    @property
    def location(self) -> str:
        return self.bootstrap

    @property
    def timeout(self) -> float:
        return self._timeout

    @property
    def admin(self) -> KafkaAdmin:
        """The Admin API client, connected on first use."""
        if self._admin is None:
            self._admin = KafkaAdmin(self.bootstrap, self.command_config, timeout=self._timeout)
        return self._admin

    def open(self) -> KRaftStore:
        _ = self.admin
        return self

    def close(self) -> None:
        if self._writer is not None:
            self._writer.__exit__()
            self._writer = None
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def __enter__(self) -> KRaftStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    # -- ConfigReads --------------------------------------------------------------------------

    def read(self, entity: Entity, *, strict: bool = True) -> Stored:
        """What the cluster stores for ``entity``, at the version configctl's history gives it."""
        (stored,) = self.read_many([entity], strict=strict)
        return stored

    def read_many(self, entities: Iterable[Entity], *, strict: bool = True) -> list[Stored]:
        """Each entity's config: every topic among them in one DescribeConfigs request (a topic the
        cluster lacks is absent), every other entity asked on its own."""
        wanted = list(entities)
        topics = [e.name for e in wanted if e.type is EntityType.TOPICS]
        described = self.admin.describe_topics(topics, missing_ok=True) if topics else {}
        any_broker = (
            self._any_broker() if any(e.type is EntityType.BROKERS and e.is_default for e in wanted) else None
        )
        found = []
        for entity in wanted:
            if entity.type is EntityType.TOPICS:
                reported = described.get(entity.name)
                if reported is None:
                    found.append(Stored(entity, {}, ABSENT))
                    continue
                config = own_layer(reported, OWN_SOURCE["topic"])
            else:
                config = read_entity(self.admin, entity, any_broker)
            found.append(Stored(entity, config, self._version(entity, config)))
        return found

    def read_type(self, entity_type: EntityType, *, strict: bool = True) -> list[Stored]:
        return [s for s in self.read_many(self.entities(entity_type), strict=strict) if s.exists]

    def read_all(self, *, strict: bool = True) -> list[Stored]:
        return [stored for etype in EntityType for stored in self.read_type(etype, strict=strict)]

    def entities(self, entity_type: EntityType) -> list[Entity]:
        """Every entity of a type the cluster holds a config for (topics: every topic but
        configctl's own history topic; brokers: each running broker and the default; groups and
        client-metrics subscriptions: those with a config, as ListConfigResources lists them)."""
        if entity_type is EntityType.TOPICS:
            names = [t for t in self.admin.topic_names() if t not in OWN_TOPICS]
            return [Entity.of(EntityType.TOPICS, name) for name in names]
        if entity_type is EntityType.BROKERS:
            ids = sorted(self.running_brokers() or ())
            return [Entity.named(EntityType.BROKERS, "")] + [
                Entity.named(EntityType.BROKERS, str(b)) for b in ids
            ]
        if entity_type.kraft_only:  # groups, client-metrics: ListConfigResources names them
            if not catalogue.is_kafka4(self.kafka_release()):
                return []  # a Kafka 3.9 KRaft cluster (one just migrated) has neither, nor the request
            return sorted(self._resources(entity_type))
        found = {e for e in self.admin.all_client_quotas() if e.type is entity_type}
        if entity_type is EntityType.USERS:
            found |= {Entity.named(EntityType.USERS, user) for user in self.admin.scram_users()}
        return sorted(found)

    def _resources(self, entity_type: EntityType) -> list[Entity]:
        """The groups or subscriptions the cluster holds a config for; a name no entity can have
        (``.``, ``..``) is skipped with a warning, as the other stores skip what they cannot name."""
        found = []
        for name in self.admin.resource_names(entity_type):
            try:
                found.append(Entity.named(entity_type, name))
            except InvalidInput as exc:
                log.warning("skipping %s %r: %s", entity_type.singular, name, exc)
        return found

    def entity_names(self, entity_type: EntityType, *, user: str | None = None) -> list[str]:
        if user is not None:
            return sorted(
                e.client or ""
                for e in self.entities(EntityType.USERS)
                if e.client is not None and e.name == user
            )
        return sorted({e.name for e in self.entities(entity_type)})

    def last_written(self, entity: Entity) -> Stored | None:
        return self._written.get(entity)

    # -- Registrations ------------------------------------------------------------------------

    def cluster_id(self) -> str | None:
        return self.admin.cluster_id()

    def running_brokers(self) -> set[int] | None:
        return set(self.admin.broker_ids())

    def existing_topics(self, names: Iterable[str]) -> set[str] | None:
        return set(names) & set(self.admin.topic_names())

    def metadata_owner(self) -> MetadataOwner:
        return MetadataOwner(KRAFT, "a KRaft cluster: its controllers own the metadata")

    def kafka_release(self) -> str:
        """What the cluster said it runs (:attr:`mode`, asked once if the choice point did not):
        its release (``4.4``), or its line (``4.x``, ``3.x``) for a release newer than known."""
        if self.mode is None:
            self.mode = cluster_mode(self.admin)
        return self.mode.release or self.mode.line

    def _any_broker(self) -> int | None:
        running = self.running_brokers()
        return min(running) if running else None

    # -- writes: not this store's own (the Admin API writes role records here) ---------------

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]:
        raise Unsupported(_THROUGH_BROKERS)

    def commit_batches(self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2) -> Any:
        raise Unsupported(_THROUGH_BROKERS)

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        raise Unsupported(_THROUGH_BROKERS)

    def validate(self, changes: Sequence[Change]) -> None:
        raise Unsupported(_THROUGH_BROKERS)

    def note_written(self, stored: Stored) -> None:
        """What a write through the brokers left (:meth:`last_written`)."""
        self._written[stored.entity] = stored

    # -- History ------------------------------------------------------------------------------

    @property
    def history_archive(self) -> Path | None:
        return None

    def history(self, entity: Entity) -> list[HistoryRecord]:
        """Recorded writes of ``entity``, newest first (as every store gives them)."""
        return self.histories([entity])[entity.path]

    def history_entities(self) -> list[Entity]:
        """Every entity configctl recorded a write of, or the flight recorder saw written."""
        paths = set(self._all_records()) | {
            c.entity_path for c in self.recorded().writes.values() if not _own(c.entity_path)
        }
        found = []
        for path in sorted(paths):
            try:
                found.append(Entity.from_path(path))
            except InvalidInput:
                continue
        return sorted(found)

    def histories(self, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
        records = self._all_records()
        return {e.path: list(reversed(records.get(e.path, ()))) for e in entities}

    def record_history(self, change: Change, version: int, *, reason: str = "") -> None:
        """Append the record of ``change`` (now at ``version``) to the history topic; a secret is
        recorded masked (KRaft takes it in clear, and the topic is readable by its consumers)."""
        masked_after = _masked(change.entity, change.config)
        masked_before = _masked(change.entity, change.previous)
        changed = {
            key: masked_before.get(key)
            for key in sorted(set(change.previous) | set(change.config))
            if change.previous.get(key) != change.config.get(key)
        }
        record = HistoryRecord(
            change.entity.path, version, int(time.time() * 1000), self.identity, reason, masked_after, changed
        )
        producer = self._history_writer()
        historytopic.append(producer, [record], self.bootstrap, self._timeout)
        if self._records is not None:
            self._records.setdefault(record.entity_path, []).append(record)

    def carried_applied_log(self, broker_id: int) -> list[applied.Record] | None:
        """Broker ``broker_id``'s applied log as ``migration carry --applied-log`` carried it into
        the cluster (:mod:`configctl.kraft.appliedtopic`), read once per store; None: none was."""
        if broker_id not in self._applied:
            with self._clients(producer=False) as (_, _, consumer):
                self._applied[broker_id] = appliedtopic.read_broker(
                    consumer, broker_id, self.bootstrap, self._timeout
                )
        return self._applied[broker_id]

    def carry_applied(self, logs: Iterable[Sequence[applied.Record]]) -> int:
        """Append each broker's applied log of ``logs`` (one in memory at a time), in chunks, but
        the chunks carried before; how many records were sent."""
        with self._clients(producer=False) as (_, _, consumer):
            present = appliedtopic.read_keys(consumer, self.bootstrap, self._timeout)
        sent = 0
        with self._clients() as (admin, producer, _):
            for log in logs:
                if not log:
                    continue
                fresh = [c for c in appliedtopic.chunks(log[0].broker_id, log) if c[0] not in present]
                if fresh:
                    if not sent:
                        appliedtopic.ensure_topic(admin, len(self.running_brokers() or ()), self.bootstrap)
                    appliedtopic.append(
                        producer, [(k, v) for k, v, _ in fresh], self.bootstrap, self._timeout
                    )
                    sent += sum(count for _, _, count in fresh)
        self._applied.clear()
        return sent

    def carry_history(self, records: Sequence[HistoryRecord]) -> int:
        """Append records kept elsewhere (ZooKeeper's, before a migration) as they are: their
        versions, times, identities and reasons kept, secrets masked as this topic keeps them.
        A record already here (same key: entity, version, time) is not sent again, so carrying
        twice is carrying once. Returns how many were sent.

        An entity configctl already wrote here, with versions of its own that the carried ones
        would collide with, is refused in one line before anything is sent (carry first, then
        write: docs/migration.md).
        """
        held = self._all_records()
        present = {historytopic.record_key(r) for rs in held.values() for r in rs}
        carried = {historytopic.record_key(r) for r in records}
        newest: dict[str, int] = {}
        for record in records:
            newest[record.entity_path] = max(newest.get(record.entity_path, -1), record.version)
        clashes = sorted(
            path
            for path, version in newest.items()
            if any(
                historytopic.record_key(r) not in carried and r.version <= version for r in held.get(path, ())
            )
        )
        if clashes:
            raise InvalidInput(
                f"{', '.join(clashes[:5])}{' ...' if len(clashes) > 5 else ''}: configctl already wrote "
                "here before ZooKeeper's history was carried, and the versions would collide: nothing was "
                "carried (carry right after the brokers enter migration mode, before any write)"
            )
        fresh = []
        for record in records:
            if historytopic.record_key(record) in present:
                continue
            entity = Entity.from_path(record.entity_path)
            config = None if record.config is None else _masked(entity, record.config)
            changed = {
                key: (None if value is None else _masked(entity, {key: value})[key])
                for key, value in record.changed.items()
            }
            fresh.append(dataclasses.replace(record, config=config, changed=changed))
        if fresh:
            historytopic.append(self._history_writer(), fresh, self.bootstrap, self._timeout)
            for record in fresh:
                self._all_records().setdefault(record.entity_path, []).append(record)
        return len(fresh)

    def _all_records(self) -> dict[str, list[HistoryRecord]]:
        if self._records is None:
            self._read_own_topics()
        assert self._records is not None
        return self._records

    def _read_own_topics(self) -> None:
        """configctl's history and the flight recorder's record, read with one consumer: every
        version configctl gives needs both."""
        with self._clients(producer=False) as (_, _, consumer):
            records = historytopic.read_all(consumer, self.bootstrap, self._timeout)
            recorded = recordertopic.read_all(consumer, self.bootstrap, self._timeout)
        grouped: dict[str, list[HistoryRecord]] = {}
        for record in records:
            grouped.setdefault(record.entity_path, []).append(record)
        self._records, self._recorder = grouped, recorded

    def _version(self, entity: Entity, config: dict[str, str]) -> int:
        """The version configctl's history gives ``config`` (the module docstring's rule), every
        write the flight recorder saw since configctl's newest record counted one by one."""
        records = self._all_records().get(entity.path)
        if entity.type.in_broker_memory:  # loggers the broker makes as it runs are no write
            return brokerlogger.history_version(records or [], config)
        changes = self.recorded().of_entity(entity.path)
        if not records:
            if not config:
                return ABSENT
            return max(0, len(changes) - 1)  # its writes, all outside configctl: 0 for the first
        newest = max(records, key=lambda r: (r.version, r.time_ms))
        masked = _masked(entity, config)
        anchor = _anchor(entity, newest, changes)
        if anchor is None:  # the recorder has not seen configctl's write (not running, or behind)
            same = newest.config is not None and newest.config == masked
            return newest.version if same else newest.version + 1
        later = changes[anchor + 1 :]
        left = dict(newest.config or {})
        for change in later:
            for key, value in _masked_values(entity, change).items():
                if value is None:
                    left.pop(key, None)
                else:
                    left[key] = value
        unseen = 0 if left == masked else 1  # a write newer than the recorder's last
        return newest.version + len(later) + unseen

    # -- the flight recorder's record (configctl.kraft.recorder) ------------------------------

    def recorded(self) -> recordertopic.Recorded:
        """What the recorders beside the brokers recorded (nothing, when none runs), read once."""
        if self._recorder is None:
            self._read_own_topics()
        assert self._recorder is not None
        return self._recorder

    def notification_times(self) -> list[tuple[int, str, int]]:
        """Each write the flight recorder holds: its metadata offset (KRaft's change number), its
        entity and the time the controllers committed it, oldest first."""
        changes = self.recorded().writes
        return [(o, changes[o].entity_path, changes[o].time_ms) for o in sorted(changes)]

    def notified_changes(self) -> list[applied.Record]:
        """Each recorded write as what it stored, secrets masked as configctl's history keeps them."""
        found = []
        writes = self.recorded().writes
        for offset in sorted(writes):
            change = writes[offset]
            try:
                entity = Entity.from_path(change.entity_path)
            except InvalidInput:
                continue
            old = _masked_values(entity, change, side=0)
            new = _masked_values(entity, change)
            keys = tuple(applied.KeyRecord(k, old[k], None, new[k], None, new[k]) for k in sorted(new))
            found.append(
                applied.Record(applied.APPLIED, -1, offset, change.entity_path, change.time_ms, keys)
            )
        return found

    def _history_writer(self) -> Any:
        """The producer of history records, opened on the first write and kept until
        :meth:`close` (a bulk apply records thousands): the history topic is made sure of then."""
        if self._writer is None:
            writer = self._clients()
            admin, producer, _ = writer.__enter__()
            try:
                historytopic.ensure_topic(admin, len(self.running_brokers() or ()), self.bootstrap)
            except BaseException:
                writer.__exit__()
                raise
            self._writer = writer
            self._producer = producer
        return self._producer

    def _clients(self, *, producer: bool = True) -> Any:
        return OwnTopicClients(self.bootstrap, self.command_config, self._timeout, producer=producer)

    # -- BrokerReports: each broker asked (configctl.kraft.reports) ------------------------------

    def broker_reports(self) -> BrokerReports:
        """What each broker reports, asked of that broker itself (``--wait``, ``status``,
        ``describe --effective --broker N``): the fleet's truth where no listener publishes one."""
        from configctl.kraft.reports import KRaftReports

        def mode() -> ClusterMode | None:
            self.kafka_release()  # asks the cluster once, if the choice point did not
            return self.mode

        def recorders() -> dict[int, dict[str, Any]]:
            return self.recorded().recorders

        return KRaftReports(self.admin, self.bootstrap, self.command_config, self._timeout, mode, recorders)

    # -- what KRaft has no place for (the rest: NoFleetState) ------------------------------

    def retire_broker(self, broker_id: int) -> bool:
        raise Unsupported("retiring a broker: a KRaft cluster forgets a broker its controllers unregister")

    def watch_broker_state(self, broker_id: int, on_state: Callable[[bytes | None], bool]) -> None:
        raise Unsupported("watching a broker's listener: a KRaft cluster has no configctl fleet nodes")

    def watch_fleet(self, tell: Callable[..., None], on_lost: Callable[[], None]) -> FleetWatch:
        raise Unsupported("watching the fleet: a KRaft cluster has no configctl fleet nodes")

    @property
    def rollouts(self) -> Rollouts:
        """Rollout records live in the rollout topic (:mod:`configctl.kraft.rollouts`), whose writes go
        through the composed store's writes: the choice point gives them to it, not this store."""
        raise Unsupported(
            "rollout records on KRaft are kept by the store the command composed (the rollout topic); "
            "nothing was written"
        )


_THROUGH_BROKERS = "a KRaft cluster's configs are written through its brokers' Admin API only"

OWN_TOPICS = frozenset({historytopic.TOPIC, rollouttopic.TOPIC, recordertopic.TOPIC, appliedtopic.TOPIC})
"""configctl's own topics: what it keeps beside the configs, never listed as the cluster's topics."""

ANCHOR_SLACK_MS = 10_000
"""How much later than configctl's record of a write the controllers' commit of it may be timed
(the writer's clock against the controller's)."""
ANCHOR_WINDOW_MS = 120_000
"""How much earlier: a write is recorded once the brokers answered it, within a request's timeout."""


def _own(entity_path: str) -> bool:
    return entity_path.startswith("topics/") and entity_path.removeprefix("topics/") in OWN_TOPICS


def _masked_values(entity: Entity, change: MetadataChange, side: int = 1) -> dict[str, str | None]:
    """The values a recorded write left (``side`` 0: found), secrets masked as history keeps them."""
    values = {key: both[side] for key, both in change.changed.items()}
    present = {key: value for key, value in values.items() if value is not None}
    masked = _masked(entity, {k: (MASK if k in change.secrets else v) for k, v in present.items()})
    return {key: masked.get(key) for key in values}


def _anchor(entity: Entity, record: HistoryRecord, changes: Sequence[MetadataChange]) -> int | None:
    """The index of the recorded write that is configctl's ``record``: the latest one committed
    around when the record was made (:data:`ANCHOR_SLACK_MS` after, :data:`ANCHOR_WINDOW_MS`
    before) that set what the record holds for every key it moved (None: the recorder holds no
    such write)."""
    if record.config is None:
        return None
    for index in range(len(changes) - 1, -1, -1):
        change = changes[index]
        if change.time_ms > record.time_ms + ANCHOR_SLACK_MS:
            continue
        if change.time_ms < record.time_ms - ANCHOR_WINDOW_MS:
            return None
        if all(record.config.get(k) == v for k, v in _masked_values(entity, change).items()):
            return index
    return None


def _masked(entity: Entity, config: dict[str, str]) -> dict[str, str]:
    return mask_config(
        config, lambda key: catalogue.is_sensitive(entity.type, key) or config.get(key) == MASK
    )


__all__ = ["CAPABILITIES", "KRaftStore", "KafkaUnavailable"]
