"""Kafka's ``/config`` tree and configctl's history of it in ZooKeeper: the store's one face.

:class:`ZooKeeperStore` is ZooKeeper's implementation of every role of
:class:`configctl.store.ConfigStore`; this module holds its public methods and the order a write
follows, and each idea lives in a module of its own:

* :mod:`configctl.zk.multi`: the one atomic write (config node, notification, history record);
* :mod:`configctl.zk.multisize`: what fits in one multi, and the batches a bulk write is cut into;
* :mod:`configctl.zk.pipeline`: multis in flight at once, and the account of them when cut off;
* :mod:`configctl.zk.ownership`: who owns the metadata, read before every write;
* :mod:`configctl.zk.quotacleanup`: emptied quota nodes removed as Kafka 3.5+ removes them;
* :mod:`configctl.zk.history`: the history records, read back and trimmed;
* :mod:`configctl.zk.notifications`: the change notifications, their numbers and times;
* :mod:`configctl.zk.rollouts`: rollout records, written through this store's multi.

Ownership: every multi is preceded by one read of ``/controller``, ``/migration`` and
``/controller_epoch`` (:meth:`ZooKeeperStore._before_writes`, the one place every write passes),
and refused with nothing written while a KRaft controller or a migration owns the metadata
(:mod:`configctl.migration`, exit 14); the multi then checks ``/controller_epoch``'s version.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from configctl.entities import CONFIG_ROOT, Entity, EntityType
from configctl.errors import InvalidInput, one_line
from configctl.identity import default_identity
from configctl.migration import MetadataOwner
from configctl.settings import DEFAULT_HISTORY_LIMIT
from configctl.store import (
    Capabilities,
    Change,
    CommitInterrupted,
    Committed,
    ConfigStore,
    NodeOp,
    Notification,
    Stored,
    VersionConflict,
    version_after,
)
from configctl.zk import history, multi, pipeline, quotacleanup, registrations
from configctl.zk import notifications as notification_nodes
from configctl.zk.configtree import ConfigTree
from configctl.zk.errors import LOST, translate_errors
from configctl.zk.fleetstate import FleetState
from configctl.zk.multisize import batches, check_sizes
from configctl.zk.ownership import read_metadata_owner
from configctl.zk.session import ZkSession
from configctl.zkconnection import ConnectionSettings
from configctl.znodes import CHANGES_PATH, HistoryRecord, HistoryZNodes, decode_entity_config

if TYPE_CHECKING:
    from pathlib import Path

    from configctl import applied
    from configctl.zk.fleetwatch import ZooKeeperFleetWatch
    from configctl.zk.rollouts import ZooKeeperRollouts

log = logging.getLogger(__name__)

CAPABILITIES = Capabilities(
    versioned_writes=True,
    extra_nodes=True,
    watches=True,
    history=True,
    notifications=True,
    fleet_state=True,
    rollout_records=True,
)
"""ZooKeeper does everything :class:`configctl.store.Capabilities` names: znode versions, multis,
watches, and configctl's own nodes beside Kafka's."""


class ZooKeeperStore:
    """Reads and writes of entity configs, notifications and history, over one :class:`ZkSession`.

    The ZooKeeper implementation of :class:`configctl.store.ConfigStore`.
    """

    def __init__(
        self,
        session: ZkSession,
        *,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
        identity: str | None = None,
    ) -> None:
        self.session = session
        self.history_limit = history_limit
        self.history_archive: Path | None = None  # ZooKeeper's own records only (see configctl.archive)
        self.identity = identity or session.settings.identity or default_identity()
        self._fleet = FleetState(session)
        # What this store last wrote per entity: a writer may start from it instead of
        # re-reading (the version check still catches anyone who wrote since).
        self._written: dict[Entity, Stored] = {}

    @classmethod
    def connect(
        cls,
        settings: ConnectionSettings | str,
        *,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
        identity: str | None = None,
    ) -> ZooKeeperStore:
        """A store over a session of its own (opened by :meth:`open` or ``with``, closed with it)."""
        return cls(ZkSession(settings), history_limit=history_limit, identity=identity)

    def open(self) -> ZooKeeperStore:
        self.session.open()
        return self

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> ZooKeeperStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def client(self) -> Any:
        return self.session.client

    @property
    def timeout(self) -> float:
        return self.session.timeout

    @property
    def kind(self) -> str:
        return "zookeeper"

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    @property
    def location(self) -> str:
        """ZooKeeper's connect string (with its chroot)."""
        return self.session.connect

    @cached_property
    def rollouts(self) -> ZooKeeperRollouts:
        """The rollout records beside the configs (:mod:`configctl.zk.rollouts`), written through this store."""
        return self.rollouts_through(self)

    def rollouts_through(self, store: ConfigStore) -> ZooKeeperRollouts:
        """Rollout records kept in this ZooKeeper, their multis written through ``store`` (a store
        composed with other writes: :class:`configctl.store.Store`)."""
        from configctl.zk.rollouts import ZooKeeperRollouts  # on first use: most commands open no rollout

        return ZooKeeperRollouts(store, self.session)

    # -- reads ----------------------------------------------------------------------------------

    def read(self, entity: Entity, *, strict: bool = True) -> Stored:
        """The entity's config and znode version (version -1 and {} when absent)."""
        (stored,) = self.read_many([entity], strict=strict)
        return stored

    def read_many(self, entities: Iterable[Entity], *, strict: bool = True) -> list[Stored]:
        """Read many entity nodes in few round trips.

        A node that is not a Kafka config raises :class:`InvalidInput` with ``strict`` (a write
        must not build on it), else comes back with its ``problem`` set.
        """
        wanted = list(entities)
        result = []
        for entity, found in zip(wanted, self.session.get_many([e.znode for e in wanted]), strict=True):
            if found is None:
                result.append(Stored(entity, {}, -1))
                continue
            data, stat = found
            problem: str | None = None
            try:
                config = decode_entity_config(data)
            except InvalidInput as exc:
                if strict:
                    raise InvalidInput(f"{entity.znode} holds a malformed config: {exc}") from None
                config, problem = {}, str(exc)
            created, modified = int(stat.ctime), int(stat.mtime)
            result.append(Stored(entity, config, stat.version, problem, created, modified))
        return result

    def cluster_id(self) -> str | None:
        return registrations.cluster_id(self.session)

    def running_brokers(self) -> set[int] | None:
        """The ids of the Kafka brokers registered now; None when no Kafka ever registered here."""
        return registrations.running_brokers(self.session)

    def existing_topics(self, names: Iterable[str]) -> set[str] | None:
        """Which of ``names`` Kafka created; None when the cluster registers no topics."""
        return registrations.existing_topics(self.session, names)

    def metadata_owner(self) -> MetadataOwner:
        """Who owns the cluster's metadata now (``/controller``, ``/migration``)."""
        owner, _ = read_metadata_owner(self.session)
        return owner

    def kafka_release(self) -> str:
        """3.9: the only Kafka line with ZooKeeper mode that configctl supports (Kafka 4 has none)."""
        return "3.9"

    def entity_names(self, entity_type: EntityType, *, user: str | None = None) -> list[str]:
        """The names under ``/config/<type>`` as stored, or under ``/config/users/<user>/clients``."""
        if user is not None:
            return self.session.children(f"{CONFIG_ROOT}/users/{user}/clients")
        return self.session.children(f"{CONFIG_ROOT}/{entity_type.value}")

    def last_written(self, entity: Entity) -> Stored | None:
        """The config and version this store itself last committed for ``entity``, if any."""
        return self._written.get(entity)

    def entities(self, entity_type: EntityType) -> list[Entity]:
        """Every entity of a type with a node under /config (users include their nested clients)."""
        root = f"{CONFIG_ROOT}/{entity_type.value}"
        names = self.session.children(root)
        result: list[Entity] = []
        for stored_name in names:
            try:
                result.append(Entity.from_path(f"{entity_type.value}/{stored_name}"))
            except InvalidInput as exc:
                log.warning("skipping %s/%s: %s", root, stored_name, exc)
        if entity_type is EntityType.USERS and names:
            # the users/clients nesting is walked where the listener walks it; a write side read is strict
            listings: list[list[str] | None] = []
            for listing in ConfigTree(self.session).list_clients(names):
                if isinstance(listing, Exception):
                    raise listing
                listings.append(listing)
            for stored_name, clients in zip(names, listings, strict=True):
                for client in clients or ():
                    try:
                        result.append(Entity.from_path(f"users/{stored_name}/clients/{client}"))
                    except InvalidInput as exc:
                        log.warning("skipping %s/%s/clients/%s: %s", root, stored_name, client, exc)
        return sorted(result)

    def read_type(self, entity_type: EntityType, *, strict: bool = True) -> list[Stored]:
        return self.read_many(self.entities(entity_type), strict=strict)

    def read_all(self, *, strict: bool = True) -> list[Stored]:
        """Every entity config under /config (all five types)."""
        return [stored for etype in EntityType for stored in self.read_type(etype, strict=strict)]

    # -- writes ---------------------------------------------------------------------------------

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]:
        """Write every change in ONE multi: config node (version-checked) + notification + history.

        ``extra`` operations on other nodes go in the same multi, after the changes. Raises
        :class:`VersionConflict` if any node moved since it was read (or an ``extra`` create finds
        its node there; nothing is written then), :class:`CommitInterrupted` if the connection
        dropped after the multi was sent, or a :mod:`configctl.errors` class for connection and
        permission problems before that.
        """
        if not changes and not extra:
            return []
        prepared = self._prepare(changes, reason, self._before_writes(changes), extra)
        try:
            results = prepared.transaction.commit_async().get(timeout=self.timeout)
        except LOST as exc:
            raise CommitInterrupted([], list(changes), [], one_line(exc)) from None
        with translate_errors("write configs"):
            return self._finish(prepared, results)

    def commit_batches(
        self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2
    ) -> Generator[list[Committed], None, None]:
        """Commit many changes in as few multis as ZooKeeper's request size allows, yielding each batch.

        Up to ``in_flight`` multis are outstanding at once (:mod:`configctl.zk.pipeline`); every
        read (parents, history directories) is done before the first is sent, as a read sent while
        a multi is in flight waits for that multi, which would stop the next one being built
        meanwhile. A :class:`VersionConflict` stops the sending and is raised once the multis
        already sent are answered. Any other failure once a multi has been sent, including one the
        caller throws in at a ``yield``, is :class:`CommitInterrupted`, naming by this store's own
        batching what committed, what was in flight (``unknown``) and what was never sent.
        """
        reads = self._before_writes(changes) if changes else multi.Reads()
        yield from pipeline.send(
            list(batches(changes)),
            lambda batch: self._prepare(batch, reason, reads),
            self._finish,
            timeout=self.timeout,
            in_flight=in_flight,
        )

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        """After an interrupted commit: which changes are in ZooKeeper, and which are not.

        A change landed when its node holds exactly the bytes it wrote at the version it would
        have made. Raises :class:`ZooKeeperUnavailable` while ZooKeeper cannot be read.
        """
        found = self.session.get_many([c.entity.znode for c in changes])
        yes: list[Change] = []
        no: list[Change] = []
        for change, node in zip(changes, found, strict=True):
            expected_version = version_after(change.expected_version)
            removed = (
                node is None
                and (change.remove_node or (not change.config and change.exact is None))
                and change.expected_version >= 0
            )
            ours = removed or (
                node is not None and node[1].version == expected_version and node[0] == change.data
            )
            (yes if ours else no).append(change)
        return yes, no

    def validate(self, changes: Sequence[Change]) -> None:
        """Nothing else validates a ZooKeeper write: configctl's own checks were the whole of it."""

    def _before_writes(self, changes: Sequence[Change]) -> multi.Reads:
        """Check sizes and who owns the metadata, create the parent nodes ``changes`` need, and read
        what the multi must know.

        Every multi this store sends (alter, apply, rollback, rollouts and their records) is
        built on what this returns, so the ownership check here covers every write; it comes
        before the first node is created. Raises :class:`~configctl.errors.MigrationInProgress`.
        """
        check_sizes(changes)
        owner, controller_epoch = read_metadata_owner(self.session)
        owner.check_writable()
        self.session.ensure_path(CHANGES_PATH)
        for parent in dict.fromkeys(change.entity.znode.rsplit("/", 1)[0] for change in changes):
            self.session.ensure_path(parent)
        missing = history.missing_directories(self.session, changes) if self.history_limit > 0 else set()
        return multi.Reads(missing, quotacleanup.removals(self.session, changes), controller_epoch)

    def _prepare(
        self, changes: Sequence[Change], reason: str, reads: multi.Reads, extra: Sequence[NodeOp] = ()
    ) -> multi.Prepared:
        return multi.prepare(
            self.session,
            changes,
            reason,
            reads,
            extra,
            history_limit=self.history_limit,
            identity=self.identity,
        )

    def _finish(self, prepared: multi.Prepared, results: list[Any]) -> list[Committed]:
        """Turn a multi's results into :class:`Committed` records (remembered as this store's last
        writes, histories trimmed), or raise the error it failed with."""
        error = multi.failure(prepared, results)
        if error is not None:
            if isinstance(error, VersionConflict):
                for change in prepared.changes:
                    self._written.pop(change.entity, None)
                    # A retry must not trust what this attempt believed about history directories.
                    self.session.forget_path(HistoryZNodes.directory(change.entity))
            raise error
        self.session.remember_paths(prepared.new_history_dirs)
        committed = multi.committed(prepared, results)
        for change, done in zip(prepared.changes, committed, strict=True):
            self._written[change.entity] = Stored(change.entity, dict(change.config), done.version)
        if self.history_limit > 0:
            # A node's history holds at most one record per version, so it can only outgrow
            # the limit once the version reaches it: skip the listing round trip before that.
            trimmed = [done.entity for done in committed if done.version >= self.history_limit]
            history.trim(self.session, trimmed, self.history_limit)
        return committed

    # -- history --------------------------------------------------------------------------------

    def record_history(self, change: Change, version: int, *, reason: str = "") -> None:
        """Record a write someone else committed for us (a broker, through its Admin API): the
        history record of ``change`` at ``version``, alone, as the write's own multi would have."""
        history.record_alone(
            self.session, change, version, identity=self.identity, reason=reason, limit=self.history_limit
        )

    def carried_applied_log(self, broker_id: int) -> list[applied.Record] | None:
        """None: ZooKeeper keeps no applied log (the listeners keep theirs in their state directories)."""
        return None

    def history(self, entity: Entity) -> list[HistoryRecord]:
        """Recorded writes of an entity, newest first (malformed records are skipped with a warning).

        The entity's first recorded write is the history directory's own data (it is created with
        that write, one node fewer per entity); every later write is a child record.
        """
        return self.histories([entity])[entity.path]

    def histories(self, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
        """:meth:`history` of each entity: every listing pipelined, then every record (the fleet's
        change feed reads thousands of entities in a few round trips, not one each)."""
        return history.histories(self.session, entities)

    def history_entities(self) -> list[Entity]:
        """Every entity with a history directory, deleted ones included."""
        return history.history_entities(self.session)

    # -- notifications --------------------------------------------------------------------------

    def notifications(self) -> list[Notification]:
        """Change notifications currently in /config/changes, oldest first."""
        return notification_nodes.listing(self.session)

    def latest_change_number(self) -> int | None:
        found = self.notifications()
        return found[-1].number if found else None

    def notified_paths(self, notifications: Sequence[Notification]) -> list[str]:
        """The entity path each of ``notifications`` names (gone, unreadable or malformed ones left out)."""
        return notification_nodes.notified_paths(self.session, notifications)

    def notification_times(self) -> list[tuple[int, str, int]]:
        """Each notification still in ``/config/changes``: its number, entity path and ctime."""
        return notification_nodes.times(self.session)

    def notified_changes(self) -> list[applied.Record]:
        """Nothing: a notification names its entity, not what changed (the applied logs say it)."""
        return []

    # -- the fleet (what the listeners publish: :mod:`configctl.zk.fleetstate`) -------------------

    def broker_state(self, broker_id: int | str) -> dict[str, Any] | None:
        return self._fleet.broker_state(broker_id)

    def broker_states(self) -> dict[int, dict[str, Any]]:
        return self._fleet.broker_states()

    def fleet_records(self) -> dict[int, dict[str, Any]]:
        return self._fleet.fleet_records()

    def watch_broker_state(self, broker_id: int, on_state: Callable[[bytes | None], bool]) -> None:
        self._fleet.watch_broker_state(broker_id, on_state)

    def watch_fleet(self, tell: Callable[..., None], on_lost: Callable[[], None]) -> ZooKeeperFleetWatch:
        """The console's watches on everything the fleet shows (:mod:`configctl.zk.fleetwatch`)."""
        from configctl.zk.fleetwatch import ZooKeeperFleetWatch  # on first use: only the console watches

        return ZooKeeperFleetWatch(self.session, tell, on_lost)

    def retire_broker(self, broker_id: int) -> bool:
        return self._fleet.retire(broker_id)
