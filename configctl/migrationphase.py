"""Which phase of the ZooKeeper-to-KRaft migration a cluster is in, from what its parts say.

Four phases, in order (``configctl migration status``, docs/migration.md):

- ``zookeeper``: ZooKeeper owns the metadata, no migration was started (no ``/migration``);
- ``migrating``: a KRaft controller quorum runs in migration mode and waits for the brokers, or
  copies ZooKeeper's metadata into its log (``/migration`` exists, no offset committed yet);
- ``dual-write``: the metadata is in the KRaft log and the controllers write every change back to
  ZooKeeper (the controllers still run with ``zookeeper.metadata.migration.enable``); the brokers
  move from ZooKeeper mode to KRaft mode during this phase;
- ``kraft``: the controllers left migration mode (finalized), or the cluster never had ZooKeeper.

Three witnesses, each optional, none trusted alone: ZooKeeper's ``/controller`` and ``/migration``
(:class:`configctl.migration.MetadataOwner`), each broker's ApiVersions answer and each
controller's (:class:`configctl.adminapi.features.ClusterMode`: a finalized ``metadata.version``
is a KRaft node, ``ZkMigrationReady`` one in migration mode). ZooKeeper cannot tell dual-write
from finalized (Kafka leaves ``/migration`` as it was), and a controller is the only node that
knows whether it still writes to ZooKeeper: so without a controller's answer those two are named
together, never guessed. Pure: :mod:`configctl.cli.migration` asks the witnesses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from configctl.migration import MIGRATED, MIGRATING, MetadataOwner

ZOOKEEPER_PHASE = "zookeeper"
MIGRATING_PHASE = "migrating"
DUAL_WRITE_PHASE = "dual-write"
KRAFT_PHASE = "kraft"
PHASES = (ZOOKEEPER_PHASE, MIGRATING_PHASE, DUAL_WRITE_PHASE, KRAFT_PHASE)

# What one node runs, from its ApiVersions answer.
ZK_NODE = "zookeeper"
ZK_MIGRATION_NODE = "zookeeper, migration mode"
KRAFT_NODE = "kraft"
KRAFT_MIGRATION_NODE = "kraft, migration mode"
UNREACHABLE = "unreachable"


@dataclass(frozen=True)
class NodeAnswer:
    """What one node said about itself: KRaft or not (a finalized ``metadata.version``), and
    whether it runs in migration mode; ``problem`` when it could not be asked."""

    kraft: bool = False
    migration_ready: bool = False
    problem: str | None = None

    @property
    def mode(self) -> str:
        if self.problem is not None:
            return UNREACHABLE
        if self.kraft:
            return KRAFT_MIGRATION_NODE if self.migration_ready else KRAFT_NODE
        return ZK_MIGRATION_NODE if self.migration_ready else ZK_NODE


@dataclass(frozen=True)
class Phase:
    """The phase, why, what comes next, and what each node said."""

    name: str
    detail: str
    next_step: str | None
    brokers: Mapping[int, NodeAnswer] = field(default_factory=dict)
    controllers: Mapping[str, NodeAnswer] = field(default_factory=dict)
    """Each controller by its ``host:port``."""
    owner: MetadataOwner | None = None
    certain: bool = True
    """False when the witnesses asked cannot tell two phases apart (the detail names both)."""

    def to_json(self) -> dict[str, Any]:
        """``configctl migration status -o json`` (docs/reference/json-output.md)."""
        return {
            "phase": self.name,
            "certain": self.certain,
            "detail": self.detail,
            "next_step": self.next_step,
            "zookeeper": self.owner.to_json() if self.owner is not None else None,
            "brokers": [
                {"id": node_id, "mode": answer.mode, "problem": answer.problem}
                for node_id, answer in sorted(self.brokers.items())
            ],
            "controllers": [
                {"address": address, "mode": answer.mode, "problem": answer.problem}
                for address, answer in sorted(self.controllers.items())
            ],
        }


_NEXT = {
    ZOOKEEPER_PHASE: "provision a KRaft controller quorum in migration mode with this cluster's id "
    "(docs/migration.md, step 2)",
    MIGRATING_PHASE: "restart every broker with zookeeper.metadata.migration.enable and the controller "
    "quorum; the copy starts once the last one registers (docs/migration.md, step 3)",
    DUAL_WRITE_PHASE: "carry configctl's history (`configctl migration carry`, step 4), restart the brokers as "
    "KRaft brokers (step 6), then run `configctl migration check` and finalize: restart the controllers "
    "without zookeeper.metadata.migration.enable (docs/migration.md, step 7)",
}


_FINALIZE = (
    "run `configctl migration check` until it exits 0, then finalize: restart the controllers without "
    "zookeeper.metadata.migration.enable (docs/migration.md, step 7)"
)


def _count(answers: Mapping[Any, NodeAnswer], mode: str) -> int:
    return sum(1 for answer in answers.values() if answer.mode == mode)


def _brokers_line(brokers: Mapping[int, NodeAnswer]) -> str:
    if not brokers:
        return "no broker was asked"
    groups: dict[str, list[int]] = {}
    for node_id, answer in sorted(brokers.items()):
        groups.setdefault(answer.mode, []).append(node_id)
    return "; ".join(f"brokers {', '.join(map(str, ids))}: {mode}" for mode, ids in groups.items())


def decide(
    owner: MetadataOwner | None,
    brokers: Mapping[int, NodeAnswer],
    controllers: Mapping[str, NodeAnswer],
) -> Phase:
    """The phase the witnesses show (``owner`` None: ZooKeeper was not asked)."""
    asked = [a for a in controllers.values() if a.problem is None]
    migrating_controllers = any(a.kraft and a.migration_ready for a in asked)
    kraft_brokers = _count(brokers, KRAFT_NODE) + _count(brokers, KRAFT_MIGRATION_NODE)
    zk_brokers = _count(brokers, ZK_NODE) + _count(brokers, ZK_MIGRATION_NODE)
    state = owner.migration if owner is not None else None
    nodes = _brokers_line(brokers)

    def phase(name: str, detail: str, *, certain: bool = True) -> Phase:
        next_step = _NEXT.get(name)
        if name == DUAL_WRITE_PHASE and kraft_brokers and not zk_brokers:
            next_step = _FINALIZE
        return Phase(name, detail, next_step, brokers, controllers, owner, certain)

    if owner is not None and owner.owner != MIGRATING:
        if asked and not migrating_controllers and kraft_brokers and not zk_brokers:
            return phase(KRAFT_PHASE, f"no migration was ever started and the cluster runs KRaft ({nodes})")
        if migrating_controllers:  # quorum up before it wrote /migration: the first seconds
            return phase(MIGRATING_PHASE, f"a KRaft controller quorum runs in migration mode ({nodes})")
        return phase(ZOOKEEPER_PHASE, f"{owner.detail} ({nodes})")
    if state is not None and state.phase != MIGRATED:
        return phase(MIGRATING_PHASE, f"/migration: {state.describe()} ({nodes})")
    plain_zk_brokers = _count(brokers, ZK_NODE)
    if owner is None and migrating_controllers and plain_zk_brokers:
        return phase(
            MIGRATING_PHASE,
            f"the controllers run in migration mode and wait: the copy starts once every broker runs in "
            f"migration mode ({nodes})",
        )
    if owner is None and migrating_controllers and not kraft_brokers:
        return phase(
            DUAL_WRITE_PHASE,
            f"the controllers and every broker run in migration mode, so the copy is done or under way "
            f"({nodes}): give --zookeeper to tell",
            certain=False,
        )
    if migrating_controllers:
        return phase(
            DUAL_WRITE_PHASE,
            f"the metadata is in the KRaft log and the controllers in migration mode write it back to "
            f"ZooKeeper ({nodes})",
        )
    if asked:
        zookeeper = " (ZooKeeper is no longer written)" if owner is not None else ""
        if zk_brokers:
            return phase(
                DUAL_WRITE_PHASE,
                f"the controllers left migration mode while brokers still run in ZooKeeper mode ({nodes})",
            )
        return phase(KRAFT_PHASE, f"the controllers run without migration mode{zookeeper} ({nodes})")
    if owner is None and zk_brokers and not kraft_brokers:
        migrating = _count(brokers, ZK_MIGRATION_NODE)
        if not migrating:
            return phase(
                ZOOKEEPER_PHASE,
                f"every broker runs in ZooKeeper mode outside a migration and no controller was asked "
                f"({nodes}): give --zookeeper to tell whether a KRaft quorum waits for them",
                certain=False,
            )
        return phase(
            DUAL_WRITE_PHASE,
            f"brokers run in migration mode and no controller answered ({nodes}): give --zookeeper or "
            "--bootstrap-controller to tell",
            certain=False,
        )
    if owner is None and kraft_brokers and not zk_brokers:
        return phase(
            KRAFT_PHASE,
            f"every broker runs KRaft and no controller was asked, so whether the controllers still "
            f"write to ZooKeeper is not known ({nodes}): give --bootstrap-controller to tell",
            certain=False,
        )
    return phase(
        DUAL_WRITE_PHASE,
        f"ZooKeeper shows the metadata migrated, but no controller answered, so dual-write and a "
        f"finalized migration cannot be told apart ({nodes}): give --bootstrap-controller to tell",
        certain=False,
    )


__all__ = ["PHASES", "NodeAnswer", "Phase", "decide"]
