"""What every ZooKeeper-using command needs: a store opened from the global options, quiet logs."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from configctl.cli.options import settings
from configctl.errors import InvalidInput
from configctl.zkstore import ZkStore


def quiet_libraries() -> None:
    """kazoo logs connection retries at WARNING; a CLI shows one clear error line instead."""
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    logging.getLogger("kazoo").addHandler(logging.NullHandler())
    # e.g. "No chroot path exists": the command reports that itself, in one line.
    warnings.filterwarnings("ignore", module="kazoo")


@contextmanager
def open_store(*, reason_identity: str | None = None) -> Iterator[ZkStore]:
    """Open a :class:`ZkStore` from --zookeeper/--zk-auth/--zk-timeout; closed on exit."""
    quiet_libraries()
    opts = settings()
    raw_limit = os.environ.get("CONFIGCTL_HISTORY_LIMIT", "") or "50"
    if not raw_limit.isdigit():
        raise InvalidInput(f"CONFIGCTL_HISTORY_LIMIT must be a non-negative integer, not {raw_limit!r}")
    history_limit = int(raw_limit)
    store = ZkStore(
        opts.zookeeper,
        auth=opts.zk_auth,
        timeout=opts.zk_timeout,
        identity=reason_identity,
        history_limit=history_limit,
    )
    with store:
        yield store
