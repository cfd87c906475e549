"""Kafka's ``/config`` tree and configctl's history of it: reads, and the one atomic write.

Writing one entity is ONE ZooKeeper multi (docs/reference/zookeeper-nodes.md): the config node, set with the version
that was read (or created when absent), its change notification, and its history record. A
reader never sees a config without its notification; two writers never silently overwrite
each other (the loser gets :class:`VersionConflict`, nothing written); and the record of who
wrote what cannot be lost the way a second write could.

Sizes: ZooKeeper refuses a request over ``jute.maxbuffer`` (1 MiB by default). A config node
that could not be written together with its notification is refused before the write; a
history record that would not fit beside its config is stored without the config (its SHA-256
is kept), so no entity ever becomes unchangeable.

Ownership: every multi is preceded by one read of ``/controller``, ``/migration`` and
``/controller_epoch`` (:meth:`ConfigStore._before_writes`, the one place every write passes), and
refused with nothing written while a KRaft controller or a migration owns the metadata
(:mod:`configctl.migration`, exit 14). The multi then checks ``/controller_epoch``'s version, as
Kafka's migration writes do, so a KRaft controller claiming the cluster after that read makes the
write fail (and, re-read, refused) instead of landing behind its back.
"""

from __future__ import annotations

import getpass
import hashlib
import logging
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import BadVersionError, NoAuthError, NodeExistsError, NoNodeError, RolledBackError

from configctl.entities import CONFIG_ROOT, Entity, EntityType
from configctl.errors import InvalidInput, PermissionDenied, ZooKeeperUnavailable, one_line
from configctl.migration import CONTROLLER_EPOCH_PATH, OWNER_PATHS, MetadataOwner, metadata_owner
from configctl.store import (
    Capabilities,
    Change,
    CommitInterrupted,
    Committed,
    NodeOp,
    Notification,
    Stored,
    VersionConflict,
    version_after,
)
from configctl.zk import registrations
from configctl.zk.configtree import ConfigTree
from configctl.zk.connection import ConnectionSettings
from configctl.zk.errors import LOST, translate_errors
from configctl.zk.fleetstate import FleetState
from configctl.zk.session import ZkSession
from configctl.znodes import (
    CHANGES_PATH,
    NOTIFICATION_PATH_PREFIX,
    NOTIFICATION_PREFIX,
    HistoryRecord,
    HistoryZNodes,
    change_number,
    decode_entity_config,
    decode_notification,
    encode_entity_config,
    encode_notification,
)

if TYPE_CHECKING:
    from pathlib import Path

    from configctl.zk.rollouts import Rollouts

log = logging.getLogger(__name__)

DEFAULT_HISTORY_LIMIT = 50
MAX_MULTI_BYTES = 900_000
"""Bytes one multi may carry: ZooKeeper's jute.maxbuffer is 1 MiB, minus room for framing."""
MAX_MULTI_OPS = 1000
MAX_CONFIG_BYTES = 850_000
"""The largest config node configctl writes: it must fit one multi with its notification."""
OPS_PER_CHANGE = 3  # config node, notification, history record (a new entity's is its history directory)
_OPS_PER_REMOVAL = 5  # up to three deletes (node, clients directory, user) instead of the config node
CLEANED_TYPES = (EntityType.USERS, EntityType.CLIENTS, EntityType.IPS)
"""Types whose emptied nodes are deleted, as Kafka 3.5+ does (a rollout predicts it to undo it)."""


@dataclass(frozen=True)
class _Reads:
    """What a multi needs to know before it is built: missing history directories, and the empty
    quota nodes (with their emptied parents) to delete rather than keep, as Kafka 3.5+ does."""

    missing_history_dirs: set[str] = field(default_factory=set)
    removals: dict[Entity, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    controller_epoch: int | None = None
    """``/controller_epoch``'s version when ownership was checked; the multi checks it is unchanged."""


@dataclass(frozen=True)
class _Prepared:
    """A multi built by :meth:`ConfigStore._prepare`, not yet sent."""

    changes: list[Change]
    transaction: Any
    notification_ops: list[int]
    new_history_dirs: set[str]
    removals: dict[Entity, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    controller_checked: bool = False
    """The multi's first operation checks ``/controller_epoch`` (see :class:`_Reads`)."""


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


class ConfigStore:
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
        self.identity = identity or session.settings.identity or _default_identity()
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
    ) -> ConfigStore:
        """A store over a session of its own (opened by :meth:`open` or ``with``, closed with it)."""
        return cls(ZkSession(settings), history_limit=history_limit, identity=identity)

    def open(self) -> ConfigStore:
        self.session.open()
        return self

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> ConfigStore:
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
    def rollouts(self) -> Rollouts:
        """The rollout records beside the configs (:mod:`configctl.zk.rollouts`)."""
        from configctl.zk.rollouts import Rollouts  # it writes through this module's multi

        return Rollouts(self)

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
            try:
                result.append(Stored(entity, decode_entity_config(data), stat.version))
            except InvalidInput as exc:
                if strict:
                    raise InvalidInput(f"{entity.znode} holds a malformed config: {exc}") from None
                result.append(Stored(entity, {}, stat.version, problem=str(exc)))
        return result

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
            nested = ConfigTree(self.session).list_clients(names)
            failed = next((listing for listing in nested if isinstance(listing, Exception)), None)
            if failed is not None:
                raise failed
            for stored_name, clients in zip(names, nested, strict=True):
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
    ) -> Iterator[list[Committed]]:
        """Commit many changes in as few multis as ZooKeeper's request size allows, yielding each batch.

        Up to ``in_flight`` multis are outstanding at once, so the next one is built while
        ZooKeeper applies the previous one; every read (parents, history directories) is done
        before the first is sent. Each multi is still all or nothing and version-checked.
        When one fails with :class:`VersionConflict` no further multi is sent; those already
        sent are waited for (and yielded if they committed), then the conflict is raised. A
        dropped connection raises :class:`CommitInterrupted` naming what is known.
        """
        queue: deque[tuple[_Prepared, Any]] = deque()
        conflict: VersionConflict | None = None
        committed: list[Committed] = []
        # Every read happens now: a read sent while a multi is in flight waits for that multi,
        # which would stop the next one being built meanwhile.
        reads = self._before_writes(changes) if changes else _Reads()
        planned = list(batches(changes))
        sent = 0

        def interrupted(cause: BaseException) -> CommitInterrupted:
            unknown = [c for prepared, _ in queue for c in prepared.changes]
            not_sent = [c for batch in planned[sent:] for c in batch]
            return CommitInterrupted(list(committed), unknown, not_sent, one_line(cause))

        def settle() -> list[Committed] | None:
            nonlocal conflict
            prepared, async_result = queue[0]
            try:
                results = async_result.get(timeout=self.timeout)
            except LOST as exc:
                raise interrupted(exc) from None
            queue.popleft()
            try:
                with translate_errors("write configs"):
                    done = self._finish(prepared, results)
            except VersionConflict as exc:
                conflict = conflict or exc
                return None
            committed.extend(done)
            return done

        for batch in planned:
            if conflict is not None:
                break
            prepared = self._prepare(batch, reason, reads)
            try:
                queue.append((prepared, prepared.transaction.commit_async()))
            except LOST as exc:
                raise interrupted(exc) from None
            sent += 1
            while len(queue) >= max(1, in_flight):
                done = settle()
                if done is not None:
                    yield done
        while queue:
            done = settle()
            if done is not None:
                yield done
        if conflict is not None:
            raise conflict

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        """After an interrupted commit: which changes are in ZooKeeper, and which are not.

        A change landed when its node holds exactly the bytes it wrote at the version it would
        have made. Raises :class:`ZooKeeperUnavailable` while ZooKeeper cannot be read.
        """
        found = self.session.get_many([c.entity.znode for c in changes])
        yes, no = [], []
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

    def _before_writes(self, changes: Sequence[Change]) -> _Reads:
        """Check sizes and who owns the metadata, create the parent nodes ``changes`` need, and read
        what the multi must know.

        Every multi this store sends (alter, apply, rollback, rollouts and their records) is
        built on what this returns, so the ownership check here covers every write; it comes
        before the first node is created. Raises :class:`~configctl.errors.MigrationInProgress`.
        """
        for change in changes:
            size = len(change.data)
            if size > MAX_CONFIG_BYTES:
                raise InvalidInput(
                    f"{change.entity.label}: the config would be {size:,} bytes; ZooKeeper takes at most "
                    f"{MAX_CONFIG_BYTES:,} in one transaction with its notification; nothing was written"
                )
        owner, controller_epoch = read_metadata_owner(self.session)
        owner.check_writable()
        self.session.ensure_path(CHANGES_PATH)
        for parent in dict.fromkeys(change.entity.znode.rsplit("/", 1)[0] for change in changes):
            self.session.ensure_path(parent)
        missing = self._missing_history_dirs(changes) if self.history_limit > 0 else set()
        return _Reads(missing, self._removals(changes), controller_epoch)

    def _removals(self, changes: Sequence[Change]) -> dict[Entity, tuple[tuple[str, int], ...]]:
        """Quota and IP nodes left empty by ``changes`` that Kafka 3.5+ deletes (``tryCleanQuotaNodes``).

        A node is deleted only if it has no children; a user+client node's ``clients`` directory
        goes with it when it was the only client, and the user node too when that leaves it with
        no config and no other child. Brokers of every version read a missing node as an empty
        config, so the notification still carries the change.
        """
        emptied = [
            c
            for c in changes
            if c.expected_version >= 0
            and c.exact is None
            and (c.remove_node or (not c.config and c.entity.type in CLEANED_TYPES))
        ]
        if not emptied:
            return {}
        others = {c.entity for c in changes}
        kids = self.session.children_many([c.entity.znode for c in emptied])
        result: dict[Entity, tuple[tuple[str, int], ...]] = {}
        for change, children in zip(emptied, kids, strict=True):
            if children:
                continue
            paths = [(change.entity.znode, change.expected_version)]
            entity = change.entity
            if entity.client is not None:
                user_path = f"{CONFIG_ROOT}/users/{entity.stored_name}"
                clients_path = f"{user_path}/clients"
                user_entity = Entity(EntityType.USERS, entity.name, literal=entity.literal)
                if self.session.children(clients_path) == [entity.stored_client]:
                    paths.append((clients_path, -1))
                    user = self.session.get(user_path)
                    if (
                        user is not None
                        and user_entity not in others
                        and self.session.children(user_path) == ["clients"]
                        and _is_empty_config(user[0])
                    ):
                        paths.append((user_path, user[1].version))
            result[entity] = tuple(paths)
        return result

    def _prepare(
        self, changes: Sequence[Change], reason: str, reads: _Reads, extra: Sequence[NodeOp] = ()
    ) -> _Prepared:
        """Build the multi for ``changes`` and ``extra`` (no I/O: :meth:`_before_writes` did the reads)."""
        now_ms = int(time.time() * 1000)
        acls = self.session.acls
        new_history_dirs: set[str] = set()
        transaction = self.session.transaction()
        if reads.controller_epoch is not None:
            transaction.check(CONTROLLER_EPOCH_PATH, reads.controller_epoch)
        notification_ops: list[int] = []
        for change in changes:
            entity = change.entity
            data = change.data
            removal = reads.removals.get(entity)
            if removal is not None:
                for path, version in removal:
                    transaction.delete(path, version=version)
                new_version = -1
            elif change.expected_version < 0:
                transaction.create(entity.znode, data, acl=acls.acl_for(entity.znode))
                new_version = version_after(change.expected_version)
            else:
                transaction.set_data(entity.znode, data, version=change.expected_version)
                new_version = version_after(change.expected_version)
            notification_ops.append(len(transaction.operations))
            transaction.create(
                NOTIFICATION_PATH_PREFIX,
                encode_notification(entity),
                acl=acls.acl_for(CHANGES_PATH + "/"),
                sequence=True,
            )
            if self.history_limit > 0:
                directory = HistoryZNodes.directory(entity)
                record = _history_record(change, new_version, now_ms, self.identity, reason, len(data))
                if directory in reads.missing_history_dirs:
                    new_history_dirs.add(directory)
                    # Created in the same multi, holding this first record itself (one node fewer per
                    # entity): an entity's history directory only ever appears with a write to that
                    # entity, which this multi's version check also guards.
                    transaction.create(directory, record, acl=acls.acl_for(directory))
                else:
                    transaction.create(
                        HistoryZNodes.sequential_path(entity, new_version),
                        record,
                        acl=acls.acl_for(directory + "/"),
                        sequence=True,
                    )
        for op in extra:
            if op.action == "create":
                transaction.create(op.path, op.data, acl=acls.acl_for(op.path), ephemeral=op.ephemeral)
            elif op.action == "set":
                transaction.set_data(op.path, op.data, version=op.version)
            elif op.action == "delete":
                transaction.delete(op.path, version=op.version)
            elif op.action == "check":
                transaction.check(op.path, op.version)
            else:
                raise ValueError(f"unknown node operation {op.action!r}")
        return _Prepared(
            list(changes),
            transaction,
            notification_ops,
            new_history_dirs,
            reads.removals,
            reads.controller_epoch is not None,
        )

    def _finish(self, prepared: _Prepared, results: list[Any]) -> list[Committed]:
        """Turn a multi's results into :class:`Committed` records, or the error it failed with."""
        changes = prepared.changes
        failures = [r for r in results if isinstance(r, Exception)]
        if failures:
            real = [f for f in failures if not isinstance(f, RolledBackError)]
            first = real[0] if real else failures[0]
            if isinstance(first, (BadVersionError, NodeExistsError, NoNodeError)):
                for change in changes:
                    self._written.pop(change.entity, None)
                    # A retry must not trust what this attempt believed about history directories.
                    self.session.forget_path(HistoryZNodes.directory(change.entity))
                if prepared.controller_checked and results[0] is first:
                    # A controller election since the ownership read: the retry reads it again.
                    raise VersionConflict(f"{CONTROLLER_EPOCH_PATH} moved: the cluster's controller changed")
                raise VersionConflict(str(first))
            if isinstance(first, NoAuthError):
                raise PermissionDenied(
                    "ZooKeeper refused the write: no permission (check --zk-auth / --zk-sasl); nothing was written"
                )
            raise ZooKeeperUnavailable(f"ZooKeeper rejected the write: {type(first).__name__}")
        self.session.remember_paths(prepared.new_history_dirs)
        committed = []
        for index, change in zip(prepared.notification_ops, changes, strict=True):
            notification_path = results[index]
            new_version = -1 if change.entity in prepared.removals else version_after(change.expected_version)
            committed.append(
                Committed(change.entity, new_version, change_number(notification_path.rsplit("/", 1)[1]))
            )
            self._written[change.entity] = Stored(change.entity, dict(change.config), new_version)
        if self.history_limit > 0:
            # A node's history holds at most one record per version, so it can only outgrow
            # the limit once the version reaches it: skip the listing round trip before that.
            self._trim_histories([done.entity for done in committed if done.version >= self.history_limit])
        return committed

    def _missing_history_dirs(self, changes: Sequence[Change]) -> set[str]:
        """History directories of ``changes`` that do not exist yet (their parents are made here).

        Checked with one multiRead per thousand entities rather than one ``exists`` round trip
        each: a bulk apply of new topics would otherwise spend most of its time here.
        """
        unknown = list(dict.fromkeys(HistoryZNodes.directory(c.entity) for c in changes))
        unknown = [path for path in unknown if not self.session.knows_path(path)]
        for parent in dict.fromkeys(path.rsplit("/", 1)[0] for path in unknown):
            self.session.ensure_path(parent)
        missing = set()
        for path, found in zip(unknown, self.session.get_many(unknown), strict=True):
            if found is None:
                missing.add(path)
            else:
                self.session.remember_paths([path])
        return missing

    # -- history --------------------------------------------------------------------------------

    def validate(self, changes: Sequence[Change]) -> None:
        """Nothing else validates a ZooKeeper write: configctl's own checks were the whole of it."""

    def record_history(self, change: Change, version: int, *, reason: str = "") -> None:
        """Record a write someone else committed for us (a broker, through its Admin API): the
        history record of ``change`` at ``version``, alone, as the write's own multi would have."""
        if self.history_limit <= 0 or version < 0:
            return
        entity = change.entity
        directory = HistoryZNodes.directory(entity)
        record = _history_record(
            change, version, int(time.time() * 1000), self.identity, reason, len(change.data)
        )
        missing = self._missing_history_dirs([change])
        acls = self.session.acls
        with translate_errors("record the write in configctl's history"):
            if directory in missing:
                self.session.client.create(directory, record, acl=acls.acl_for(directory))
                self.session.remember_paths([directory])
            else:
                self.session.client.create(
                    HistoryZNodes.sequential_path(entity, version),
                    record,
                    acl=acls.acl_for(directory + "/"),
                    sequence=True,
                )
        if version >= self.history_limit:
            self._trim_histories([entity])

    def history(self, entity: Entity) -> list[HistoryRecord]:
        """Recorded writes of an entity, newest first (malformed records are skipped with a warning).

        The entity's first recorded write is the history directory's own data (it is created with
        that write, one node fewer per entity); every later write is a child record.
        """
        return self.histories([entity])[entity.path]

    def histories(self, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
        """:meth:`history` of each entity: every listing pipelined, then every record (the fleet's
        change feed reads thousands of entities in a few round trips, not one each)."""
        directories = [HistoryZNodes.directory(e) for e in entities]
        listed = self.session.children_many(directories)
        wanted: list[tuple[int, str, str]] = []  # (entity index, record name, node path)
        for index, (directory, names) in enumerate(zip(directories, listed, strict=True)):
            records = sorted((n for n in names or () if HistoryZNodes.is_record(n)), key=HistoryZNodes.order)
            wanted.append((index, "", directory))
            wanted.extend((index, name, f"{directory}/{name}") for name in records)
        found = self.session.get_many([path for _, _, path in wanted])
        result: dict[str, list[HistoryRecord]] = {e.path: [] for e in entities}
        for (index, name, _), node in zip(wanted, found, strict=True):
            if node is None or not node[0]:
                continue
            try:
                result[entities[index].path].append(HistoryZNodes.decode(node[0]))
            except InvalidInput:
                log.warning("skipping malformed history record %s/%s", directories[index], name)
        for records in result.values():
            records.reverse()
        return result

    def history_entities(self) -> list[Entity]:
        """Every entity with a history directory, deleted ones included (listings pipelined; a
        directory that names no entity is skipped)."""
        root = HistoryZNodes.ROOT
        types = [t for t in EntityType if t.value in self.session.children(root)]
        listed = self.session.children_many([f"{root}/{t.value}" for t in types])
        paths: list[str] = []
        users: list[str] = []
        for etype, names in zip(types, listed, strict=True):
            for name in names or ():
                paths.append(f"{etype.value}/{name}")
                if etype.nests_clients:
                    users.append(name)
        clients = self.session.children_many([f"{root}/users/{u}/clients" for u in users])
        for user, names in zip(users, clients, strict=True):
            paths.extend(f"users/{user}/clients/{c}" for c in names or ())
        found = []
        for path in paths:
            try:
                found.append(Entity.from_path(path))
            except InvalidInput:
                continue
        return found

    def notification_times(self) -> list[tuple[int, str, int]]:
        """Each notification still in ``/config/changes``: its number, entity path and ctime."""
        present = self.notifications()
        nodes = self.session.get_many([f"{CHANGES_PATH}/{n.name}" for n in present], node_errors=True)
        result = []
        for notification, node in zip(present, nodes, strict=True):
            if node is None or isinstance(node, Exception):
                continue
            try:
                path = decode_notification(node[0]).path
            except InvalidInput:
                continue
            result.append((notification.number, path, int(node[1].ctime)))
        return result

    def _trim_histories(self, entities: Sequence[Entity]) -> None:
        """Keep the newest ``history_limit`` records of each entity (listings and deletes pipelined)."""
        if not entities:
            return
        directories = [HistoryZNodes.directory(e) for e in entities]
        excess: list[str] = []
        cleared: list[str] = []
        listed = self.session.children_many(directories)
        heads = self.session.get_many(directories)
        for directory, names, head in zip(directories, listed, heads, strict=True):
            records = sorted((n for n in names or () if HistoryZNodes.is_record(n)), key=HistoryZNodes.order)
            with_head = len(records) + (1 if head is not None and head[0] else 0)
            surplus = max(0, with_head - self.history_limit)
            if head is not None and head[0] and surplus:
                cleared.append(directory)  # the directory's own record is the oldest: it goes first
                surplus -= 1
            excess.extend(f"{directory}/{n}" for n in records[:surplus])
        for directory in cleared:
            with translate_errors(f"trim {directory}"):
                self.client.set_async(directory, b"").get(timeout=self.timeout)
        self.session.delete_nodes(excess)

    # -- notifications --------------------------------------------------------------------------

    def notifications(self) -> list[Notification]:
        """Change notifications currently in /config/changes, oldest first."""
        result = []
        for name in self.session.children(CHANGES_PATH):
            if name.startswith(NOTIFICATION_PREFIX):
                try:
                    result.append(Notification(name, change_number(name)))
                except InvalidInput:
                    continue
        result.sort(key=lambda n: n.number)
        return result

    def latest_change_number(self) -> int | None:
        found = self.notifications()
        return found[-1].number if found else None

    def notified_paths(self, notifications: Sequence[Notification]) -> list[str]:
        """The entity path each of ``notifications`` names (gone, unreadable or malformed ones left out)."""
        found = self.session.get_many([f"{CHANGES_PATH}/{n.name}" for n in notifications], node_errors=True)
        paths = []
        for item in found:
            if item is None or isinstance(item, Exception):
                continue
            try:
                paths.append(decode_notification(item[0]).path)
            except InvalidInput:
                continue
        return paths

    # -- the fleet (what the listeners publish: :mod:`configctl.zk.fleetstate`) -------------------

    def broker_state(self, broker_id: int | str) -> dict[str, Any] | None:
        return self._fleet.broker_state(broker_id)

    def broker_states(self) -> dict[int, dict[str, Any]]:
        return self._fleet.broker_states()

    def fleet_records(self) -> dict[int, dict[str, Any]]:
        return self._fleet.fleet_records()

    def watch_broker_state(self, broker_id: int, on_state: Callable[[bytes | None], bool]) -> None:
        self._fleet.watch_broker_state(broker_id, on_state)

    def retire_broker(self, broker_id: int) -> bool:
        return self._fleet.retire(broker_id)


def read_metadata_owner(session: ZkSession) -> tuple[MetadataOwner, int | None]:
    """Who owns the cluster's metadata (``/controller``, ``/migration``) and ``/controller_epoch``'s
    version (None when absent), read in one round (one multiRead where the server has it)."""
    controller, migration, epoch = session.get_many([*OWNER_PATHS, CONTROLLER_EPOCH_PATH])
    owner = metadata_owner(
        None if controller is None else controller[0], None if migration is None else migration[0]
    )
    return owner, None if epoch is None else epoch[1].version


def _history_record(
    change: Change, version: int, now_ms: int, identity: str, reason: str, config_bytes: int
) -> bytes:
    """The record of one change: the whole config when it fits beside the node, else its digest."""
    changed = {
        key: change.previous.get(key)
        for key in sorted(set(change.previous) | set(change.config))
        if change.previous.get(key) != change.config.get(key)
    }
    record = HistoryRecord(
        change.entity.path, version, now_ms, identity, reason, dict(change.config), changed
    )
    data = HistoryZNodes.encode(record)
    if config_bytes + len(data) <= MAX_MULTI_BYTES:
        return data
    digest = hashlib.sha256(change.data).hexdigest()
    small = HistoryRecord(change.entity.path, version, now_ms, identity, reason, None, {}, digest)
    return HistoryZNodes.encode(small)


def _change_size(change: Change) -> int:
    """Bytes one change adds to a multi: config node, history record (config + delta), paths."""
    config = _config_size(change.config)
    delta = sum(len(k) + len(v) + 8 for k, v in change.previous.items() if change.config.get(k) != v)
    return config * 2 + delta + len(change.entity.znode) * 4 + 400


def _config_size(config: dict[str, str]) -> int:
    """The exact length of ``encode_entity_config(config)``, without encoding in the usual case.

    Batching a bulk apply sizes every change; plain ASCII keys and values (nearly all configs)
    need no JSON escaping, so their encoded length is just the characters plus punctuation.
    """
    size = len('{"version":1,"config":{}}') - 1
    for key, value in config.items():
        if not (_plain_ascii(key) and _plain_ascii(value)):
            return len(encode_entity_config(config))
        size += len(key) + len(value) + 6  # "key":"value",
    return size if config else size + 1


def _plain_ascii(text: str) -> bool:
    return (
        isinstance(text, str)
        and text.isascii()
        and text.isprintable()
        and '"' not in text
        and "\\" not in text
    )


def batches(changes: Sequence[Change]) -> Iterator[list[Change]]:
    """Split ``changes`` into multis below ZooKeeper's request size (what :meth:`commit_batches` uses)."""
    batch: list[Change] = []
    size = ops = 0
    for change in changes:
        cost = _change_size(change)
        change_ops = OPS_PER_CHANGE if change.config else _OPS_PER_REMOVAL
        if batch and (size + cost > MAX_MULTI_BYTES or ops + change_ops > MAX_MULTI_OPS):
            yield batch
            batch, size, ops = [], 0, 0
        batch.append(change)
        size += cost
        ops += change_ops
    if batch:
        yield batch


def _default_identity() -> str:
    try:
        user = getpass.getuser()
    except Exception:  # getuser raises various errors when no user name can be found
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def _is_empty_config(data: bytes) -> bool:
    try:
        return not decode_entity_config(data)
    except InvalidInput:
        return False
