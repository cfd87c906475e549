"""Which Kafka a ``--bootstrap-server`` names, as the cluster itself says: KRaft or ZooKeeper mode,
and the release line.

Kafka's feature versioning (KIP-584) answers it without any configuration on configctl's side.
A KRaft cluster's controllers finalize the ``metadata.version`` feature when the storage is
formatted, and every broker reports the finalized level in its ApiVersions answer (version 3 and
later: ``finalized_features``), beside the range of levels its own software supports
(``supported_features``). A ZooKeeper-mode broker (Kafka 3.x: Kafka 4 has no ZooKeeper mode)
finalizes no ``metadata.version``; 3.9.2 in ZooKeeper mode reports no feature at all.

A level names a release (Kafka's ``MetadataVersion``, server-common: level 21 is ``3.9-IV0``, 22
``4.0-IV0``, 33 ``4.4-IV2``). The finalized level is what the whole cluster has committed to (a
cluster upgraded from 3.9 may still run ``3.9-IV0`` on Kafka 4), so the release line of the
software is read from the highest level the answering broker supports: 22 or above is Kafka 4.
(A 3.9 broker with ``unstable.feature.versions.enable``, a test-only setting, supports 4.0's
unstable levels too and would read as 4.x.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest

from configctl import __version__
from configctl.adminapi.client import KafkaAdmin
from configctl.adminapi.errors import refusal

METADATA_VERSION = "metadata.version"

# Each release's metadata versions, as (release, first IV, how many): level 1 is 3.0-IV1, and each
# next level the next IV (Kafka's MetadataVersion enum; levels of 4.4.0, checked against its jars).
_RELEASES = (
    ("3.0", 1, 1),
    ("3.1", 0, 1),
    ("3.2", 0, 1),
    ("3.3", 0, 4),
    ("3.4", 0, 1),
    ("3.5", 0, 3),
    ("3.6", 0, 3),
    ("3.7", 0, 5),
    ("3.8", 0, 1),
    ("3.9", 0, 1),
    ("4.0", 0, 4),
    ("4.1", 0, 2),
    ("4.2", 0, 2),
    ("4.3", 0, 1),
    ("4.4", 0, 3),
)
_NAMES = tuple(f"{release}-IV{first + i}" for release, first, count in _RELEASES for i in range(count))
FIRST_KAFKA_4_LEVEL = _NAMES.index("4.0-IV0") + 1


def metadata_version_name(level: int) -> str | None:
    """``3.9-IV0`` for level 21 ...; None for a level newer than the ones known here (or below 1)."""
    return _NAMES[level - 1] if 1 <= level <= len(_NAMES) else None


@dataclass(frozen=True)
class ClusterMode:
    """What one broker of the cluster said about its features."""

    metadata_level: int | None
    """The finalized ``metadata.version`` level: None in ZooKeeper mode."""
    supported_level: int | None
    """The highest ``metadata.version`` level the answering broker's software supports (None: none)."""
    migration_ready: bool = False
    """ApiVersions' ``ZkMigrationReady`` (KIP-866): set by a node that runs with
    ``zookeeper.metadata.migration.enable``, a ZooKeeper-mode broker or a KRaft controller taking
    a cluster over; a KRaft broker never sets it, and a controller stops once the migration is
    finalized (each shown on real 3.9.2 nodes, ``tests/migration``)."""

    @property
    def kraft(self) -> bool:
        """Whether the cluster runs in KRaft mode (its metadata in a controller quorum, not ZooKeeper)."""
        return self.metadata_level is not None

    @property
    def metadata_version(self) -> str | None:
        """The finalized metadata version as Kafka names it (``4.4-IV2``); None in ZooKeeper mode,
        ``level N`` for a level newer than the ones known here."""
        if self.metadata_level is None:
            return None
        return metadata_version_name(self.metadata_level) or f"level {self.metadata_level}"

    @property
    def release(self) -> str | None:
        """The release the answering broker's software is (``4.4``), as far as its supported
        levels tell; None in ZooKeeper mode or for a release newer than the ones known here."""
        if not self.kraft or self.supported_level is None:
            return None
        name = metadata_version_name(self.supported_level)
        return name.partition("-")[0] if name else None

    @property
    def line(self) -> str:
        """``4.x`` or ``3.x``: Kafka 4 and newer have no ZooKeeper mode, so ZooKeeper mode is 3.x."""
        kafka4 = self.kraft and (self.supported_level or 0) >= FIRST_KAFKA_4_LEVEL
        return "4.x" if kafka4 else "3.x"


def cluster_mode(admin: KafkaAdmin) -> ClusterMode:
    """Ask one broker of ``admin``'s cluster (ApiVersions v3) which features it runs.

    A broker too old for ApiVersions v3 (before Kafka 2.4) or one that refuses the request is a
    one-line :class:`~configctl.errors.BrokerRefused`, an unreachable cluster
    :class:`~configctl.errors.KafkaUnavailable`: translated in :mod:`configctl.adminapi.errors`.
    """
    response = admin._send(features_request(), None, FEATURES_ACTION)  # the package's one send path
    return mode_of(response)


FEATURES_ACTION = "describe the cluster's features"


def features_request() -> ApiVersionsRequest:
    """ApiVersions v3 or later: the version that carries the finalized and supported features."""
    return ApiVersionsRequest(
        client_software_name="configctl", client_software_version=__version__, min_version=3
    )


def mode_of(response: Any) -> ClusterMode:
    """What an ApiVersions answer (of a broker or of a controller: both answer it) says the
    cluster runs; a refusal in it is a one-line :class:`~configctl.errors.BrokerRefused`."""
    problem = refusal(response.error_code, None, FEATURES_ACTION)
    if problem is not None:
        raise problem
    finalized = {f.name: f.max_version_level for f in response.finalized_features or ()}
    supported = {f.name: f.max_version for f in response.supported_features or ()}
    return ClusterMode(
        finalized.get(METADATA_VERSION),
        supported.get(METADATA_VERSION),
        bool(getattr(response, "zk_migration_ready", False)),
    )


__all__ = [
    "FEATURES_ACTION",
    "FIRST_KAFKA_4_LEVEL",
    "METADATA_VERSION",
    "ClusterMode",
    "cluster_mode",
    "features_request",
    "metadata_version_name",
    "mode_of",
]
