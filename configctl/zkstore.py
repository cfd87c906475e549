"""Transitional names for the desired-state code being moved into ``configctl/desired/``.

Removed as soon as that move lands: new code imports from :mod:`configctl.zk`.
"""

from __future__ import annotations

from configctl.zk.configstore import (
    DEFAULT_HISTORY_LIMIT,
    MAX_MULTI_OPS,
    Change,
    Committed,
    ConfigStore,
    Stored,
    batches,
)
from configctl.zk.connection import ConnectionSettings
from configctl.zk.errors import VersionConflict
from configctl.znodes import HistoryZNodes

HISTORY_ROOT = HistoryZNodes.ROOT


def ZkStore(
    connect: str,
    *,
    auth: str | None = None,
    timeout: float = 10.0,
    history_limit: int = DEFAULT_HISTORY_LIMIT,
    identity: str | None = None,
) -> ConfigStore:
    return ConfigStore.connect(
        ConnectionSettings.of(connect, auth=auth, timeout=timeout),
        history_limit=history_limit,
        identity=identity,
    )


__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "HISTORY_ROOT",
    "MAX_MULTI_OPS",
    "Change",
    "Committed",
    "Stored",
    "VersionConflict",
    "ZkStore",
    "batches",
]
