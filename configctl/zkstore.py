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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
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
)
from kazoo.handlers.threading import KazooTimeoutError
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
                    with contextlib.suppress(NodeExistsError):
                        self.client.retry(self.client.create, prefix, b"", acl=self.acl_for(prefix))
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
        """Read many nodes pipelined (one round trip of latency, not one per node)."""
        pending = [(entity, self.client.get_async(entity.znode)) for entity in entities]
        result = []
        for entity, async_result in pending:
            with translate_errors(f"read {entity.znode}"):
                try:
                    data, stat = async_result.get(timeout=self.timeout)
                except NoNodeError:
                    result.append(Stored(entity, {}, -1))
                    continue
            try:
                result.append(Stored(entity, decode_entity_config(data), stat.version))
            except InvalidInput as exc:
                raise InvalidInput(f"{entity.znode} holds a malformed config: {exc}") from None
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
        self.ensure_path(CHANGES_PATH)
        now_ms = int(time.time() * 1000)
        transaction = self.client.transaction()
        for change in changes:
            entity = change.entity
            self.ensure_path(entity.znode.rsplit("/", 1)[0])
            self.ensure_path(self.history_path(entity))
            data = encode_entity_config(change.config)
            if change.expected_version < 0:
                transaction.create(entity.znode, data, acl=self.acl_for(entity.znode))
                new_version = 0
            else:
                transaction.set_data(entity.znode, data, version=change.expected_version)
                new_version = change.expected_version + 1
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
                transaction.create(
                    f"{history}/{HISTORY_PREFIX}{new_version:010d}_",
                    json.dumps(record, sort_keys=True, separators=(",", ":")).encode(),
                    acl=self.acl_for(history + "/"),
                    sequence=True,
                )
        with translate_errors("write configs"):
            results = transaction.commit()
        failures = [r for r in results if isinstance(r, Exception)]
        if failures:
            real = [f for f in failures if not isinstance(f, RolledBackError)]
            first = real[0] if real else failures[0]
            if isinstance(first, (BadVersionError, NodeExistsError, NoNodeError)):
                for change in changes:
                    self._written.pop(change.entity, None)
                raise VersionConflict(str(first))
            if isinstance(first, NoAuthError):
                raise PermissionDenied("ZooKeeper refused the write: no permission (check --zk-auth)")
            raise ZooKeeperUnavailable(f"ZooKeeper rejected the write: {type(first).__name__}")
        committed = []
        step = 3 if self.history_limit > 0 else 2
        for index, change in enumerate(changes):
            notification_path = results[index * step + 1]
            new_version = 0 if change.expected_version < 0 else change.expected_version + 1
            committed.append(
                Committed(change.entity, new_version, change_number(notification_path.rsplit("/", 1)[1]))
            )
        if self.history_limit > 0:
            # A node's history holds at most one record per version, so it can only outgrow
            # the limit once the version reaches it: skip the listing round trip before that.
            for done in committed:
                if done.version >= self.history_limit:
                    self._trim_history(done.entity)
        return committed

    def commit_batches(self, changes: Sequence[Change], *, reason: str = "") -> Iterator[list[Committed]]:
        """Commit many changes in as few multis as ZooKeeper's request size allows, yielding each batch."""
        for batch in _batches(changes):
            yield self.commit(batch, reason=reason)

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

    def _trim_history(self, entity: Entity) -> None:
        path = self.history_path(entity)
        names = sorted((n for n in self._children(path) if n.startswith(HISTORY_PREFIX)), key=_history_order)
        excess = names[: max(0, len(names) - self.history_limit)]
        self.delete_nodes(f"{path}/{name}" for name in excess)

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


def require_entity(stored: Stored) -> Stored:
    if not stored.exists:
        raise NotFound(f"no config node for {stored.entity.display} at {stored.entity.znode}")
    return stored


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
    return len(encode_entity_config(change.config)) * 2 + len(change.entity.znode) * 3 + 400


def _batches(changes: Sequence[Change]) -> Iterator[list[Change]]:
    batch: list[Change] = []
    size = 0
    for change in changes:
        cost = _change_size(change)
        if batch and (size + cost > MAX_MULTI_BYTES or len(batch) * 3 + 3 > MAX_MULTI_OPS):
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
