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
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from configctl.configparse import load_properties_file
from configctl.entities import CONFIG_ROOT, DEFAULT, DOT_NAMES, Entity, EntityType, entities_of
from configctl.errors import (
    ConfigctlError,
    InvalidInput,
    PermissionDenied,
    ZooKeeperUnavailable,
    one_line,
    printable,
)
from configctl.gcpause import collector_paused
from configctl.handlers import handler_for
from configctl.handlers.base import KINDS
from configctl.listener.appliedlog import DEFAULT_KEEP, DEFAULT_MAX_BYTES, AppliedLog
from configctl.listener.manager import BatchResult, DynamicConfigManager, EntityRead, Problem, RawNotification
from configctl.listener.metrics import ListenerMetrics, MetricsServer
from configctl.listener.notification_listener import (
    DEFAULT_CHANGE_EXPIRATION_MS,
    RECHECK_S,
    SequentialNotificationListener,
)
from configctl.listener.observed import ADMIN_TIMEOUT_S, Observer
from configctl.listener.plugins import LoadedPlugin, load_plugins
from configctl.listener.state import FleetRecorder, SnapshotWriter, StatePublisher
from configctl.precedence import EffectiveValue
from configctl.secrets import read_digest_key
from configctl.sources import DYNAMIC_BROKER_SOURCES
from configctl.zk.configtree import ConfigTree, Data
from configctl.zk.connection import ConnectionSettings
from configctl.zk.session import ZkSession

log = logging.getLogger("configctl.listener")

LOAD_CHUNK = 5_000
OLD_VALUES_LIMIT = 1_000
"""A batch of at most this many entities logs each changed key's old effective value too (resolved
before the batch applies); a bigger one (a bulk apply) logs the new values only."""
DEFAULT_STALL_AFTER_S = 60.0
"""Work waiting undone for longer than this (the worker failing all along) makes the listener
"stalled": ``/healthz`` answers 503. A full load of 100,000 entities takes a few seconds."""


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
    """Connects the notification listener to the manager; reads ``/config`` through
    :class:`configctl.zk.configtree.ConfigTree`.

    Reads never fail as a whole for one bad node: a node the listener may not read comes back as
    that entity's ``unreadable`` problem, and everything else is applied. A directory it may not
    list is unreadable too; what it knows below it (configs in force, entities with a problem)
    is then read one by one, so those entities are still retried on every full load.
    """

    def __init__(self, owner: ConfigListener) -> None:
        self.owner = owner
        self.tree = ConfigTree(owner.session)
        self.manager = owner.manager
        self._initial = True

    def load_all(self, up_to: int | None) -> None:
        started = time.perf_counter()
        with collector_paused():  # everything built here stays alive: collections find nothing
            entities, invalid, unreadable = self._list_entities()
            listed = time.perf_counter()
            result = self.manager.reconcile(
                self._read_all(entities), up_to, initial=self._initial, invalid=invalid, unreadable=unreadable
            )
        applied = time.perf_counter()
        self.owner._log_applied(result, {}, full_load=True)
        if not self._initial:  # the initial load's broker layers are observed once started
            self.owner._observe(result)
        self.owner._after_batch()
        log.info(
            "full load of %d entities took %.0f ms (listing %.0f ms, reading and applying %.0f ms, "
            "snapshot and state %.0f ms)",
            len(entities),
            (time.perf_counter() - started) * 1000,
            (listed - started) * 1000,
            (applied - listed) * 1000,
            (time.perf_counter() - applied) * 1000,
        )
        self._initial = False

    def process(self, notifications: Sequence[RawNotification], changed: Mapping[str, Any]) -> None:
        """Apply a batch; it is published by :meth:`flush`, which the notification listener calls
        once the notifications at hand are applied (or a short bound has passed). Entities whose
        node is in ``changed`` (read after these notifications were made) are not read again."""
        plan = self.manager.plan(notifications)
        entities = [entity for entity, _ in plan]
        reads = list(self._reads(entities, [n for _, n in plan], self.tree.read(entities, known=changed)))
        before = self.owner._before(entities)
        result = self.manager.apply(reads, notifications[-1].number)
        self.owner._log_applied(result, before)
        self.owner._observe(result)
        self.owner._applied_batch(notifications)

    def flush(self) -> None:
        self.owner._after_batch()

    def present(self, names: set[str]) -> None:
        self.manager.notifications_present(names)
        self.owner._after_step()

    def bad_notification_name(self, name: str) -> None:
        self.manager.bad_notification_name(name)

    @staticmethod
    def _reads(
        entities: Sequence[Entity], numbers: Sequence[int | None], found: Sequence[Data]
    ) -> Iterator[EntityRead]:
        for entity, number, data in zip(entities, numbers, found, strict=True):
            if isinstance(data, Exception):
                yield EntityRead(entity, None, number, error=one_line(data))
            else:
                yield EntityRead(entity, data, number)

    def _read_all(self, entities: list[Entity]) -> Iterator[EntityRead]:
        """Read in chunks applied as they arrive: 100,000 raw nodes are never held at once. The
        next chunk is asked for once this one is applied (:meth:`ZkSession.iter_many` says why;
        asking earlier measured within 2% again)."""
        done = 0
        for found in self.tree.read_chunks(entities, LOAD_CHUNK):
            part = entities[done : done + len(found)]
            done += len(found)
            yield from self._reads(part, [None] * len(part), found)

    def _list_entities(self) -> tuple[list[Entity], dict[str, str], dict[str, str]]:
        """Every entity node a broker follows (users nest clients), the nodes that name no entity,
        and the directories that could not be listed.

        A type directory the listener may not list (``/config/users`` under Kafka's ACLs without
        the right credentials) is reported as unreadable; the other types still load.
        """
        types = list(EntityType)
        roots = self.tree.list_types(types)
        entities: list[Entity] = []
        invalid: dict[str, str] = {}
        unreadable: dict[str, str] = {}
        users: list[str] = []
        for etype, names in zip(types, roots, strict=True):
            if isinstance(names, Exception):
                unreadable[etype.value] = f"cannot list {CONFIG_ROOT}/{etype.value}: {one_line(names)}"
                self._known(f"{etype.value}/", entities, invalid)
                continue
            handler = handler_for(etype)
            if handler.known_by_node:  # stored by their plain names (topics): checked, not parsed
                self._plain(etype, names or (), entities, invalid)
                continue
            broker_id = self.manager.broker_id
            for name in names or ():
                if etype.nests_clients:
                    users.append(name)
                # asked on the name alone: another broker's node is skipped before it is parsed
                if not handler.follows(Entity(etype, name), broker_id):
                    continue
                self._entity(f"{etype.value}/{name}", entities, invalid)
        if users:
            nested = self.tree.list_clients(users)
            for user, clients in zip(users, nested, strict=True):
                if isinstance(clients, Exception):
                    where = f"users/{user}/clients"
                    unreadable[where] = f"cannot list {CONFIG_ROOT}/{where}: {one_line(clients)}"
                    self._known(f"{where}/", entities, invalid)
                    continue
                for client in clients or ():
                    self._entity(f"users/{user}/clients/{client}", entities, invalid)
        return entities, invalid, unreadable

    def _known(self, prefix: str, entities: list[Entity], invalid: dict[str, str]) -> None:
        present = {e.path for e in entities}
        for path in self.manager.known_paths(prefix):
            if path not in present:
                self._entity(path, entities, invalid)

    @classmethod
    def _plain(
        cls, etype: EntityType, names: Iterable[str], entities: list[Entity], invalid: dict[str, str]
    ) -> None:
        """Node names stored as they are (topics) as entities: checking the name is all the parsing
        there is (100,000 of them at 2 µs each instead of 7), and a listing of valid topic names
        is checked at once (:func:`~configctl.entities.entities_of`)."""
        listed = names if isinstance(names, list) else list(names)
        valid = entities_of(etype, listed)
        if valid is not None:
            entities.extend(valid)
            return
        append = entities.append
        for name in listed:
            if name in ("", *DOT_NAMES, DEFAULT):
                cls._entity(f"{etype.value}/{name}", entities, invalid)  # refused, with from_path's reason
                continue
            try:
                append(Entity.of(etype, name))
            except InvalidInput as exc:
                invalid[f"{etype.value}/{name}"] = str(exc)

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
    ``metrics_port``: serve Prometheus ``/metrics`` and ``/healthz`` on this port (0: any free
    port, see :attr:`metrics_port`; None: no server, :meth:`metrics_text` still works) at
    ``metrics_address`` (loopback by default). ``stall_after_s``: how long work may wait
    undone before :meth:`health` calls the listener stalled. ``recheck_s``: how often it re-lists
    the notifications even when no watch fired (a lost watch is caught up within it).
    ``tree_watch``: follow ``/config`` with one persistent recursive watch, which names the new
    notifications and the config nodes changed with them, so a change costs one round trip of
    reads (the default; ZooKeeper older than 3.6 falls back by itself); False for Kafka's one-shot
    child watch on ``/config/changes``.
    ``digest_key_file``: the fleet's
    digest key (else ``$CONFIGCTL_DIGEST_KEY_FILE``; neither: plain SHA-256), which makes the
    digests of secrets in snapshots and the state node HMAC-SHA256 under it (:func:`secrets.digest`).
    ``bootstrap_server`` (with ``command_config``, a Kafka client properties file): the real broker
    this listener runs beside; after each change it is asked what it runs
    (:mod:`configctl.listener.observed`), and where it disagrees is a ``mismatch`` problem.
    With a ``state_dir`` every change applied or refused is also appended to the applied log
    (:mod:`configctl.listener.appliedlog`), in segments of ``applied_log_max_bytes``, the newest
    ``applied_log_keep`` of them kept.
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
        metrics_port: int | None = None,
        metrics_address: str = "",
        stall_after_s: float = DEFAULT_STALL_AFTER_S,
        recheck_s: float = RECHECK_S,
        tree_watch: bool = True,
        digest_key_file: str | os.PathLike[str] | None = None,
        bootstrap_server: str | None = None,
        command_config: str | os.PathLike[str] | None = None,
        applied_log_max_bytes: int = DEFAULT_MAX_BYTES,
        applied_log_keep: int = DEFAULT_KEEP,
    ) -> None:
        self.broker_id = _check_broker_id(broker_id)
        if isinstance(change_expiration_ms, bool) or int(change_expiration_ms) <= 0:
            raise InvalidInput("change_expiration_ms must be a positive number of milliseconds")
        if metrics_port is not None and (
            isinstance(metrics_port, bool) or not 0 <= int(metrics_port) <= 65535
        ):
            raise InvalidInput(f"metrics port {metrics_port!r} must be a number from 0 to 65535")
        if not stall_after_s > 0:
            raise InvalidInput("stall_after_s must be a positive number of seconds")
        static = load_static_config(static_config, self.broker_id)
        loaded: list[LoadedPlugin] = load_plugins(plugins, discover=discover_plugins)
        digest_key = read_digest_key(os.fspath(digest_key_file) if digest_key_file is not None else None)
        self.manager = DynamicConfigManager(self.broker_id, static, loaded, digest_key=digest_key)
        self.snapshot = (
            SnapshotWriter(state_dir, self.broker_id, fsync=fsync_snapshots) if state_dir else None
        )
        self.applied_log = (
            AppliedLog(
                state_dir,
                self.broker_id,
                digest_key=digest_key,
                max_bytes=applied_log_max_bytes,
                keep=applied_log_keep,
                fsync=fsync_snapshots,
            )
            if state_dir
            else None
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
        self.fleet_record = FleetRecorder(
            self.session,
            self.broker_id,
            lambda: self.manager.last_applied_change,
            on_error=lambda exc: self._side_error("fleet record", exc),
        )
        self.notifications = SequentialNotificationListener(
            self.session,
            _Handler(self),
            change_expiration_ms=int(change_expiration_ms),
            purge_jitter_ms=purge_jitter_ms,
            name=f"configctl-listener-{self.broker_id}",
            recheck_s=recheck_s,
            tree=CONFIG_ROOT if tree_watch else None,
        )
        self.metrics = ListenerMetrics(self)
        self.stall_after_s = float(stall_after_s)
        self._metrics_port = None if metrics_port is None else int(metrics_port)
        self._metrics_address = metrics_address
        self._metrics_server: Any = None
        self._applied = threading.Condition()
        self._started_at_ms: int | None = None
        self._running = False
        self._started = False  # the initial load finished: later publish failures are not fatal
        self._publish_pending = False
        self._unpublished = False  # applied batches not yet in the snapshot and the state node
        self._side_errors: dict[str, str] = {}  # what failed last per side task (publish, snapshot, ...)
        self.side_error_counts: dict[str, int] = {}
        self._publish_lock = threading.Lock()  # the worker and the observer both publish
        self.observer: Observer | None = None
        if bootstrap_server:
            self.observer = Observer(
                self.broker_id,
                self.manager,
                _admin_factory(bootstrap_server, command_config),
                on_change=self._observed_changed,
            )

    # ------------------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 60.0) -> ConfigListener:
        """Connect, load everything, publish the state; returns once the initial load is applied.

        Fails at once (:class:`PermissionDenied`, exit 4) when ZooKeeper refuses what the
        listener cannot run without: its credentials, listing ``/config/changes``, writing its
        state node or fleet record. Config nodes it may not read do not stop it: they are
        ``unreadable`` problems.
        """
        if self._running:
            return self
        if self._metrics_port is not None and self._metrics_server is None:
            self._metrics_server = MetricsServer(
                self.metrics, self.health, address=self._metrics_address, port=self._metrics_port
            )
        try:
            self.session.open()
            self._started_at_ms = int(time.time() * 1000)
            self.manager.configure_plugins()
        except BaseException:
            self._close_resources()
            raise
        self.notifications.start()
        self._running = True
        try:
            self._wait_initial_load(timeout)
            self._started = True
        except BaseException:
            self.stop()
            raise
        if self.observer is not None:
            self.observer.observe_layers(self.manager.last_applied_change)
            self.observer.start()
        return self

    def _wait_initial_load(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.notifications.wait_loaded(0.05):
            error = self.notifications.start_error
            if isinstance(error, PermissionDenied):
                raise PermissionDenied(f"broker {self.broker_id}'s listener cannot start: {error}")
            if time.monotonic() >= deadline:
                reason = self.notifications.last_error or "no answer"
                raise ZooKeeperUnavailable(
                    f"the initial config load did not finish within {timeout:g}s: {reason}"
                )
        # The fleet record must be writable too: a listener that cannot say it exists is misconfigured.
        try:
            self.fleet_record.write(raise_errors=True)
        except PermissionDenied as exc:
            raise PermissionDenied(f"broker {self.broker_id}'s listener cannot start: {exc}") from None
        except ConfigctlError as exc:  # a connection blip: the next update writes it
            self._side_error("fleet record", exc, f"cannot write {self.fleet_record.path}")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop processing, record the last change in the fleet record, remove the state node,
        close plugins and (if ours) the connection and the metrics server."""
        if not self._running:
            self._close_resources()
            return
        self._running = False
        if self.observer is not None:
            self.observer.stop()
        self.notifications.stop(timeout)
        self.fleet_record.close()
        if self._started and self.notifications.connected:
            self.fleet_record.update(force=True)
        self.publisher.remove()
        self.manager.close_plugins()
        if self.applied_log is not None:
            self.applied_log.close()
        self._close_resources()
        with self._applied:
            self._applied.notify_all()

    def _close_resources(self) -> None:
        if self._owns_session:
            self.session.close()
        server, self._metrics_server = self._metrics_server, None
        if server is not None:
            server.close()

    def __enter__(self) -> ConfigListener:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._running

    @property
    def metrics_port(self) -> int | None:
        """The port ``/metrics`` is served on (the real one when 0 was asked), None without a server."""
        return self._metrics_server.port if self._metrics_server is not None else None

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

    def problems(self) -> list[Problem]:
        """What this broker could not apply (the list the state node publishes),
        oldest first. Each :class:`Problem` has ``kind`` (poison, rejected, ignored, unreadable),
        ``entity_path``, ``change_number``, ``reason`` and, where they apply, ``name`` (the key),
        ``plugin`` and ``notification``; ``to_json()`` gives the published form. Beside a real
        broker (``bootstrap_server``) also ``mismatch`` (with ``key``, ``expected``, ``reported``)
        and ``unreachable``."""
        problems = self.manager.problems()
        if self.observer is not None:
            problems += self.observer.problems()
        return problems

    def state(self) -> dict[str, Any]:
        """The broker state document (what ``/configctl/brokers/<id>`` holds)."""
        document = self.manager.state_document()
        session_id = self.notifications.session_id
        stats = self.notifications.stats
        if self.observer is not None:
            document["problems"] += [p.to_json() for p in self.observer.problems()]
            document["counters"].update(self.observer.counters)
            document.update(self.observer.state())
        else:
            document["observed"] = False
        document["counters"].update(
            {
                "notifications_processed": stats["notifications_processed"],
                "purged_notifications": stats["purged_notifications"],
                "purge_errors": stats["purge_errors"],
                "listener_errors": stats["errors"],
                **{f"{task.replace(' ', '_')}_errors": n for task, n in self.side_error_counts.items()},
            }
        )
        document.update(
            {
                "session_id": f"0x{session_id:x}" if session_id is not None else None,
                "host": self.fleet_record.host,
                "pid": os.getpid(),
                "started_at_ms": self._started_at_ms,
                "change_expiration_ms": self.notifications.change_expiration_ms,
                "last_error": self.notifications.last_error,
            }
        )
        return document

    def health(self) -> tuple[bool, dict[str, Any]]:
        """``(healthy, why)``: healthy while connected and applying (see :mod:`configctl.listener.metrics`)."""
        notifications = self.notifications
        connected = notifications.connected
        since = notifications.pending_since
        pending_for = round(time.monotonic() - since, 3) if since is not None else 0.0
        if not self._running:
            status = "stopped"
        elif not notifications.loaded:
            status = "starting"
        elif not connected:
            status = "disconnected"
        elif notifications.stalled(self.stall_after_s):
            status = "stalled"
        else:
            status = "ok"
        return status == "ok", {
            "status": status,
            "broker_id": self.broker_id,
            "connected": connected,
            "last_applied_change": self.manager.last_applied_change,
            "pending_notifications": notifications.pending_notifications,
            "pending_for_s": pending_for,
            "stall_after_s": self.stall_after_s,
            "last_error": notifications.last_error,
        }

    def metrics_snapshot(self) -> dict[str, Any]:
        """What the metrics collector reads at each scrape."""
        manager = self.manager
        counts: dict[str, int] = {}
        for problem in self.problems():
            counts[problem.kind] = counts.get(problem.kind, 0) + 1
        stats = self.notifications.stats
        return {
            "last_applied_change": manager.last_applied_change,
            "applied_at_ms": manager.applied_at_ms,
            "changes_applied": manager.counters["applied_changes"],
            "notifications_processed": stats["notifications_processed"],
            "notifications_pending": self.notifications.pending_notifications,
            "problems": counts,
            "problems_reported": {kind: manager.counters.get(f"{kind}_problems", 0) for kind in KINDS},
            "connected": self.notifications.connected,
            "healthy": self.health()[0],
            "errors": stats["errors"],
            "full_loads": stats["full_loads"],
            "plugin_errors": manager.counters["plugin_errors"],
        }

    def metrics_text(self) -> str:
        """The Prometheus exposition ``/metrics`` serves (also without a server)."""
        return self.metrics.exposition().decode()

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

    def _applied_batch(self, notifications: Sequence[RawNotification]) -> None:
        """A batch of notifications is applied (in memory): its latency is measured now; the
        snapshot and the state node follow in :meth:`_after_batch`, once per run of batches."""
        self.metrics.observe([n.ctime_ms for n in notifications])
        self._unpublished = True

    def _after_batch(self) -> None:
        """Snapshot first, then the state node: the node never claims more than the snapshot holds.

        Neither may stall the listener: once it runs, a failure is logged once and retried after
        the next step. During the initial load a state node it may not write fails the start.
        The fleet record, when due, rides in the state node's write (:class:`StatePublisher`).
        """
        self._unpublished = False
        if self.snapshot is not None:
            try:
                self.snapshot.write(self.manager.snapshot_lines())
                self._side_ok("snapshot")
            except OSError as exc:
                self._side_error("snapshot", exc, f"cannot write snapshot {self.snapshot.path}")
        self._publish(raise_errors=not self._started, with_record=self._started)
        with self._applied:
            self._applied.notify_all()

    def _after_step(self) -> None:
        """Every step ends here: a state node that could not be written is tried again."""
        if self._publish_pending and not self._unpublished:
            self._publish(raise_errors=False)

    def _observe(self, result: BatchResult) -> None:
        """Hand what was just applied, and the change the model is now at, to the observer (beside
        a real broker) before the state is published, so no state node says "observed" for a
        change the broker was not asked about yet; never waits."""
        if self.observer is not None:
            self.observer.observe(
                [(a.entity_path, a.change_number, [k.name for k in a.keys]) for a in result.applied],
                self.manager.last_applied_change,
            )

    def _before(self, entities: Sequence[Entity]) -> dict[str, dict[str, EffectiveValue]]:
        """The effective config of each entity a batch is about to change (its applied log's old
        values); nothing for a batch too big to resolve twice, or without an applied log."""
        if self.applied_log is None or len(entities) > OLD_VALUES_LIMIT:
            return {}
        before: dict[str, dict[str, EffectiveValue]] = {}
        for entity in entities:
            try:
                before[entity.path] = self.manager.effective(entity)
            except ConfigctlError:
                continue
        return before

    def _log_applied(
        self,
        result: BatchResult,
        before: Mapping[str, Mapping[str, EffectiveValue]],
        *,
        full_load: bool = False,
        up_to: int | None = None,
    ) -> None:
        """Append the batch to the applied log; a full disk is a side error, never a stall."""
        if self.applied_log is None:
            return
        loaded = None
        if full_load:
            up_to = self.manager.last_applied_change
            loaded = {
                name: value
                for name, value in self.manager.broker_config().items()
                if value.source in DYNAMIC_BROKER_SOURCES
            }
        try:
            self.applied_log.batch(result, before, full_load=full_load, up_to=up_to, loaded=loaded)
            self._side_ok("applied log")
        except OSError as exc:
            self._side_error("applied log", exc, f"cannot append to {self.applied_log.path}")

    def _observed_changed(self) -> None:
        """The observer's verdict moved: log what the broker reported, then publish."""
        if self.applied_log is not None and self.observer is not None:
            try:
                self.applied_log.observed(self.observer.problems())
                self._side_ok("applied log")
            except OSError as exc:
                self._side_error("applied log", exc, f"cannot append to {self.applied_log.path}")
        self._publish(raise_errors=False)

    def _publish(self, *, raise_errors: bool, with_record: bool = False) -> None:
        """Write the state node; with ``with_record``, the fleet record too when it is due (in the
        same transaction), else it is left to the record's own throttle."""
        record = self.fleet_record.due() if with_record else None
        change = self.manager.last_applied_change
        together = False
        try:
            with self._publish_lock:
                together = self.publisher.publish(
                    self.state(), also=(self.fleet_record.path, record[1]) if record is not None else None
                )
        except ConfigctlError as exc:
            self._publish_pending = True
            if raise_errors:
                raise
            self._side_error("state node", exc, f"cannot publish {self.publisher.path}")
        else:
            self._publish_pending = False
            self._side_ok("state node")
            self._state_published(change)
        if record is not None and together:
            self.fleet_record.wrote(record[0])
            self._side_ok("fleet record")
        elif record is not None:  # due, and the transaction could not carry it: alone
            self.fleet_record.update()
        elif with_record:
            self.fleet_record.later()

    def _state_published(self, change: int) -> None:
        """The state node now says ``change`` (a hook: the fleet benchmark timestamps it here)."""

    def _side_error(self, task: str, exc: BaseException, what: str | None = None) -> None:
        """A side task (snapshot, state node, fleet record) failed: logged once per reason, counted."""
        reason = one_line(exc)
        self.side_error_counts[task] = self.side_error_counts.get(task, 0) + 1
        if self._side_errors.get(task) != reason:
            log.warning("%s (will retry): %s", printable(what or f"{task} failed"), printable(reason))
        self._side_errors[task] = reason

    def _side_ok(self, task: str) -> None:
        if self._side_errors.pop(task, None) is not None:
            log.info("%s written again", task)


def _admin_factory(bootstrap: str, command_config: str | os.PathLike[str] | None) -> Any:
    def connect() -> Any:
        from configctl.adminapi.client import KafkaAdmin  # kafka-python: only for a sidecar

        config = Path(command_config) if command_config is not None else None
        return KafkaAdmin(bootstrap, config, timeout=ADMIN_TIMEOUT_S)

    return connect


def snapshot_path(state_dir: str | os.PathLike[str], broker_id: int) -> Path:
    return Path(state_dir) / f"broker-{broker_id}.jsonl"
