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
any thread. This module puts the parts together: the notification listener
(:mod:`configctl.listener.notification_listener`) drives the change handler
(:mod:`configctl.listener.changehandler`), which applies through the manager
(:mod:`configctl.listener.manager`) and hands each batch to the side tasks
(:mod:`configctl.listener.sidetasks`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from configctl.configparse import load_properties_file
from configctl.entities import CONFIG_ROOT, Entity
from configctl.errors import (
    ConfigctlError,
    InvalidInput,
    KafkaUnavailable,
    PermissionDenied,
    ZooKeeperUnavailable,
)
from configctl.handlers.base import KINDS, Problem
from configctl.listener.appliedlog import DEFAULT_KEEP, DEFAULT_MAX_BYTES, AppliedLog
from configctl.listener.changehandler import ConfigChangeHandler
from configctl.listener.kafkabroker import CONFIG_MANAGER, SIDECAR, KafkaRegistration
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.metrics import ListenerMetrics, MetricsServer
from configctl.listener.notification_listener import (
    DEFAULT_CHANGE_EXPIRATION_MS,
    RECHECK_S,
    SequentialNotificationListener,
)
from configctl.listener.observed import ADMIN_TIMEOUT_S, Observer
from configctl.listener.plugins import LoadedPlugin, load_plugins
from configctl.listener.sidetasks import SideTasks
from configctl.listener.state import FleetRecorder, SnapshotWriter, StatePublisher
from configctl.precedence import EffectiveValue
from configctl.secrets import read_digest_key
from configctl.zk.session import ZkSession
from configctl.zkconnection import ConnectionSettings

DEFAULT_STALL_AFTER_S = 60.0
"""Work waiting undone for longer than this (the worker failing all along) makes the listener
"stalled": ``/healthz`` answers 503. A full load of 100,000 entities takes a few seconds."""
STOP_TIMEOUT_S = 5.0
"""How long :meth:`ConfigListener.stop` takes at most, whatever ZooKeeper and the worker do."""

log = logging.getLogger("configctl.listener")


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
    Where Kafka registers a broker with this id (``/brokers/ids/<id>``) the listener is its
    sidecar (:mod:`configctl.listener.kafkabroker`): after each change that broker is asked what it
    runs (:mod:`configctl.listener.observed`) at its registered endpoint, with ``command_config``
    (a Kafka client properties file) for its security, and where it disagrees is a ``mismatch``
    problem. ``bootstrap_server`` names where to ask instead (and makes a sidecar without a
    registration).
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
            on_error=lambda exc: self._side_tasks.task_failed("fleet record", exc),
            kind=lambda: SIDECAR if self.observer is not None else CONFIG_MANAGER,
        )
        self.metrics = ListenerMetrics(self)
        self._bootstrap_server = bootstrap_server or None
        self._command_config = command_config
        self.registration = KafkaRegistration(
            self.session, self.broker_id, static, command_config, self._registration_changed
        )
        self.observer: Observer | None = None
        if self._bootstrap_server:
            self.observer = self._new_observer()
        self._applied = threading.Condition()  # notified after each publication, and at stop
        self._side_tasks = SideTasks(
            self.manager,
            publisher=self.publisher,
            fleet_record=self.fleet_record,
            snapshot=self.snapshot,
            applied_log=self.applied_log,
            observer=self.observer,
            metrics=self.metrics,
            state=self.state,
            published=self._applied,
            on_state_published=self._state_published,
        )
        self.notifications = SequentialNotificationListener(
            self.session,
            ConfigChangeHandler(self.session, self.manager, self._side_tasks),
            change_expiration_ms=int(change_expiration_ms),
            purge_jitter_ms=purge_jitter_ms,
            name=f"configctl-listener-{self.broker_id}",
            recheck_s=recheck_s,
            tree=CONFIG_ROOT if tree_watch else None,
        )
        self.stall_after_s = float(stall_after_s)
        self._metrics_port = None if metrics_port is None else int(metrics_port)
        self._metrics_address = metrics_address
        self._metrics_server: Any = None
        self._started_at_ms: int | None = None
        self._running = False
        self._lifecycle = threading.Lock()  # start and stop agree on who tears down what
        self._stop_asked = False  # a stop came after the last start began: that start gives up

    # ------------------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 60.0) -> ConfigListener:
        """Connect, load everything, publish the state; returns once the initial load is applied.

        Fails at once (:class:`PermissionDenied`, exit 4) when ZooKeeper refuses what the
        listener cannot run without: its credentials, listing ``/config/changes``, writing its
        state node or fleet record. Config nodes it may not read do not stop it: they are
        ``unreadable`` problems. A :meth:`stop` from another thread ends a start at any point:
        the start returns not started (:attr:`running` is False) instead of raising, at the latest
        once the request it was waiting on gives up.
        """
        with self._lifecycle:
            if self._running:
                return self
            self._stop_asked = False
        if self._metrics_port is not None and self._metrics_server is None:
            self._metrics_server = MetricsServer(
                self.metrics, self.health, address=self._metrics_address, port=self._metrics_port
            )
        try:
            self.session.open()
            self._started_at_ms = int(time.time() * 1000)
            self._find_kafka_broker()
            self.manager.configure_plugins()
        except BaseException:
            self._close_resources()
            if self._stop_asked:  # stopped meanwhile: the failure is the stop's doing
                return self
            raise
        with self._lifecycle:
            if self._stop_asked:
                self.manager.close_plugins()
                self._close_resources()
                return self
            self.notifications.start()
            self._running = True
        try:
            if not self._wait_initial_load(timeout):
                return self  # stopped meanwhile: stop tore everything down
        except BaseException:
            self.stop()
            raise
        with self._lifecycle:
            if self._stop_asked:
                return self
            self._side_tasks.started = True
            if self.observer is not None:
                self.observer.observe_layers(self.manager.last_applied_change)
                self.observer.start()
            self.registration.watch()
        return self

    def _new_observer(self) -> Observer:
        return Observer(
            self.broker_id,
            self.manager,
            _admin_factory(
                lambda: self._bootstrap_server or self.registration.bootstrap(), self._command_config
            ),
            on_change=lambda: self._side_tasks.observer_changed(),
        )

    def _find_kafka_broker(self) -> None:
        """Before the initial load: a Kafka broker registered with this id makes this listener its
        sidecar, so everything the load applies is asked of the broker too."""
        try:
            registered = self.registration.read_now()
        except ConfigctlError as exc:  # unreadable now: the watch, once set, tells
            log.warning("cannot read %s: %s", self.registration.path, exc)
            return
        if registered and self.observer is None:
            self.observer = self._side_tasks.observer = self._new_observer()

    def _registration_changed(self) -> None:
        """Kafka registered this broker, or stopped registering it: a broker that appears makes
        this listener its sidecar from now on; either way the state node says so at once."""
        with self._lifecycle:
            if not self._running or not self._side_tasks.started:
                return
            if self.registration.registered and self.observer is None:
                self.observer = self._side_tasks.observer = self._new_observer()
                self.observer.observe_layers(self.manager.last_applied_change)
                self.observer.start()
        self._side_tasks.republish()

    def _wait_initial_load(self, timeout: float) -> bool:
        """Wait for the initial load, then write the fleet record; False if stopped meanwhile."""
        deadline = time.monotonic() + timeout
        while not self.notifications.wait_loaded(0.05):
            if self._stop_asked:
                return False
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
            self._side_tasks.task_failed("fleet record", exc, f"cannot write {self.fleet_record.path}")
        return not self._stop_asked

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop processing, record the last change in the fleet record, remove the state node,
        close plugins and (if ours) the connection and the metrics server.

        Returns within about ``timeout`` seconds whatever ZooKeeper and the worker do, so a
        SIGTERM is acted on at once: the worker gets half of it to end its step, and what needs
        ZooKeeper (the fleet record, the state node, closing the session) runs on a thread of its
        own until the deadline. A ZooKeeper that does not answer is left to the session's end
        (its expiry removes the state node); the step still running is logged. A start in
        progress on another thread gives up (see :meth:`start`).
        """
        deadline = time.monotonic() + timeout
        with self._lifecycle:
            self._stop_asked = True
            running, self._running = self._running, False
        worker_ended = True
        self.registration.stop()
        if running:
            if self.observer is not None:
                self.observer.stop()
            worker_ended = self.notifications.stop(timeout / 2)
            self.fleet_record.close()
        if running or self._owns_session:
            self._within(deadline, lambda: self._leave_zookeeper(running))
        if running:
            self.manager.close_plugins()
            if self.applied_log is not None and worker_ended:  # else the worker may hold it: exit closes it
                self.applied_log.close()
        self._close_metrics()
        with self._applied:
            self._applied.notify_all()

    def _leave_zookeeper(self, running: bool) -> None:
        """The fleet record gets the last applied change, the state node goes, then the session."""
        if running:
            if self._side_tasks.started and self.notifications.connected:
                self.fleet_record.update(force=True)
            self.publisher.remove()
        if self._owns_session:
            self.session.close()

    def _within(self, deadline: float, step: Callable[[], None]) -> None:
        """Run ``step`` on a thread of its own and wait for it until ``deadline`` at most."""
        done = threading.Event()

        def run() -> None:
            try:
                step()
            except Exception as exc:  # a stop never fails for what it could not tidy up
                log.debug("while stopping: %s", exc, exc_info=True)
            finally:
                done.set()

        name = f"configctl-listener-{self.broker_id}-stop"
        threading.Thread(target=run, name=name, daemon=True).start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            log.warning(
                "broker %d's listener stopped without ZooKeeper's answer: its session (and state "
                "node) end when ZooKeeper expires it",
                self.broker_id,
            )

    def _close_resources(self) -> None:
        if self._owns_session:
            self.session.close()
        self._close_metrics()

    def _close_metrics(self) -> None:
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
        document["kind"] = SIDECAR if self.observer is not None else CONFIG_MANAGER
        document["kafka_registered"] = self.registration.published()
        document["counters"].update(
            {
                "notifications_processed": stats["notifications_processed"],
                "purged_notifications": stats["purged_notifications"],
                "purge_errors": stats["purge_errors"],
                "listener_errors": stats["errors"],
                **{
                    f"{task.replace(' ', '_')}_errors": n for task, n in self._side_tasks.error_counts.items()
                },
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

    def _state_published(self, change: int) -> None:
        """The state node now says ``change`` (a hook: the fleet benchmark timestamps it here)."""


def _admin_factory(bootstrap: Callable[[], str | None], command_config: str | os.PathLike[str] | None) -> Any:
    """Connects where the broker is now (its registration may move it between two questions)."""

    def connect() -> Any:
        from configctl.adminapi.client import KafkaAdmin  # kafka-python: only for a sidecar

        where = bootstrap()
        if not where:
            raise KafkaUnavailable("no endpoint to ask: its registration and server.properties name none")
        config = Path(command_config) if command_config is not None else None
        return KafkaAdmin(where, config, timeout=ADMIN_TIMEOUT_S)

    return connect


def snapshot_path(state_dir: str | os.PathLike[str], broker_id: int) -> Path:
    return Path(state_dir) / f"broker-{broker_id}.jsonl"
