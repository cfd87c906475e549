"""The one place configctl reads and writes ZooKeeper (besides the listener's watches).

Everything here speaks Kafka's layout (Contract 1): entity configs under ``/config``,
sequential change notifications under ``/config/changes``, plus configctl's own nodes
under ``/configctl`` (history, broker state). A write is one ZooKeeper multi holding the
config node (version-checked), its notification and its history record, so a reader never
sees a config without its notification, and two writers never silently overwrite each other.
Kazoo exceptions never leave this module: they become :mod:`configctl.errors` classes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS as _KAZOO_EXCEPTIONS
from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    SessionExpiredError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import (
    MultiHeader,
    int_struct,
    multiheader_struct,
    read_buffer,
    stat_struct,
    write_string,
)
from kazoo.protocol.states import ZnodeStat
from kazoo.retry import KazooRetry
from kazoo.security import OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_digest_acl

from configctl.entities import CONFIG_ROOT, DEFAULT, Entity, EntityType
from configctl.errors import (
    InvalidInput,
    NotFound,
    PermissionDenied,
    ZooKeeperUnavailable,
)
from configctl.znodes import (
    CHANGES_PATH,
    NOTIFICATION_PREFIX,
    change_number,
    decode_entity_config,
    encode_entity_config,
    encode_notification,
)

log = logging.getLogger(__name__)

CONFIGCTL_ROOT = "/configctl"
HISTORY_ROOT = f"{CONFIGCTL_ROOT}/history"
BROKER_STATE_ROOT = f"{CONFIGCTL_ROOT}/brokers"
HISTORY_PREFIX = "v"
DEFAULT_HISTORY_LIMIT = 50
# ZooKeeper's jute.maxbuffer is 1 MiB by default; keep each multi well below it.
MAX_MULTI_BYTES = 900_000
MAX_MULTI_OPS = 1000
# Nodes per multiRead request: a config node is small, so a chunk's response stays far below 1 MiB.
READ_CHUNK = 1000

# Paths whose configs hold secrets (SCRAM credentials, encrypted passwords): not world-readable.
_SENSITIVE_TYPES = (EntityType.USERS, EntityType.BROKERS)


class VersionConflict(Exception):
    """Internal: the version check of a multi failed (someone else wrote first)."""


@dataclass(frozen=True)
class Stored:
    """An entity's config as it is in ZooKeeper; ``version`` is -1 when the node does not exist."""

    entity: Entity
    config: dict[str, str]
    version: int

    @property
    def exists(self) -> bool:
        return self.version >= 0


@dataclass(frozen=True)
class Change:
    """One entity's new config, to be written only if the node still has ``expected_version``."""

    entity: Entity
    config: dict[str, str]
    expected_version: int
    previous: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Committed:
    entity: Entity
    version: int
    change_number: int


@dataclass(frozen=True)
class _Prepared:
    """A multi built by :meth:`ZkStore._prepare`, not yet sent."""

    changes: list[Change]
    transaction: Any
    notification_ops: list[int]
    new_history_dirs: set[str]


@dataclass(frozen=True)
class HistoryEntry:
    """One recorded write: the config before and after, who made it and why."""

    version: int
    time_ms: int
    identity: str
    reason: str
    config: dict[str, str]
    previous: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "time_ms": self.time_ms,
            "identity": self.identity,
            "reason": self.reason,
            "config": self.config,
        }


@dataclass(frozen=True)
class Notification:
    """A change notification node: its name, change number and creation time."""

    name: str
    number: int
    ctime_ms: int | None = None


def parse_auth(auth: str | None) -> tuple[str, str] | None:
    """``digest:USER:PASSWORD`` -> (user, password). Only the digest scheme is supported."""
    if not auth:
        return None
    scheme, _, credential = auth.partition(":")
    user, _, password = credential.partition(":")
    if scheme != "digest" or not user or not password:
        raise InvalidInput("--zk-auth must look like digest:USER:PASSWORD")
    return user, password


class ZkStore:
    """A connection to ZooKeeper with configctl's read and write operations on it."""

    def __init__(
        self,
        connect: str,
        *,
        auth: str | None = None,
        timeout: float = 10.0,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
        identity: str | None = None,
        client: KazooClient | None = None,
    ) -> None:
        self.connect = connect
        self.timeout = timeout
        self.history_limit = history_limit
        credentials = parse_auth(auth)
        self._acl_owner = make_digest_acl(*credentials, all=True) if credentials else None
        self.identity = identity or (f"digest:{credentials[0]}" if credentials else _default_identity())
        self._owns_client = client is None
        if client is None:
            auth_data = [("digest", f"{credentials[0]}:{credentials[1]}")] if credentials else None
            client = KazooClient(
                hosts=connect,
                timeout=timeout,
                auth_data=auth_data,
                connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
                command_retry=KazooRetry(max_tries=3, deadline=timeout, max_delay=1.0),
            )
        self.client = client
        self._known_paths: set[str] = set()
        self._multi_read_supported = True
        # What this store last wrote per entity: a writer may start from it instead of
        # re-reading (the version check still catches anyone who wrote since).
        self._written: dict[Entity, Stored] = {}

    # -- connection ---------------------------------------------------------------------------

    def open(self) -> ZkStore:
        if not self.client.connected:
            try:
                self.client.start(timeout=self.timeout)
            except KazooTimeoutError:
                with contextlib.suppress(Exception):
                    self.client.stop()
                    self.client.close()
                raise ZooKeeperUnavailable(
                    f"cannot reach ZooKeeper at {self.connect} within {self.timeout:g}s"
                ) from None
            except AuthFailedError:
                raise PermissionDenied(
                    f"ZooKeeper at {self.connect} rejected the --zk-auth credentials"
                ) from None
            except ValueError as exc:
                raise InvalidInput(f"bad ZooKeeper connect string {self.connect!r}: {exc}") from None
        return self

    def close(self) -> None:
        if self._owns_client:
            with contextlib.suppress(Exception):
                self.client.stop()
                self.client.close()

    def __enter__(self) -> ZkStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ACLs ---------------------------------------------------------------------------------

    def acl_for(self, path: str) -> list[Any]:
        """Creator-only for secrets, creator-writes/world-reads elsewhere; open without --zk-auth."""
        if self._acl_owner is None:
            return list(OPEN_ACL_UNSAFE)
        if _is_sensitive_path(path):
            return [self._acl_owner]
        return [self._acl_owner, *READ_ACL_UNSAFE]

    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its parents (empty data), each with the ACL its place calls for."""
        if path in self._known_paths:
            return
        with translate_errors(f"create {path}"):
            if self.client.retry(self.client.exists, path) is None:
                parts = path.strip("/").split("/")
                for depth in range(1, len(parts) + 1):
                    prefix = "/" + "/".join(parts[:depth])
                    try:
                        self.client.retry(self.client.create, prefix, b"", acl=self.acl_for(prefix))
                    except NodeExistsError:
                        continue
                    except NoNodeError:
                        # Only a missing chroot makes the first level's parent vanish.
                        raise NotFound(
                            f"the chroot {self.client.chroot or '/'} of {self.connect} does not exist in ZooKeeper"
                        ) from None
        self._known_paths.add(path)

    # -- reads --------------------------------------------------------------------------------

    def read(self, entity: Entity) -> Stored:
        """The entity's config and znode version (version -1 and {} when absent)."""
        with translate_errors(f"read {entity.znode}"):
            try:
                data, stat = self.client.retry(self.client.get, entity.znode)
            except NoNodeError:
                return Stored(entity, {}, -1)
        try:
            config = decode_entity_config(data)
        except InvalidInput as exc:
            raise InvalidInput(f"{entity.znode} holds a malformed config: {exc}") from None
        return Stored(entity, config, stat.version)

    def last_written(self, entity: Entity) -> Stored | None:
        """The config and version this store itself last committed for ``entity``, if any."""
        return self._written.get(entity)

    def read_raw(self, entity: Entity) -> tuple[bytes | None, int]:
        """The exact bytes and version of an entity's node (None, -1 when absent)."""
        with translate_errors(f"read {entity.znode}"):
            try:
                data, stat = self.client.retry(self.client.get, entity.znode)
            except NoNodeError:
                return None, -1
        return data, stat.version

    def entities(self, entity_type: EntityType) -> list[Entity]:
        """Every entity of a type with a node under /config (users include their nested clients)."""
        root = f"{CONFIG_ROOT}/{entity_type.value}"
        result: list[Entity] = []
        for stored_name in self._children(root):
            try:
                result.append(Entity.from_path(f"{entity_type.value}/{stored_name}"))
            except InvalidInput:
                log.warning("skipping %s/%s: not a valid entity name", root, stored_name)
                continue
            if entity_type is EntityType.USERS:
                for client in self._children(f"{root}/{stored_name}/clients"):
                    with contextlib.suppress(InvalidInput):
                        result.append(Entity.from_path(f"users/{stored_name}/clients/{client}"))
        return sorted(result, key=_entity_sort_key)

    def read_many(self, entities: Iterable[Entity]) -> list[Stored]:
        """Read many nodes in few round trips (ZooKeeper multiRead, or pipelined reads)."""
        wanted = list(entities)
        result = []
        for entity, found in zip(wanted, self.get_many([e.znode for e in wanted]), strict=True):
            if found is None:
                result.append(Stored(entity, {}, -1))
                continue
            data, version = found
            try:
                result.append(Stored(entity, decode_entity_config(data), version))
            except InvalidInput as exc:
                raise InvalidInput(f"{entity.znode} holds a malformed config: {exc}") from None
        return result

    def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, int] | None]:
        """Data and version of each node (None when absent), in the order given.

        kazoo pays a system call per request, so thousands of single reads take seconds; one
        multiRead (ZooKeeper 3.6+) of up to :data:`READ_CHUNK` nodes costs one request. Servers
        without multiRead get pipelined single reads instead.
        """
        if self._multi_read_supported:
            try:
                return self._multi_get(paths)
            except UnimplementedError:
                self._multi_read_supported = False
        return self._pipelined_get(paths)

    def _multi_get(self, paths: Sequence[str]) -> list[tuple[bytes, int] | None]:
        chroot = self.client.chroot
        pending = []
        for start in range(0, len(paths), READ_CHUNK):
            chunk = paths[start : start + READ_CHUNK]
            request = _MultiRead(tuple(_prefix_root(chroot, path) for path in chunk))
            async_result = self.client.handler.async_result()
            self.client._call(request, async_result)  # kazoo has no public multiRead
            pending.append((chunk, async_result))
        result: list[tuple[bytes, int] | None] = []
        for chunk, async_result in pending:
            with translate_errors(f"read {len(paths)} nodes"):
                answers = async_result.get(timeout=self.timeout)
            for path, answer in zip(chunk, answers, strict=True):
                if isinstance(answer, NoNodeError):
                    result.append(None)
                elif isinstance(answer, Exception):
                    with translate_errors(f"read {path}"):
                        raise answer
                else:
                    result.append(answer)
        return result

    def _pipelined_get(self, paths: Sequence[str]) -> list[tuple[bytes, int] | None]:
        pending = [(path, self.client.get_async(path)) for path in paths]
        result: list[tuple[bytes, int] | None] = []
        for path, async_result in pending:
            with translate_errors(f"read {path}"):
                try:
                    data, stat = async_result.get(timeout=self.timeout)
                except NoNodeError:
                    result.append(None)
                    continue
            result.append((data, stat.version))
        return result

    def read_type(self, entity_type: EntityType) -> list[Stored]:
        return self.read_many(self.entities(entity_type))

    def read_all(self) -> list[Stored]:
        """Every entity config under /config (all five types)."""
        stored: list[Stored] = []
        for entity_type in EntityType:
            stored.extend(self.read_type(entity_type))
        return stored

    def _children(self, path: str) -> list[str]:
        with translate_errors(f"list {path}"):
            try:
                return sorted(self.client.retry(self.client.get_children, path))
            except NoNodeError:
                return []

    # -- writes -------------------------------------------------------------------------------

    def commit(self, changes: Sequence[Change], *, reason: str = "") -> list[Committed]:
        """Write every change in ONE multi: config node (version-checked) + notification + history.

        Raises :class:`VersionConflict` if any node moved since it was read (nothing is written
        then), or a :mod:`configctl.errors` class for connection and permission problems.
        """
        if not changes:
            return []
        prepared = self._prepare(changes, reason, self._before_writes(changes))
        with translate_errors("write configs"):
            results = prepared.transaction.commit()
        return self._finish(prepared, results)

    def commit_batches(
        self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2
    ) -> Iterator[list[Committed]]:
        """Commit many changes in as few multis as ZooKeeper's request size allows, yielding each batch.

        Up to ``in_flight`` multis are outstanding at once, so the next one is built while
        ZooKeeper applies the previous one; every read (parents, history directories) is done
        before the first is sent. Each multi is still all or nothing and version-checked.
        When one fails with :class:`VersionConflict` no further multi is sent; those already
        sent are waited for (and yielded if they committed), then the conflict is raised.
        """
        queue: deque[tuple[_Prepared, Any]] = deque()
        conflict: VersionConflict | None = None
        # Every read happens now: a read sent while a multi is in flight waits for that multi,
        # which would stop the next one being built meanwhile.
        missing_history_dirs = self._before_writes(changes) if changes else set()

        def settle() -> list[Committed] | None:
            nonlocal conflict
            prepared, async_result = queue.popleft()
            try:
                with translate_errors("write configs"):
                    results = async_result.get()
                return self._finish(prepared, results)
            except VersionConflict as exc:
                conflict = conflict or exc
                return None

        for batch in batches(changes):
            if conflict is not None:
                break
            prepared = self._prepare(batch, reason, missing_history_dirs)
            with translate_errors("write configs"):
                queue.append((prepared, prepared.transaction.commit_async()))
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

    def _before_writes(self, changes: Sequence[Change]) -> set[str]:
        """Create the parent nodes ``changes`` need; return the history directories still missing."""
        self.ensure_path(CHANGES_PATH)
        for parent in dict.fromkeys(change.entity.znode.rsplit("/", 1)[0] for change in changes):
            self.ensure_path(parent)
        return self._missing_history_dirs(changes) if self.history_limit > 0 else set()

    def _prepare(self, changes: Sequence[Change], reason: str, missing_history_dirs: set[str]) -> _Prepared:
        """Build the multi for ``changes`` (no I/O: :meth:`_before_writes` did the reads)."""
        now_ms = int(time.time() * 1000)
        new_history_dirs: set[str] = set()
        transaction = self.client.transaction()
        notification_ops: list[int] = []
        for change in changes:
            entity = change.entity
            data = encode_entity_config(change.config)
            if change.expected_version < 0:
                transaction.create(entity.znode, data, acl=self.acl_for(entity.znode))
                new_version = 0
            else:
                transaction.set_data(entity.znode, data, version=change.expected_version)
                new_version = change.expected_version + 1
            notification_ops.append(len(transaction.operations))
            transaction.create(
                f"{CHANGES_PATH}/{NOTIFICATION_PREFIX}",
                encode_notification(entity),
                acl=self.acl_for(CHANGES_PATH + "/"),
                sequence=True,
            )
            if self.history_limit > 0:
                record = {
                    "entity_path": entity.path,
                    "version": new_version,
                    "time_ms": now_ms,
                    "identity": self.identity,
                    "reason": reason,
                    "previous": change.previous,
                    "config": change.config,
                }
                history = self.history_path(entity)
                if history in missing_history_dirs:
                    new_history_dirs.add(history)
                    # Created in the same multi: an entity's history directory only ever appears
                    # with a write to that entity, which this multi's version check also guards.
                    transaction.create(history, b"", acl=self.acl_for(history))
                transaction.create(
                    f"{history}/{HISTORY_PREFIX}{new_version:010d}_",
                    json.dumps(record, sort_keys=True, separators=(",", ":")).encode(),
                    acl=self.acl_for(history + "/"),
                    sequence=True,
                )
        return _Prepared(list(changes), transaction, notification_ops, new_history_dirs)

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
                    self._known_paths.discard(self.history_path(change.entity))
                raise VersionConflict(str(first))
            if isinstance(first, NoAuthError):
                raise PermissionDenied("ZooKeeper refused the write: no permission (check --zk-auth)")
            raise ZooKeeperUnavailable(f"ZooKeeper rejected the write: {type(first).__name__}")
        self._known_paths.update(prepared.new_history_dirs)
        committed = []
        for index, change in zip(prepared.notification_ops, changes, strict=True):
            notification_path = results[index]
            new_version = 0 if change.expected_version < 0 else change.expected_version + 1
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
        unknown = list(dict.fromkeys(self.history_path(c.entity) for c in changes))
        unknown = [path for path in unknown if path not in self._known_paths]
        for parent in dict.fromkeys(path.rsplit("/", 1)[0] for path in unknown):
            self.ensure_path(parent)
        missing = set()
        for path, found in zip(unknown, self.get_many(unknown), strict=True):
            if found is None:
                missing.add(path)
            else:
                self._known_paths.add(path)
        return missing

    # -- history ------------------------------------------------------------------------------

    @staticmethod
    def history_path(entity: Entity) -> str:
        return f"{HISTORY_ROOT}/{entity.path}"

    def history(self, entity: Entity) -> list[HistoryEntry]:
        """Recorded writes of an entity, newest first."""
        path = self.history_path(entity)
        names = [n for n in self._children(path) if n.startswith(HISTORY_PREFIX)]
        pending = [(name, self.client.get_async(f"{path}/{name}")) for name in names]
        entries = []
        for name, async_result in pending:
            with translate_errors(f"read {path}/{name}"):
                try:
                    data, _ = async_result.get(timeout=self.timeout)
                except NoNodeError:
                    continue
            try:
                record = json.loads(data)
                entries.append(
                    HistoryEntry(
                        version=int(record["version"]),
                        time_ms=int(record["time_ms"]),
                        identity=str(record.get("identity", "")),
                        reason=str(record.get("reason", "")),
                        config=dict(record["config"]),
                        previous=dict(record.get("previous", {})),
                    )
                )
            except (ValueError, KeyError, TypeError):
                log.warning("skipping malformed history record %s/%s", path, name)
        entries.sort(key=lambda e: (e.version, e.time_ms), reverse=True)
        return entries

    def _trim_histories(self, entities: Sequence[Entity]) -> None:
        """Keep the newest ``history_limit`` records of each entity (listings and deletes pipelined)."""
        if not entities:
            return
        pending = [(path, self.client.get_children_async(path)) for path in map(self.history_path, entities)]
        excess: list[str] = []
        for path, async_result in pending:
            with translate_errors(f"list {path}"):
                try:
                    names = async_result.get(timeout=self.timeout)
                except NoNodeError:
                    continue
            records = sorted((n for n in names if n.startswith(HISTORY_PREFIX)), key=_history_order)
            excess.extend(f"{path}/{name}" for name in records[: max(0, len(records) - self.history_limit)])
        self.delete_nodes(excess)

    # -- notifications ------------------------------------------------------------------------

    def notifications(self) -> list[Notification]:
        """Change notifications currently in /config/changes, oldest first (no ctime)."""
        result = []
        for name in self._children(CHANGES_PATH):
            if name.startswith(NOTIFICATION_PREFIX):
                with contextlib.suppress(InvalidInput):
                    result.append(Notification(name, change_number(name)))
        result.sort(key=lambda n: n.number)
        return result

    def latest_change_number(self) -> int | None:
        found = self.notifications()
        return found[-1].number if found else None

    def ctime_ms(self, path: str) -> int | None:
        with translate_errors(f"stat {path}"):
            stat = self.client.retry(self.client.exists, path)
        return None if stat is None else stat.ctime

    def delete_nodes(self, paths: Iterable[str]) -> int:
        """Delete nodes pipelined, ignoring ones already gone (another process may race us)."""
        pending = [(path, self.client.delete_async(path)) for path in paths]
        deleted = 0
        for path, async_result in pending:
            try:
                async_result.get(timeout=self.timeout)
                deleted += 1
            except NoNodeError:
                continue
            except NoAuthError:
                raise PermissionDenied(f"ZooKeeper refused to delete {path}: no permission") from None
            except (ConnectionLoss, SessionExpiredError, KazooTimeoutError):
                raise ZooKeeperUnavailable(f"connection to ZooKeeper lost while deleting {path}") from None
        return deleted

    # -- broker state -------------------------------------------------------------------------

    def broker_states(self) -> dict[int, dict[str, Any]]:
        """The published state of every running listener (Contract 4), by broker id."""
        result = {}
        for name in self._children(BROKER_STATE_ROOT):
            state = self.broker_state(name)
            if state is not None:
                result[int(name)] = state
        return result

    def broker_state(self, broker_id: int | str) -> dict[str, Any] | None:
        path = f"{BROKER_STATE_ROOT}/{broker_id}"
        with translate_errors(f"read {path}"):
            try:
                data, _ = self.client.retry(self.client.get, path)
            except NoNodeError:
                return None
        try:
            return json.loads(data)
        except ValueError:
            return None

    # -- listener primitives (added for configctl.listener) --------------------------------------

    def get_many_raw(self, paths: Sequence[str], *, chunk: int = 5000) -> list[tuple[bytes, Any] | None]:
        """Raw ``(data, stat)`` of many nodes, pipelined in chunks; None where a node does not exist."""
        result: list[tuple[bytes, Any] | None] = []
        for start in range(0, len(paths), chunk):
            pending = [(path, self.client.get_async(path)) for path in paths[start : start + chunk]]
            for path, async_result in pending:
                with translate_errors(f"read {path}"):
                    try:
                        result.append(async_result.get(timeout=self.timeout))
                    except NoNodeError:
                        result.append(None)
        return result

    def children_many(self, paths: Sequence[str], *, chunk: int = 5000) -> list[list[str] | None]:
        """The children of many nodes, pipelined; None where a node does not exist."""
        result: list[list[str] | None] = []
        for start in range(0, len(paths), chunk):
            pending = [(path, self.client.get_children_async(path)) for path in paths[start : start + chunk]]
            for path, async_result in pending:
                with translate_errors(f"list {path}"):
                    try:
                        result.append(sorted(async_result.get(timeout=self.timeout)))
                    except NoNodeError:
                        result.append(None)
        return result

    def publish_ephemeral(self, path: str, data: bytes, *, owned: bool = False) -> None:
        """Make ``path`` an ephemeral node of this session holding ``data``.

        ``owned``: this session created it, so a plain set suffices. A node left by another
        session (a killed predecessor whose session has not expired yet) is replaced.
        """
        client = self.client
        with translate_errors(f"write {path}"):
            if owned:
                try:
                    client.set_async(path, data).get(timeout=self.timeout)
                    return
                except NoNodeError:
                    pass
            self.ensure_path(path.rsplit("/", 1)[0])
            for _ in range(5):
                try:
                    client.create_async(path, data, acl=self.acl_for(path), ephemeral=True).get(
                        timeout=self.timeout
                    )
                    return
                except NodeExistsError:
                    pass
                stat = client.exists_async(path).get(timeout=self.timeout)
                if stat is None:
                    continue
                session = client.client_id[0] if client.client_id else None
                if stat.ephemeralOwner == session:
                    client.set_async(path, data).get(timeout=self.timeout)
                    return
                log.warning(
                    "replacing %s, held by another ZooKeeper session (0x%x)", path, stat.ephemeralOwner
                )
                with contextlib.suppress(NoNodeError, BadVersionError):
                    client.delete_async(path, version=stat.version).get(timeout=self.timeout)
        raise ZooKeeperUnavailable(f"could not create {path}: another session keeps re-creating it")

    def delete_owned(self, path: str) -> bool:
        """Delete ``path`` if this session owns it (an ephemeral node); True when deleted."""
        client = self.client
        with translate_errors(f"delete {path}"):
            stat = client.exists_async(path).get(timeout=self.timeout)
            session = client.client_id[0] if client.client_id else None
            if stat is None or session is None or stat.ephemeralOwner != session:
                return False
            try:
                client.delete_async(path, version=stat.version).get(timeout=self.timeout)
            except (NoNodeError, BadVersionError):
                return False
        return True


@contextlib.contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Turn kazoo's exceptions into one-line configctl errors."""
    try:
        yield
    except NoAuthError:
        raise PermissionDenied(f"ZooKeeper refused to {action}: no permission (check --zk-auth)") from None
    except AuthFailedError:
        raise PermissionDenied("ZooKeeper rejected the --zk-auth credentials") from None
    except (ConnectionLoss, SessionExpiredError, KazooTimeoutError):
        raise ZooKeeperUnavailable(f"lost the connection to ZooKeeper while trying to {action}") from None
    except (NoNodeError, NodeExistsError, BadVersionError):
        raise
    except KazooException as exc:
        raise ZooKeeperUnavailable(f"ZooKeeper failed to {action}: {type(exc).__name__}") from None


def _is_sensitive_path(path: str) -> bool:
    for root in (CONFIG_ROOT, HISTORY_ROOT):
        for etype in _SENSITIVE_TYPES:
            if path.startswith(f"{root}/{etype.value}/"):
                return True
    return False


def _entity_sort_key(entity: Entity) -> tuple[Any, ...]:
    def part(name: str | None) -> tuple[int, str]:
        if name is None:
            return (0, "")
        return (1, "") if name == DEFAULT else (2, name)

    name_key: tuple[Any, ...] = part(entity.name)
    if entity.type is EntityType.BROKERS and entity.name != DEFAULT:
        name_key = (2, f"{int(entity.name):012d}")
    return (entity.type.value, name_key, part(entity.client))


def _history_order(name: str) -> tuple[int, int]:
    body = name[len(HISTORY_PREFIX) :]
    version, _, sequence = body.partition("_")
    try:
        return int(sequence or 0), int(version or 0)
    except ValueError:
        return (0, 0)


def _change_size(change: Change) -> int:
    """Bytes one change adds to a multi: config node, history record (config + previous), paths."""
    config = _config_size(change.config)
    previous = _config_size(change.previous) if change.previous else 0
    return config * 2 + previous + len(change.entity.znode) * 4 + 400


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


_OPS_PER_CHANGE = 4  # config node, notification, history directory (first write only), history record


def batches(changes: Sequence[Change]) -> Iterator[list[Change]]:
    """Split ``changes`` into multis below ZooKeeper's request size (what :meth:`commit_batches` uses)."""
    batch: list[Change] = []
    size = 0
    for change in changes:
        cost = _change_size(change)
        if batch and (size + cost > MAX_MULTI_BYTES or (len(batch) + 1) * _OPS_PER_CHANGE > MAX_MULTI_OPS):
            yield batch
            batch, size = [], 0
        batch.append(change)
        size += cost
    if batch:
        yield batch


def _default_identity() -> str:
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:  # getuser raises various errors when no user name can be found
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


class _MultiRead(tuple):  # type: ignore[type-arg]
    """ZooKeeper's multiRead (opcode 22) of GetData operations; kazoo only has write multis.

    Unlike a write multi, each operation succeeds or fails alone: the answer holds, per path,
    ``(data, version)`` or the exception for that path (NoNodeError when absent).
    """

    type = 22
    _GET_DATA = 4

    def serialize(self) -> bytes:
        body = bytearray()
        for path in self:
            body.extend(MultiHeader(self._GET_DATA, False, -1).serialize())
            body.extend(write_string(path))
            body.extend(b"\x00")  # watch: false
        body.extend(multiheader_struct.pack(-1, True, -1))
        return bytes(body)

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list[Any]:
        results: list[Any] = []
        header, offset = MultiHeader.deserialize(data, offset)
        while not header.done:
            if header.type == cls._GET_DATA:
                value, offset = read_buffer(data, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(data, offset))
                offset += stat_struct.size
                results.append((value or b"", stat.version))
            else:  # an error result: its code follows
                code = int_struct.unpack_from(data, offset)[0]
                offset += int_struct.size
                results.append(_KAZOO_EXCEPTIONS[code]())
            header, offset = MultiHeader.deserialize(data, offset)
        return results
