"""What every ZooKeeper-using command needs: a store opened from the global options, quiet logs."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import click

from configctl.cli.options import settings
from configctl.errors import InvalidInput
from configctl.zk.configstore import ConfigStore
from configctl.zk.connection import ConnectionSettings


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


@contextmanager
def open_store(*, reason_identity: str | None = None) -> Iterator[ConfigStore]:
    """Open a :class:`ConfigStore` from the global options; closed on exit."""
    quiet_libraries()
    raw_limit = os.environ.get("CONFIGCTL_HISTORY_LIMIT", "") or "50"
    if not raw_limit.isdigit():
        raise InvalidInput(f"CONFIGCTL_HISTORY_LIMIT must be a non-negative integer, not {raw_limit!r}")
    store = ConfigStore.connect(connection_settings(), identity=reason_identity, history_limit=int(raw_limit))
    with store:
        yield store
