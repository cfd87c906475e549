"""Whether ``--bootstrap-server`` names a KRaft cluster, asked once, and its store if so.

The cluster says which it is (:func:`configctl.adminapi.features.cluster_mode`: a finalized
``metadata.version``), so the operator configures nothing: the same command line works on a
ZooKeeper-mode cluster and on a KRaft one. On KRaft no ZooKeeper connection is ever opened, and
a ``--zookeeper`` given explicitly (flag, environment or profile) is refused in one line, since
it cannot be this cluster's: a KRaft cluster keeps its metadata in its controllers.
"""

from __future__ import annotations

from pathlib import Path

from configctl.adminapi.client import KafkaAdmin
from configctl.adminapi.features import cluster_mode
from configctl.errors import WrongCluster
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

    ``zookeeper`` is the connect string the operator gave explicitly (None: only the default),
    refused (:class:`~configctl.errors.WrongCluster`) when the cluster is KRaft.
    """
    admin = KafkaAdmin(bootstrap, command_config, timeout=timeout)
    try:
        mode = cluster_mode(admin)
    except BaseException:
        admin.close()
        raise
    if not mode.kraft:
        admin.close()
        return None
    if zookeeper is not None:
        admin.close()
        raise WrongCluster(
            f"--zookeeper {zookeeper}: the cluster at {bootstrap} runs in KRaft mode (metadata.version "
            f"{mode.metadata_version}) and keeps its metadata in its controllers, not in ZooKeeper: "
            "drop --zookeeper (and CONFIGCTL_ZOOKEEPER); nothing was written"
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


__all__ = ["kraft_store"]
