"""Whether ``--bootstrap-server`` names a KRaft cluster, asked once, and its store if so.

The cluster says which it is (:func:`configctl.adminapi.features.cluster_mode`: a finalized
``metadata.version``), so the operator configures nothing: the same command line works on a
ZooKeeper-mode cluster and on a KRaft one. On KRaft no ZooKeeper connection is ever opened, and
a ``--zookeeper`` given explicitly (flag, environment or profile) is refused in one line, since
it cannot be this cluster's: a KRaft cluster keeps its metadata in its controllers.

``--bootstrap-controller`` names the controllers instead (:func:`controller_store`): they are
asked what they are (a KRaft cluster's controllers, not a broker, not a ZooKeeper-mode cluster)
and the store they give is :class:`configctl.kraft.controllerstore.ControllerStore`.
"""

from __future__ import annotations

from pathlib import Path

from configctl.adminapi.client import KafkaAdmin
from configctl.adminapi.controllers import OPTION, ControllerClient
from configctl.adminapi.features import cluster_mode
from configctl.errors import WrongCluster
from configctl.kraft.controllerstore import ControllerStore
from configctl.kraft.store import KRaftStore


def kraft_store(
    bootstrap: str,
    command_config: Path | None,
    *,
    zookeeper: str | None,
    timeout: float,
    identity: str | None = None,
    history_limit: int = 100,
) -> KRaftStore | None:
    """The KRaft store of the cluster at ``bootstrap``, or None when it runs in ZooKeeper mode.

    A ZooKeeper-mode broker in migration mode (ApiVersions' ``ZkMigrationReady``) counts as
    KRaft: from the moment its KRaft controllers take the cluster over, they own the metadata and
    ZooKeeper is their copy (dual-write). The broker forwards every config write to them, and
    configctl's history goes into the cluster's history topic, where it stays once ZooKeeper goes.

    ``zookeeper`` is the connect string the operator gave explicitly (None: only the default),
    refused (:class:`~configctl.errors.WrongCluster`) when the cluster is KRaft.
    """
    admin = KafkaAdmin(bootstrap, command_config, timeout=timeout)
    try:
        mode = cluster_mode(admin)
    except BaseException:
        admin.close()
        raise
    if not mode.kraft and not mode.migration_ready:
        admin.close()
        return None
    if zookeeper is not None:
        admin.close()
        runs = (
            f"runs in KRaft mode (metadata.version {mode.metadata_version})"
            if mode.kraft
            else "is being migrated to KRaft (its brokers run in migration mode)"
        )
        raise WrongCluster(
            f"--zookeeper {zookeeper}: the cluster at {bootstrap} {runs} and keeps its metadata in its "
            "controllers, not in ZooKeeper: drop --zookeeper (and CONFIGCTL_ZOOKEEPER); nothing was written"
        )
    store = KRaftStore(
        bootstrap,
        command_config,
        timeout=timeout,
        identity=identity,
        history_limit=history_limit,
        admin=admin,
    )
    store.mode = mode
    return store


def controller_store(
    bootstrap: str,
    command_config: Path | None,
    *,
    zookeeper: str | None,
    timeout: float,
    identity: str | None = None,
    history_limit: int = 100,
) -> ControllerStore:
    """The store of the KRaft controllers at ``bootstrap`` (``--bootstrap-controller``).

    The controllers are asked what they run (ApiVersions) and who they are (DescribeCluster,
    controller endpoints) before the store is handed out, so a wrong address is one line: a
    ZooKeeper-mode cluster (it has no controller quorum to ask), a broker's listener (give it to
    ``--bootstrap-server``), or an explicit ``--zookeeper`` beside them (:class:`WrongCluster`).
    """
    client = ControllerClient(bootstrap, command_config, timeout=timeout)
    try:
        mode = client.mode()
        if not mode.kraft:
            raise WrongCluster(
                f"{OPTION} {bootstrap}: that Kafka runs in ZooKeeper mode (no metadata.version is "
                "finalized) and has no controller quorum to ask: use --bootstrap-server; nothing was written"
            )
        if zookeeper is not None:
            raise WrongCluster(
                f"--zookeeper {zookeeper}: the controllers at {bootstrap} are a KRaft cluster's "
                f"(metadata.version {mode.metadata_version}), which keeps its metadata in them, not in "
                "ZooKeeper: drop --zookeeper (and CONFIGCTL_ZOOKEEPER); nothing was written"
            )
        quorum = client.quorum()
    except BaseException:
        client.close()
        raise
    return ControllerStore(client, mode, quorum, identity=identity, history_limit=history_limit)


__all__ = ["controller_store", "kraft_store"]
