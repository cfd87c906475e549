"""What every command that reads or writes configs needs: a store opened from the global options.

:func:`new_store` is the one place the store's implementation is chosen; commands and features
only ever see :class:`configctl.store.ConfigStore` and what its ``capabilities`` declare.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import click

from configctl.cli import render
from configctl.cli.options import bootstrap_controller, settings
from configctl.errors import InvalidInput
from configctl.settings import BY_NAME, DEFAULT_HISTORY_LIMIT, GlobalSettings
from configctl.store import ConfigStore, History, Store
from configctl.zk.configstore import ZooKeeperStore
from configctl.zkconnection import ConnectionSettings


def quiet_libraries() -> None:
    """kazoo logs connection retries at WARNING; a CLI shows one clear error line instead."""
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    logging.getLogger("kazoo").addHandler(logging.NullHandler())
    # e.g. "No chroot path exists": the command reports that itself, in one line.
    warnings.filterwarnings("ignore", module="kazoo")


def connection_settings(ctx: click.Context | None = None) -> ConnectionSettings:
    """The ZooKeeper connection the global settings describe: flags, environment and profile
    merged by precedence, checked (one-line errors). Every command, ``listener run`` and the
    audit connect with this, so TLS, SASL and credentials work the same everywhere."""
    return settings(ctx).connection()


def new_store(
    ctx: click.Context | None = None,
    *,
    timeout: float | None = None,
    identity: str | None = None,
    history_limit: int = DEFAULT_HISTORY_LIMIT,
) -> ConfigStore:
    """The store the global settings describe, not opened yet: THE place its implementation is chosen.

    Like an HTTP client picking its transport, this looks at the settings once and returns one
    :class:`~configctl.store.ConfigStore`; no command and no feature branches on which it is.
    Every role is ZooKeeper's (:class:`configctl.zk.configstore.ZooKeeperStore`), composed
    explicitly (:class:`configctl.store.Store`): with ``--bootstrap-server`` the writes are
    :class:`configctl.adminapi.store.BrokersThroughAdmin`'s, which sends running brokers' configs
    through the brokers' Admin API (and rollout records are written through it), and with
    ``--history-archive`` the history is :class:`configctl.archive.ArchivedHistory`'s, which reads
    the history archive beside ZooKeeper's records.
    With ``--bootstrap-server``, the brokers' cluster id must be the one ZooKeeper holds
    (:class:`configctl.cli.onecluster.OneCluster`): checked before the first write, so a command
    that only reads never contacts Kafka, and mixed clusters get nothing written anywhere.
    With ``--bootstrap-server`` naming a KRaft cluster (it says so itself), every role is
    :class:`configctl.kraft.store.KRaftStore`'s and its writes
    :class:`configctl.kraft.writes.KRaftWrites`': no ZooKeeper connection is opened.
    With ``--bootstrap-controller`` (never beside ``--bootstrap-server``), the store is the
    controllers' (:class:`configctl.kraft.controllerstore.ControllerStore`): no ZooKeeper either.
    ``timeout`` overrides the settings' (shell completion must not hang).
    """
    chosen = settings(ctx)
    controllers = bootstrap_controller(ctx)
    if controllers is not None:
        return _controller_store(chosen, controllers, timeout, identity, history_limit)
    if chosen.bootstrap_server is not None:
        # The cluster says whether it is KRaft (no ZooKeeper at all): asked once, here.
        from configctl.kraft.choice import kraft_store
        from configctl.kraft.writes import KRaftWrites

        kraft = kraft_store(
            chosen.bootstrap_server,
            chosen.command_config,
            zookeeper=chosen.zookeeper if chosen.zookeeper_explicit else None,
            timeout=chosen.connection(timeout=timeout).timeout,
            identity=identity,
            history_limit=history_limit,
        )
        if kraft is not None:
            archived: History | None = None
            if chosen.history_archive is not None:
                from configctl.archive import ArchivedHistory

                archived = ArchivedHistory(kraft, chosen.history_archive, warn=render.warning)
            from configctl.kraft.rollouts import RolloutsOnKRaft

            rollouts = RolloutsOnKRaft.of(kraft)
            return Store(
                kraft,
                writes=KRaftWrites(kraft),
                history=archived,
                rollouts=rollouts,
                kind=kraft.kind,
                closing=[rollouts.close],
            )
    zookeeper = ZooKeeperStore.connect(
        chosen.connection(timeout=timeout), identity=identity, history_limit=history_limit
    )
    history: History | None = None
    if chosen.history_archive is not None:
        # Every reader of history gets ZooKeeper's records and the archive's as one.
        from configctl.archive import ArchivedHistory

        history = ArchivedHistory(zookeeper, chosen.history_archive, warn=render.warning)
    if chosen.bootstrap_server is None:
        return Store(zookeeper, history=history)
    # Running brokers' configs go through the brokers (they validate them); the rest as before.
    from configctl.adminapi.store import BrokersThroughAdmin, InMemoryReads

    through = BrokersThroughAdmin(
        Store(zookeeper, history=history), chosen.bootstrap_server, chosen.command_config
    )
    # Both options must name one cluster: asked once, before the first write (a read pays nothing).
    from configctl.cli.onecluster import OneCluster

    writes = OneCluster(
        through,
        kafka_id=lambda: through.admin.cluster_id(),
        zookeeper_id=zookeeper.cluster_id,
        bootstrap=chosen.bootstrap_server,
        zookeeper=zookeeper.location,
    )
    return Store(
        zookeeper,
        reads=InMemoryReads(zookeeper, through),  # a broker's loggers asked of that broker
        writes=writes,
        history=history,
        rollouts=zookeeper.rollouts_through,
        kind=through.kind,
        closing=[through.close],
    )


def _controller_store(
    chosen: GlobalSettings, controllers: str, timeout: float | None, identity: str | None, history_limit: int
) -> ConfigStore:
    """``--bootstrap-controller``: the controllers' store, never beside ``--bootstrap-server``
    (refused as kafka-configs.sh refuses it, "Only one of --bootstrap-server or
    --bootstrap-controller can be specified"), before anything is opened."""
    if chosen.bootstrap_server is not None:
        given = chosen.entry("bootstrap-server").source.label(BY_NAME["bootstrap-server"])
        raise InvalidInput(
            f"{given} and --bootstrap-controller: give only one of --bootstrap-server or "
            "--bootstrap-controller (as kafka-configs.sh); nothing was written"
        )
    from configctl.kraft.choice import controller_store

    store = controller_store(
        controllers,
        chosen.command_config,
        zookeeper=chosen.zookeeper if chosen.zookeeper_explicit else None,
        timeout=chosen.connection(timeout=timeout).timeout,
        identity=identity,
        history_limit=history_limit,
    )
    return Store(store, kind=store.kind)


def passwords_in_clear(ctx: click.Context | None = None) -> bool:
    """Whether the store :func:`new_store` chooses sends broker passwords to the brokers to encrypt
    (``--bootstrap-server``), so a change is prepared with them in clear; decided here, beside it."""
    return settings(ctx).bootstrap_server is not None


@contextmanager
def open_store(*, reason_identity: str | None = None) -> Iterator[ConfigStore]:
    """Open the store (:func:`new_store`) from the global options; closed on exit."""
    quiet_libraries()
    store = new_store(identity=reason_identity, history_limit=settings().history_limit)
    with store:
        yield store
