"""``configctl listener run``: one broker's listener in the foreground, until SIGTERM or Ctrl-C.

Logs go to stderr, one line per applied change::

    2026-01-05 10:00:00,123 INFO applied change 42: topics/orders retention.ms=86400000 (DYNAMIC_TOPIC_CONFIG)

On SIGTERM or SIGINT the listener stops cleanly: the state node is removed, the last snapshot is
already on disk, plugins are closed, and the exit status is 0. A second signal exits at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import FrameType

import click

from configctl.cli.context import quiet_libraries
from configctl.cli.options import global_options, settings

_LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"


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
    help="Keep DIR/broker-<id>.jsonl, the effective-config snapshot the audit reads.",
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
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
@global_options
def run(
    broker_id: int,
    server_properties: str,
    state_dir: str | None,
    change_expiration_ms: int,
    plugins: tuple[str, ...],
    discover_plugins: bool,
    log_level: str,
) -> None:
    """Follow dynamic config changes as broker BROKER_ID, in the foreground.

    \b
      configctl listener run --broker-id 1 --server-properties examples/server-1.properties \\
          --state-dir /tmp/configctl-state --plugin examples.plugins.quota_enforcer:ClientQuotaEnforcer
    """
    from configctl.listener import ConfigListener

    _setup_logging(log_level)
    opts = settings()
    stop = threading.Event()
    _install_signal_handlers(stop)
    instance = ConfigListener(
        opts.zookeeper,
        broker_id,
        server_properties,
        change_expiration_ms=change_expiration_ms,
        plugins=plugins,
        discover_plugins=discover_plugins,
        state_dir=state_dir,
        zk_auth=opts.zk_auth,
        zk_timeout=opts.zk_timeout,
    )
    log = logging.getLogger("configctl.listener")
    instance.start()
    try:
        where = f", snapshot {instance.snapshot.path}" if instance.snapshot is not None else ""
        log.info(
            "listening as broker %d on %s (last applied change %d%s); stop with SIGTERM or Ctrl-C",
            broker_id,
            opts.zookeeper,
            instance.last_applied_change,
            where,
        )
        while not stop.wait(0.5):
            pass
        log.info("stopping broker %d's listener", broker_id)
    finally:
        instance.stop()
    log.info("stopped at change %d", instance.last_applied_change)


def _setup_logging(level: str) -> None:
    quiet_libraries()
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_LOG_FORMAT))
    root = logging.getLogger("configctl")
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper()))
    root.propagate = False


def _install_signal_handlers(stop: threading.Event) -> None:
    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            os._exit(128 + signum)  # a second signal: the operator wants out now
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
