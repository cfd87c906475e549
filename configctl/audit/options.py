"""The audit's knobs and its one input error, shared by the job and every drift class."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from configctl import snapshot
from configctl.files import kind_of


class AuditInputError(Exception):
    """The input cannot be audited (missing path, unreadable, bad desired state): one line for the user."""


def check_local_snapshots(path: str) -> None:
    """A local snapshots path that is not there (or not readable) is an error before Spark even
    starts (seconds saved); a URI Spark reads (hdfs://, s3a://) is the job's to check.

    A directory or a regular file is read; anything else (a named pipe, a device, a socket) is
    refused in one line: Spark would read it as no snapshot at all, and a typo would pass for a
    fleet without drift."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        local = Path(parsed.path if parsed.scheme == "file" else path).expanduser()
        if not local.exists():
            raise AuditInputError(f"snapshots path {path} does not exist")
        mode = local.stat().st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise AuditInputError(f"snapshots path {path} is not a directory or a file ({kind_of(mode)})")
        if not os.access(local, os.R_OK):
            raise AuditInputError(f"snapshots path {path} is not readable")


@dataclass(frozen=True)
class AuditOptions:
    """Bounds and knobs. ``limit`` caps every finding list; ``max_listed`` caps brokers per value."""

    limit: int = 1000
    max_listed: int = 100
    per_broker_keys: tuple[str, ...] = ()
    heatmap_keys: int = 20
    heatmap_brokers: int = 40
    examples: int = 10
    file_pattern: str = snapshot.FILE_PATTERN
    # The heatmap is drawn from the collected findings when none was cut short (exact, and
    # saves three Spark jobs); set this to always compute it in Spark (tests compare both).
    heatmap_in_spark: bool = False
    # The fleet's digest key (configctl.digests): secrets are compared as HMAC-SHA256 digests
    # under it, as keyed listeners write them. Never shown: left out of repr and of the document.
    digest_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("limit", "max_listed", "heatmap_keys", "heatmap_brokers"):
            if getattr(self, name) < 1:
                raise AuditInputError(f"{name} must be at least 1")
