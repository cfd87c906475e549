"""Who owns the cluster's metadata, read as a write needs it: the owner, and ``/controller_epoch``'s version to check in the multi.

Every multi the store sends is preceded by this one read and refused with nothing written while a
KRaft controller or a migration owns the metadata (:mod:`configctl.migration`, exit 14). The multi
then checks ``/controller_epoch``'s version, as Kafka's migration writes do, so a KRaft controller
claiming the cluster after this read makes the write fail instead of landing behind its back.
"""

from __future__ import annotations

from configctl.migration import CONTROLLER_EPOCH_PATH, OWNER_PATHS, MetadataOwner, metadata_owner
from configctl.zk.session import ZkSession


def read_metadata_owner(session: ZkSession) -> tuple[MetadataOwner, int | None]:
    """Who owns the cluster's metadata (``/controller``, ``/migration``) and ``/controller_epoch``'s
    version (None when absent), read in one round (one multiRead where the server has it)."""
    controller, migration, epoch = session.get_many([*OWNER_PATHS, CONTROLLER_EPOCH_PATH])
    owner = metadata_owner(
        None if controller is None else controller[0], None if migration is None else migration[0]
    )
    return owner, None if epoch is None else epoch[1].version
