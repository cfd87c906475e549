"""A log-retention applier: topic retention, as the broker runs it, applied to segment files.

Kafka keeps each partition as ``<log.dir>/<topic>-<partition>/<base-offset>.log`` segments (plus
``.index``/``.timeindex`` files). Its retention pass deletes whole segments, oldest first, never
the active (newest) one: those whose newest record is older than ``retention.ms``, then as many as
needed to bring the partition under ``retention.bytes``. This plugin does the same with the file
modification time standing in for the newest record's timestamp.

Which retention a topic has is the listener's answer (topic override > the broker's
``log.retention.{ms,minutes,hours}`` from ``brokers/<id>``, ``brokers/<default>`` or
server.properties > Kafka's default), so the plugin follows topic overrides and broker-wide
changes alike without knowing the precedence rules. It subscribes to the topic keys and to the
broker keys: topics the listener does not know (no config node) follow the broker's value.

Validation refuses a ``retention.ms`` below ``min_retention_ms`` (default one minute) other than
-1: a retention that short deletes data consumers are still reading, and is nearly always a unit
mistake (seconds typed where milliseconds are expected).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Set
from dataclasses import dataclass
from pathlib import Path

from configctl.entities import EntityType
from configctl.listener import ConfigUpdate, ConfigView, PluginContext, Reconfigurable

TOPIC_KEYS = {"retention.ms", "retention.bytes"}
BROKER_KEYS = {"log.retention.ms", "log.retention.minutes", "log.retention.hours", "log.retention.bytes"}
_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>[0-9]+)$")
_SEGMENT = re.compile(r"^(?P<base>[0-9]{20})\.log$")
_COMPANIONS = (".index", ".timeindex", ".txnindex", ".snapshot")

log = logging.getLogger("configctl.listener.plugin.log_retention")


@dataclass(frozen=True)
class Retention:
    """-1 means unlimited, as in Kafka."""

    ms: int
    bytes: int


def _as_int(name: str, raw: str | None) -> int:
    if raw is None:
        return -1
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None


class LogRetentionApplier(Reconfigurable):
    """Applies each topic's effective retention to the partition directories under ``log.dirs``."""

    name = "log-retention-applier"

    def __init__(
        self,
        log_dirs: list[str | os.PathLike[str]] | None = None,
        *,
        min_retention_ms: int = 60_000,
        apply_on_change: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._configured_dirs = [Path(d) for d in log_dirs] if log_dirs else None
        self.log_dirs: list[Path] = list(self._configured_dirs or [])
        self.min_retention_ms = min_retention_ms
        self.apply_on_change = apply_on_change
        self._clock = clock
        self._view: ConfigView | None = None
        self._lock = threading.Lock()
        self.deleted: list[Path] = []

    # -- Reconfigurable ---------------------------------------------------------------------------

    def configure(self, context: PluginContext) -> None:
        self._view = context.view
        if self._configured_dirs is None:
            broker = context.view.broker_config()
            raw = broker.get("log.dirs")
            raw = raw.value if raw is not None and raw.value else None
            if raw is None:
                fallback = broker.get("log.dir")
                raw = fallback.value if fallback is not None else None
            self.log_dirs = [Path(p.strip()) for p in (raw or "").split(",") if p.strip()]

    def reconfigurable_configs(self) -> Set[str]:
        return TOPIC_KEYS | BROKER_KEYS

    def validate_reconfiguration(self, update: ConfigUpdate) -> None:
        retention = self._retention_of(update)
        if retention.ms != -1 and retention.ms < self.min_retention_ms:
            raise ValueError(
                f"retention of {retention.ms} ms for {update.entity_path} is below the minimum "
                f"{self.min_retention_ms} ms this broker accepts (seconds typed as milliseconds?)"
            )
        if retention.bytes < -1:
            raise ValueError(f"retention.bytes {retention.bytes} for {update.entity_path} must be -1 or more")

    def reconfigure(self, update: ConfigUpdate) -> None:
        if not self.apply_on_change:
            return
        if update.entity.type is EntityType.TOPICS:
            self.enforce(topics={update.entity.name})
        else:
            self.enforce()  # the broker default moved: every topic without an override follows it

    # -- the retention pass -----------------------------------------------------------------------

    def retention(self, topic: str) -> Retention:
        """The retention the listener says ``topic`` has on this broker right now."""
        if self._view is None:
            return Retention(-1, -1)
        values = self._view.topic_config(topic)
        return Retention(
            _as_int("retention.ms", values["retention.ms"].value),
            _as_int("retention.bytes", values["retention.bytes"].value),
        )

    def enforce(self, topics: set[str] | None = None, now: float | None = None) -> list[Path]:
        """Delete expired segments of every partition (or only of ``topics``); returns what went."""
        now = self._clock() if now is None else now
        removed: list[Path] = []
        with self._lock:
            for partition in self._partitions():
                topic = _PARTITION_DIR.match(partition.name).group("topic")  # type: ignore[union-attr]
                if topics is not None and topic not in topics:
                    continue
                removed.extend(self._clean(partition, self.retention(topic), now))
            self.deleted.extend(removed)
        for path in removed:
            log.info("retention deleted %s", path)
        return removed

    def _partitions(self) -> list[Path]:
        found = []
        for directory in self.log_dirs:
            if not directory.is_dir():
                continue
            found.extend(
                p for p in sorted(directory.iterdir()) if p.is_dir() and _PARTITION_DIR.match(p.name)
            )
        return found

    def _clean(self, partition: Path, retention: Retention, now: float) -> list[Path]:
        segments = sorted(p for p in partition.iterdir() if _SEGMENT.match(p.name))
        deletable = segments[:-1]  # never the active segment
        doomed: list[Path] = []
        if retention.ms != -1:
            cutoff = now - retention.ms / 1000.0
            for segment in deletable:
                if segment.stat().st_mtime >= cutoff:
                    break  # segments are in offset order; newer ones follow
                doomed.append(segment)
        if retention.bytes != -1:
            remaining = [s for s in deletable if s not in doomed]
            total = sum(s.stat().st_size for s in segments if s not in doomed)
            for segment in remaining:
                if total <= retention.bytes:
                    break
                total -= segment.stat().st_size
                doomed.append(segment)
        removed = []
        for segment in doomed:
            for path in [segment, *(segment.with_suffix(s) for s in _COMPANIONS)]:
                try:
                    path.unlink()
                    removed.append(path)
                except FileNotFoundError:
                    continue
        return removed

    def _retention_of(self, update: ConfigUpdate) -> Retention:
        if update.entity.type is EntityType.TOPICS:
            return Retention(
                _as_int("retention.ms", update.value("retention.ms")),
                _as_int("retention.bytes", update.value("retention.bytes")),
            )
        return Retention(
            _as_int("log.retention.ms", update.value("log.retention.ms")),
            _as_int("log.retention.bytes", update.value("log.retention.bytes")),
        )
