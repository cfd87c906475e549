"""The embeddable broker-side listener: ZooKeeper + notification handling + manager + state.

A broker process embeds one :class:`ConfigListener`::

    from configctl.listener import ConfigListener

    with ConfigListener("zk1:2181,zk2:2181/kafka", broker_id=1, static_config="server.properties",
                        plugins=["examples.plugins.quota_enforcer:ClientQuotaEnforcer"]) as listener:
        listener.broker_config()["log.retention.ms"]      # EffectiveValue(value, source, synonyms)
        listener.topic_config("orders")["retention.ms"]
        listener.quota_config(user="alice", client="app1")

Everything that talks to ZooKeeper runs on the listener's worker thread; queries are served from
the manager's in-memory state under a lock, so they never wait for ZooKeeper and are safe from
any thread.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from configctl.configparse import load_properties_file
from configctl.entities import CONFIG_ROOT, DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput, ZooKeeperUnavailable, one_line
from configctl.listener.manager import DynamicConfigManager, EntityRead, RawNotification
from configctl.listener.notification_listener import (
    DEFAULT_CHANGE_EXPIRATION_MS,
    SequentialNotificationListener,
)
from configctl.listener.plugins import LoadedPlugin, load_plugins
from configctl.listener.state import SnapshotWriter, StatePublisher
from configctl.precedence import EffectiveValue
from configctl.zk.connection import ConnectionSettings
from configctl.zk.session import ZkSession

log = logging.getLogger("configctl.listener")

LOAD_CHUNK = 5_000


def load_static_config(
    static_config: Mapping[str, str] | str | os.PathLike[str], broker_id: int
) -> dict[str, str]:
    """server.properties (a path) or a dict; its ``broker.id``, if any, must match ``broker_id``."""
    if isinstance(static_config, (str, os.PathLike)):
        config = dict(load_properties_file(str(static_config)))
        where = str(static_config)
    else:
        config = {str(k): str(v) for k, v in static_config.items()}
        where = "the static config"
    declared = config.get("broker.id")
    if declared is not None and declared.strip() not in ("", "-1") and declared.strip() != str(broker_id):
        raise InvalidInput(
            f"{where} sets broker.id={declared.strip()}, but the listener runs as broker {broker_id}"
        )
    return config


def _check_broker_id(broker_id: Any) -> int:
    try:
        value = int(broker_id)
    except (TypeError, ValueError):
        raise InvalidInput(f"broker id {broker_id!r} must be a non-negative integer") from None
    if value < 0 or isinstance(broker_id, bool):
        raise InvalidInput(f"broker id {broker_id!r} must be a non-negative integer")
    return value


class _Handler:
    """Connects the generic notification listener to the manager (the only ZooKeeper reads).

    Reads never fail as a whole for one bad node: a node the listener may not read comes back as
    that entity's ``unreadable`` problem, and everything else is applied.
    """

    def __init__(self, owner: ConfigListener) -> None:
        self.owner = owner
        self.session = owner.session
        self.manager = owner.manager
        self._initial = True

    def load_all(self, up_to: int | None) -> None:
        entities, invalid = self._list_entities()
        self.manager.reconcile(self._read_all(entities), up_to, initial=self._initial, invalid=invalid)
        self._initial = False
        self.owner._after_batch()

    def process(self, notifications: Sequence[RawNotification]) -> None:
        plan = self.manager.plan(notifications)
        reads = list(self._read([entity for entity, _ in plan], [number for _, number in plan]))
        self.manager.apply(reads, notifications[-1].number)
        self.owner._after_batch()

    def present(self, names: set[str]) -> None:
        self.manager.notifications_present(names)

    def bad_notification_name(self, name: str) -> None:
        self.manager.bad_notification_name(name)

    def _read(self, entities: Sequence[Entity], numbers: Sequence[int | None]) -> Iterator[EntityRead]:
        found = (
            self.session.get_many([entity.znode for entity in entities], node_errors=True) if entities else []
        )
        for entity, number, item in zip(entities, numbers, found, strict=True):
            if isinstance(item, Exception):
                yield EntityRead(entity, None, number, error=one_line(item))
            else:
                yield EntityRead(entity, item[0] if item else None, number)

    def _read_all(self, entities: list[Entity]) -> Iterator[EntityRead]:
        """Read in multiRead chunks, applied as they arrive: 100,000 raw nodes are never held at once."""
        for start in range(0, len(entities), LOAD_CHUNK):
            chunk = entities[start : start + LOAD_CHUNK]
            yield from self._read(chunk, [None] * len(chunk))

    def _list_entities(self) -> tuple[list[Entity], dict[str, str]]:
        """Every entity node a broker follows (users nest clients), and the nodes that name no entity.

        A type directory the listener may not list (``/config/users`` under Kafka's ACLs without
        the right credentials) is reported as unreadable; the other types still load.
        """
        types = list(EntityType)
        roots = self.session.children_many([f"{CONFIG_ROOT}/{t.value}" for t in types], node_errors=True)
        entities: list[Entity] = []
        invalid: dict[str, str] = {}
        users: list[str] = []
        for etype, names in zip(types, roots, strict=True):
            if isinstance(names, Exception):
                invalid[etype.value] = f"cannot list {CONFIG_ROOT}/{etype.value}: {one_line(names)}"
                continue
            for name in names or ():
                path = f"{etype.value}/{name}"
                if etype is EntityType.USERS:
                    users.append(name)
                if etype is EntityType.BROKERS and name not in (str(self.manager.broker_id), DEFAULT):
                    continue
                self._entity(path, entities, invalid)
        if users:
            nested = self.session.children_many(
                [f"{CONFIG_ROOT}/users/{u}/clients" for u in users], node_errors=True
            )
            for user, clients in zip(users, nested, strict=True):
                if isinstance(clients, Exception):
                    invalid[f"users/{user}/clients"] = f"cannot list its clients: {one_line(clients)}"
                    continue
                for client in clients or ():
                    self._entity(f"users/{user}/clients/{client}", entities, invalid)
        return entities, invalid

    @staticmethod
    def _entity(path: str, entities: list[Entity], invalid: dict[str, str]) -> None:
        try:
            entities.append(Entity.from_path(path))
        except InvalidInput as exc:
            invalid[path] = str(exc)


class ConfigListener:
    """One broker's view of dynamic config, kept current from ZooKeeper. See the module docstring.

    ``zookeeper``: a connect string (``host:port[,host:port][/chroot]``) or a :class:`ConnectionSettings`, or an open :class:`ZkSession`
    (then the caller owns it). ``static_config``: server.properties path or a dict.
    ``plugins``: ``module:Class`` specs, entry-point names, or Reconfigurable instances;
    ``discover_plugins`` also loads every entry point of ``configctl.reconfigurables``.
    ``state_dir``: where to keep ``broker-<id>.jsonl``.
    """

    def __init__(
        self,
        zookeeper: str | ConnectionSettings | ZkSession,
        broker_id: int,
        static_config: Mapping[str, str] | str | os.PathLike[str],
        *,
        change_expiration_ms: int = DEFAULT_CHANGE_EXPIRATION_MS,
        plugins: Iterable[Any] = (),
        discover_plugins: bool = False,
        state_dir: str | os.PathLike[str] | None = None,
        zk_auth: str | None = None,
        zk_timeout: float = 10.0,
        purge_jitter_ms: int | None = None,
        fsync_snapshots: bool = True,
    ) -> None:
        self.broker_id = _check_broker_id(broker_id)
        if isinstance(change_expiration_ms, bool) or int(change_expiration_ms) <= 0:
            raise InvalidInput("change_expiration_ms must be a positive number of milliseconds")
        static = load_static_config(static_config, self.broker_id)
        loaded: list[LoadedPlugin] = load_plugins(plugins, discover=discover_plugins)
        self.manager = DynamicConfigManager(self.broker_id, static, loaded)
        self.snapshot = (
            SnapshotWriter(state_dir, self.broker_id, fsync=fsync_snapshots) if state_dir else None
        )
        if isinstance(zookeeper, ZkSession):
            self.session, self._owns_session = zookeeper, False
        else:
            settings = (
                zookeeper
                if isinstance(zookeeper, ConnectionSettings)
                else ConnectionSettings.of(zookeeper, auth=zk_auth, timeout=zk_timeout)
            )
            self.session, self._owns_session = ZkSession(settings), True
        self.publisher = StatePublisher(self.session, self.broker_id)
        self.notifications = SequentialNotificationListener(
            self.session,
            _Handler(self),
            change_expiration_ms=int(change_expiration_ms),
            purge_jitter_ms=purge_jitter_ms,
            name=f"configctl-listener-{self.broker_id}",
        )
        self._applied = threading.Condition()
        self._started_at_ms: int | None = None
        self._running = False

    # ------------------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 60.0) -> ConfigListener:
        """Connect, load everything, publish the state; returns once the initial load is applied."""
        if self._running:
            return self
        self.session.open()
        self._started_at_ms = int(time.time() * 1000)
        try:
            self.manager.configure_plugins()
        except InvalidInput:
            if self._owns_session:
                self.session.close()
            raise
        self.notifications.start()
        self._running = True
        if not self.notifications.wait_loaded(timeout):
            reason = self.notifications.last_error or "no answer"
            self.stop()
            raise ZooKeeperUnavailable(
                f"the initial config load did not finish within {timeout:g}s: {reason}"
            )
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop processing, remove the state node, close plugins and (if ours) the connection."""
        if not self._running:
            return
        self._running = False
        self.notifications.stop(timeout)
        self.publisher.remove()
        self.manager.close_plugins()
        if self._owns_session:
            self.session.close()
        with self._applied:
            self._applied.notify_all()

    def __enter__(self) -> ConfigListener:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._running

    # ------------------------------------------------------------------------------ queries

    @property
    def last_applied_change(self) -> int:
        return self.manager.last_applied_change

    def broker_config(self) -> Mapping[str, EffectiveValue]:
        return self.manager.broker_config()

    def topic_config(self, topic: str) -> dict[str, EffectiveValue]:
        return self.manager.topic_config(topic)

    def quota_config(self, user: str | None = None, client: str | None = None) -> dict[str, EffectiveValue]:
        return self.manager.quota_config(user, client)

    def ip_config(self, ip: str) -> dict[str, EffectiveValue]:
        return self.manager.ip_config(ip)

    def effective(self, entity: Entity | str) -> dict[str, EffectiveValue]:
        """Any entity's effective config as this broker sees it (``topics/orders``, ``users/...``)."""
        return self.manager.effective(Entity.from_path(entity) if isinstance(entity, str) else entity)

    def configs(self) -> dict[str, dict[str, str]]:
        """Every non-empty entity config in force, by stored entity path."""
        return self.manager.configs()

    def state(self) -> dict[str, Any]:
        """The broker state document (what ``/configctl/brokers/<id>`` holds)."""
        document = self.manager.state_document()
        client_id = self.session.client.client_id
        document["counters"].update(
            {
                "notifications_processed": self.notifications.stats["notifications_processed"],
                "purged_notifications": self.notifications.stats["purged_notifications"],
                "listener_errors": self.notifications.stats["errors"],
            }
        )
        document.update(
            {
                "session_id": f"0x{client_id[0]:x}" if client_id else None,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "started_at_ms": self._started_at_ms,
                "change_expiration_ms": self.notifications.change_expiration_ms,
            }
        )
        return document

    def wait_for_change(self, change_number: int, timeout: float = 10.0) -> bool:
        """Block until ``last_applied_change >= change_number``; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._applied:
            while self.manager.last_applied_change < change_number:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._running:
                    return self.manager.last_applied_change >= change_number
                self._applied.wait(remaining)
        return True

    # ------------------------------------------------------------------------------ internals

    def _after_batch(self) -> None:
        """Snapshot first, then the state node: the node never claims more than the snapshot holds."""
        if self.snapshot is not None:
            try:
                self.snapshot.write(self.manager.snapshot_lines())
            except OSError as exc:
                log.error("cannot write snapshot %s: %s", self.snapshot.path, exc)
        self.publisher.publish(self.state())
        with self._applied:
            self._applied.notify_all()


def snapshot_path(state_dir: str | os.PathLike[str], broker_id: int) -> Path:
    return Path(state_dir) / f"broker-{broker_id}.jsonl"
