"""``configctl listener run``: one broker's listener in the foreground, until SIGTERM or Ctrl-C.

Logs go to stderr, one line per applied change (``--log-format json``: one JSON object per line)::

    2026-01-05 10:00:00,123 INFO applied change 42: topics/orders retention.ms=86400000 (DYNAMIC_TOPIC_CONFIG)

On SIGTERM or SIGINT the listener stops cleanly, at any moment, even while it is still trying to
reach ZooKeeper: the fleet record gets the last applied change, the state node is removed, the
last snapshot is already on disk, plugins are closed, and the exit status is 0. A second signal
exits at once. A start that fails (ZooKeeper refuses the credentials or the listener's own
nodes: exit 4; unreachable: exit 3) prints one ``error:`` line and nothing else.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import signal
import threading
from types import FrameType
from typing import Any

import click

from configctl.cli.context import connection_settings, quiet_libraries
from configctl.cli.options import digest_key_file_option, global_options, settings

_START_TIMEOUT_S = 60.0


@click.group()
def listener() -> None:
    """The broker-side listener (Kafka's DynamicConfigManager, embeddable as configctl.listener)."""


@listener.command("run")
@click.option("--broker-id", required=True, type=click.IntRange(min=0), help="This broker's id.")
@click.option(
    "--server-properties",
    required=True,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The broker's static config (server.properties); its broker.id must match.",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Keep DIR/broker-<id>.jsonl, the effective-config snapshot the audit reads, and the applied "
    "log (DIR/applied/: every change applied or refused, for describe --at, blame and diff).",
)
@click.option(
    "--applied-log-max-bytes",
    type=click.IntRange(min=1024),
    default=16 * 1024 * 1024,
    show_default=True,
    metavar="BYTES",
    help="With --state-dir: start a new applied log segment once one reaches this size.",
)
@click.option(
    "--applied-log-keep",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    metavar="N",
    help="With --state-dir: keep the newest N applied log segments (older ones are deleted).",
)
@click.option(
    "--change-expiration-ms",
    type=click.IntRange(min=1),
    default=900_000,
    show_default=True,
    help="Delete change notifications older than this (by creation time).",
)
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="module:Class|NAME",
    help="A Reconfigurable plugin: module:Class, or an entry point of configctl.reconfigurables. Repeatable.",
)
@click.option(
    "--discover-plugins",
    is_flag=True,
    help="Also load every plugin registered in the configctl.reconfigurables entry-point group.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    default=None,
    metavar="PORT",
    help="Serve Prometheus /metrics and /healthz (200 healthy, 503 not) on PORT (0: any free port).",
)
@click.option(
    "--metrics-address",
    default="",
    metavar="ADDR",
    help="Address the metrics server binds to (default: 127.0.0.1, loopback; 0.0.0.0 for every interface).",
)
@click.option(
    "--stall-after",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="/healthz says 'stalled' (503) when work has waited undone this long.",
)
@click.option(
    "--recheck-every",
    "recheck_every",
    type=click.FloatRange(min=0.1, max=86_400),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="Re-list the change notifications this often even when no watch fired (a lost watch, "
    "or a directory it could not read for a while, is caught up within it).",
)
@digest_key_file_option(
    "The fleet's digest key (at least 16 bytes, the same for every listener and the audit): "
    "secrets in the snapshot and state node are HMAC-SHA256 under it instead of plain SHA-256."
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one escaped line per event; json: one JSON object per line.",
)
@global_options
def run(
    broker_id: int,
    server_properties: str,
    state_dir: str | None,
    applied_log_max_bytes: int,
    applied_log_keep: int,
    change_expiration_ms: int,
    plugins: tuple[str, ...],
    discover_plugins: bool,
    metrics_port: int | None,
    metrics_address: str,
    stall_after: float,
    recheck_every: float,
    digest_key_file: str | None,
    log_level: str,
    log_format: str,
) -> None:
    """Follow dynamic config changes as the broker given by --broker-id, in the foreground.

    Beside a KRaft broker (its server.properties names process.roles) it is the broker's flight
    recorder instead, with no ZooKeeper: it follows the broker's metadata log on disk and keeps
    every committed config write, whoever made it, in the cluster's _configctl_metadata topic
    (history, blame and --at read it). It reaches the cluster at --bootstrap-server, else at the
    broker's own PLAINTEXT listener.

    Where Kafka registers a broker with this id (/brokers/ids/N), it is that broker's sidecar with
    no flag: after each change it asks the broker what it runs (at the registration's address,
    security from --command-config), and lists each key the broker reports otherwise as a
    'mismatch' problem ('unreachable' while the broker does not answer). The global
    --bootstrap-server only says where to ask instead. Where no Kafka broker has the id, it is
    the broker's own config manager and what it applied stands.

    \b
      configctl listener run --broker-id 1 --server-properties examples/server-1.properties \\
          --state-dir /tmp/configctl-state --plugin examples.plugins.quota_enforcer:ClientQuotaEnforcer
    """
    from configctl.configparse import load_properties_file
    from configctl.kraft.recorder import is_kraft_node

    properties = load_properties_file(server_properties)
    if is_kraft_node(properties):
        if plugins or discover_plugins or state_dir or metrics_port is not None:
            raise click.UsageError(
                "beside a KRaft broker the listener is its flight recorder: --plugin, --discover-plugins, "
                "--state-dir and --metrics-port are ZooKeeper mode's"
            )
        held = _setup_logging(log_level, log_format, broker_id)
        _record(broker_id, properties, digest_key_file, held)
        return

    from configctl.listener import ConfigListener

    held = _setup_logging(log_level, log_format, broker_id)
    stop = threading.Event()
    _install_signal_handlers(stop)
    zookeeper = connection_settings()
    bootstrap = settings().bootstrap_server  # where to ask its Kafka broker, instead of its registration
    instance = ConfigListener(
        zookeeper,
        broker_id,
        server_properties,
        change_expiration_ms=change_expiration_ms,
        plugins=plugins,
        discover_plugins=discover_plugins,
        state_dir=state_dir,
        applied_log_max_bytes=applied_log_max_bytes,
        applied_log_keep=applied_log_keep,
        metrics_port=metrics_port,
        metrics_address=metrics_address,
        stall_after_s=stall_after,
        recheck_s=recheck_every,
        digest_key_file=digest_key_file,
        bootstrap_server=bootstrap,
        command_config=settings().command_config,
    )
    log = logging.getLogger("configctl.listener")
    try:
        started = _start_unless_stopped(instance, stop)
    except BaseException:
        held.drop(keep=log_level == "debug")  # the error line says why; debugging shows the rest
        raise
    held.release()
    if not started:
        log.info("stopped while starting")
        return
    try:
        where = f", snapshot {instance.snapshot.path}" if instance.snapshot is not None else ""
        if instance.metrics_port is not None:
            where += f", metrics on port {instance.metrics_port}"
        if instance.observer is not None:
            where += f", asking Kafka broker {broker_id} at {bootstrap or instance.registration.bootstrap()}"
        else:
            where += ", as the broker's own config manager (Kafka registers no broker with this id)"
        log.info(
            "listening as broker %d on %s (last applied change %d%s); stop with SIGTERM or Ctrl-C",
            broker_id,
            settings().zookeeper,
            instance.last_applied_change,
            where,
        )
        while not stop.wait(0.5):
            pass
        log.info("stopping broker %d's listener", broker_id)
    finally:
        instance.stop()
    log.info("stopped at change %d", instance.last_applied_change)


def _record(broker_id: int, properties: dict[str, str], digest_key_file: str | None, held: _HeldLogs) -> None:
    """``listener run`` beside a KRaft broker: its flight recorder until SIGTERM or Ctrl-C."""
    from pathlib import Path

    from configctl.digests import read_digest_key
    from configctl.kraft.recorder import Recorder, metadata_log_dir, node_id, plaintext_bootstrap
    from configctl.kraft.recordertopic import TOPIC

    node_id(properties, broker_id)
    bootstrap = settings().bootstrap_server or plaintext_bootstrap(properties)
    if bootstrap is None:
        raise click.UsageError(
            "the broker has no PLAINTEXT listener to reach the cluster through: give --bootstrap-server "
            "(and --command-config)"
        )
    command_config = settings().command_config
    recorder = Recorder(
        broker_id,
        metadata_log_dir(properties),
        bootstrap,
        Path(command_config) if command_config else None,
        digest_key=read_digest_key(digest_key_file),
    )
    stop = threading.Event()
    _install_signal_handlers(stop)
    log = logging.getLogger("configctl.listener")
    try:
        recorder.open()
    except BaseException:
        held.drop()
        raise
    held.release()
    try:
        log.info(
            "recording broker %d's metadata log %s into %s at %s from offset %d; stop with SIGTERM or Ctrl-C",
            broker_id,
            recorder.log_dir,
            TOPIC,
            bootstrap,
            recorder.position,
        )
        recorder.run(stop)
    finally:
        recorder.close()
    log.info(
        "stopped at metadata offset %d (%d change(s) recorded)", recorder.position, recorder.recorded_changes
    )


def _start_unless_stopped(instance: Any, stop: threading.Event) -> bool:
    """Start on a helper thread, so a signal is acted on at once, even while connecting.

    Returns False when a signal came first (the half-started listener is closed), True once
    started; a start error is raised here, on the main thread.
    """
    failure: list[BaseException] = []

    def target() -> None:
        try:
            instance.start(timeout=_START_TIMEOUT_S)
        except BaseException as exc:
            failure.append(exc)

    starter = threading.Thread(target=target, name="configctl-listener-start", daemon=True)
    starter.start()
    while starter.is_alive() and not stop.wait(0.05):
        pass
    if starter.is_alive():  # stopped while starting: let go of ZooKeeper and leave
        instance.stop(timeout=2.0)
        return False
    if failure:
        raise failure[0]
    if stop.is_set():  # the signal came as the start finished
        instance.stop()
        return False
    return True


class _HeldLogs:
    """Log records held back while the listener starts: a failed start prints only its error line."""

    def __init__(self, handler: logging.Handler, root: logging.Logger) -> None:
        self.handler = handler
        self.root = root
        self.memory = logging.handlers.MemoryHandler(
            capacity=10_000, flushLevel=logging.CRITICAL + 1, target=handler, flushOnClose=False
        )
        root.handlers[:] = [self.memory]

    def release(self) -> None:
        self.memory.flush()
        self.root.handlers[:] = [self.handler]

    def drop(self, *, keep: bool = False) -> None:
        if keep:
            self.memory.flush()
        else:
            self.memory.buffer.clear()
        self.root.handlers[:] = [self.handler]


def _setup_logging(level: str, log_format: str, broker_id: int) -> _HeldLogs:
    from configctl.listener.logformat import BatchFlushingHandler, buffered_stderr, formatter

    quiet_libraries()
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    handler = BatchFlushingHandler(buffered_stderr())
    handler.setFormatter(formatter(log_format, {"broker_id": broker_id}))
    root = logging.getLogger("configctl")
    root.setLevel(getattr(logging, level.upper()))
    root.propagate = False
    return _HeldLogs(handler, root)


def _install_signal_handlers(stop: threading.Event) -> None:
    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            os._exit(128 + signum)  # a second signal: the operator wants out now
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
