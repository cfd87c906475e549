"""Who owns the cluster's metadata: ZooKeeper, a KRaft controller, or a migration between them.

Kafka's ZooKeeper-to-KRaft migration leaves two nodes configctl must read before it writes
under ``/config`` (tag 3.9.0-rc3 of apache/kafka, ``core/src/main/scala/kafka/zk/ZkData.scala``):

* ``/controller`` (``ControllerZNode``): the active controller,
  ``{"version":2,"brokerid":1,"timestamp":"...","kraftControllerEpoch":-1}``. A ZooKeeper-mode
  controller writes ``kraftControllerEpoch`` -1 (brokers before 3.4 write no such key); a KRaft
  controller that takes over during a migration writes its Raft epoch, above 0, and the node
  then stays (it is persistent, not ephemeral).
* ``/migration`` (``MigrationZNode``): created by the active KRaft controller when it starts a
  migration, with ``version`` 0 and ``kraft_controller_id``, ``kraft_controller_epoch``,
  ``kraft_metadata_offset`` and ``kraft_metadata_epoch``. Its absence means no migration was ever
  started (``ZkMigrationLeadershipState``'s own documentation); Kafka never deletes it.

Kafka 3.9's brokers refuse their ZooKeeper config writes while ``/controller`` names a KRaft
controller (``KafkaZkClient.setOrCreateEntityConfigs``: ``kraftEpoch.exists(epoch => epoch >
0)``, KAFKA-16539): the KRaft controller owns the configs then, and a write in ZooKeeper is
either never read or overwritten when it syncs its metadata back. configctl goes one step
further and also refuses once ``/migration`` exists: from the first moment a KRaft quorum
prepares to take over, ZooKeeper is on its way out, and after the migration nobody reads it.
(``kafka-configs.sh --zookeeper`` itself skips the check, ``enableEntityConfigControllerCheck =
false`` in ``ConfigCommand.scala``, to let operators bootstrap a cluster that is not running: so
does configctl when there is no ``/controller`` at all.)

Everything here is pure: the bytes are read by :mod:`configctl.zk.ownership`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configctl.errors import InvalidInput, MigrationInProgress, one_line

# The strict JSON reader every node decoder shares (duplicate keys, NaN and bad UTF-8 refused).
from configctl.znodes import _parse_json_object, is_json_int

CONTROLLER_EPOCH_PATH = "/controller_epoch"
"""Bumped by every controller election, ZooKeeper or KRaft (``ControllerEpochZNode``): a write that
checks its version cannot land after a KRaft controller claimed the cluster."""

ZOOKEEPER = "zookeeper"
KRAFT = "kraft"
MIGRATING = "migrating"
NONE = "none"
UNKNOWN = "unknown"
"""The owners :func:`metadata_owner` tells apart (``owner`` in ``configctl status -o json``)."""

_INT = (-(2**31), 2**31 - 1)
_LONG = (-(2**63), 2**63 - 1)


def _number(obj: dict[str, Any], key: str, what: str, bounds: tuple[int, int] = _INT) -> int:
    """A JSON integer as Kafka's ``to[Int]``/``to[Long]`` reads it (no strings, booleans or floats)."""
    if key not in obj:
        raise InvalidInput(f'{what} has no "{key}"')
    value = obj[key]
    if not is_json_int(value) or not bounds[0] <= value <= bounds[1]:
        kind = "an int" if bounds == _INT else "a long"
        raise InvalidInput(f'{what}: "{key}" must be {kind}, not {one_line(repr(value), 40)}')
    return value


# -- /controller ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ControllerRegistration:
    """What ``/controller`` says: the controller's id and, since Kafka 3.4, its KRaft epoch."""

    broker_id: int
    kraft_controller_epoch: int | None
    """-1 from a ZooKeeper-mode controller, above 0 from a KRaft controller, None when absent."""

    @property
    def is_kraft(self) -> bool:
        """Kafka's own test, to the letter: an epoch that exists and is above 0."""
        return self.kraft_controller_epoch is not None and self.kraft_controller_epoch > 0


class ControllerZNode:
    """``/controller``, as ``kafka.zk.ControllerZNode`` writes and reads it."""

    PATH = "/controller"

    @staticmethod
    def encode(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1) -> bytes:
        """Kafka's exact bytes (a four-entry Scala map keeps its order; the timestamp is a string).

        configctl never writes this node: the encoder documents Kafka's bytes and lets tests write
        a node exactly as a ZooKeeper-mode or a KRaft controller of Kafka 3.9 does.
        """
        return (
            f'{{"version":2,"brokerid":{int(broker_id)},"timestamp":"{int(timestamp_ms)}",'
            f'"kraftControllerEpoch":{int(kraft_controller_epoch)}}}'
        ).encode()

    @staticmethod
    def decode(data: bytes) -> ControllerRegistration:
        """Read it as ``ControllerZNode.decodeController`` does: ``brokerid`` is required,
        ``kraftControllerEpoch`` optional, ``version`` and ``timestamp`` are not checked."""
        what = "/controller"
        if not data:
            raise InvalidInput(f"{what} is empty")
        obj = _parse_json_object(data, what)
        broker_id = _number(obj, "brokerid", what)
        epoch = _number(obj, "kraftControllerEpoch", what) if "kraftControllerEpoch" in obj else None
        return ControllerRegistration(broker_id, epoch)


# -- /migration -----------------------------------------------------------------------------------

PREPARING = "preparing"
COPYING = "copying"
MIGRATED = "migrated"
"""The phases ``/migration`` shows (the driver's finer states, ``MigrationDriverState``, live in
the KRaft controller's memory, not in ZooKeeper)."""


@dataclass(frozen=True)
class MigrationState:
    """What ``/migration`` says (``ZkMigrationLeadershipState``'s persistent part)."""

    kraft_controller_id: int
    kraft_controller_epoch: int
    kraft_metadata_offset: int
    kraft_metadata_epoch: int

    @property
    def phase(self) -> str:
        """How far the migration got, as far as ZooKeeper can tell.

        ``preparing``: a KRaft controller created the node with no leader in it yet
        (``ZkMigrationLeadershipState.EMPTY``, all -1) and waits for its quorum and the ZooKeeper
        brokers. ``copying``: it claimed ``/controller`` and copies the metadata out of ZooKeeper.
        ``migrated``: the copy is committed in KRaft (``initialZkMigrationComplete``: offset above
        0); the KRaft controller now writes its metadata back into ZooKeeper (dual-write), or the
        migration was finalized and ZooKeeper is not read at all.
        """
        if self.kraft_metadata_offset > 0:
            return MIGRATED
        if self.kraft_controller_id < 0:
            return PREPARING
        return COPYING

    def describe(self) -> str:
        """One phrase for a person: the phase and who drives it."""
        controller = f"KRaft controller {self.kraft_controller_id} (epoch {self.kraft_controller_epoch})"
        if self.phase == PREPARING:
            return "preparing: a KRaft quorum is about to take over, no KRaft controller has claimed it yet"
        if self.phase == COPYING:
            return f"copying: {controller} is copying the metadata out of ZooKeeper"
        return (
            f"migrated: the metadata is in KRaft (offset {self.kraft_metadata_offset}, epoch "
            f"{self.kraft_metadata_epoch}) and {controller} writes it back to ZooKeeper, or the migration is finalized"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "kraft_controller_id": self.kraft_controller_id,
            "kraft_controller_epoch": self.kraft_controller_epoch,
            "kraft_metadata_offset": self.kraft_metadata_offset,
            "kraft_metadata_epoch": self.kraft_metadata_epoch,
        }


class MigrationZNode:
    """``/migration``, as ``kafka.zk.MigrationZNode`` writes and reads it."""

    PATH = "/migration"
    VERSION = 0

    @staticmethod
    def encode(state: MigrationState) -> bytes:
        """Kafka's exact bytes. Its five-entry Scala ``Map`` is a hash map, so the keys come in hash
        order, not in the order the source lists them (checked against ``MigrationZNode.encode`` of
        the Kafka 3.9.2 jars)."""
        return (
            f'{{"version":0,"kraft_metadata_offset":{int(state.kraft_metadata_offset)},'
            f'"kraft_controller_id":{int(state.kraft_controller_id)},'
            f'"kraft_metadata_epoch":{int(state.kraft_metadata_epoch)},'
            f'"kraft_controller_epoch":{int(state.kraft_controller_epoch)}}}'
        ).encode()

    @staticmethod
    def decode(data: bytes) -> MigrationState:
        """Read it as ``MigrationZNode.decode`` does: version 0 and four numbers, the offset a long."""
        what = "/migration"
        if not data:
            raise InvalidInput(f"{what} is empty")
        obj = _parse_json_object(data, what)
        version = _number(obj, "version", what)
        if version != MigrationZNode.VERSION:
            raise InvalidInput(f"{what} has version {version}; Kafka 3.9 reads only version 0")
        return MigrationState(
            kraft_controller_id=_number(obj, "kraft_controller_id", what),
            kraft_controller_epoch=_number(obj, "kraft_controller_epoch", what),
            kraft_metadata_offset=_number(obj, "kraft_metadata_offset", what, _LONG),
            kraft_metadata_epoch=_number(obj, "kraft_metadata_epoch", what),
        )


# -- the decision ---------------------------------------------------------------------------------

OWNER_PATHS = (ControllerZNode.PATH, MigrationZNode.PATH)


@dataclass(frozen=True)
class MetadataOwner:
    """Who owns the cluster's metadata, from ``/controller`` and ``/migration``, and whether
    configctl may write under ``/config``."""

    owner: str
    detail: str
    controller_id: int | None = None
    kraft_controller_epoch: int | None = None
    migration: MigrationState | None = None

    @property
    def writable(self) -> bool:
        """ZooKeeper owns the configs (a ZooKeeper-mode controller, or no controller at all)."""
        return self.owner in (ZOOKEEPER, NONE)

    def check_writable(self) -> None:
        """Raise :class:`MigrationInProgress` (exit 14), naming what was found, unless writable."""
        if not self.writable:
            raise MigrationInProgress(f"refusing to write under /config: {self.detail}; nothing was written")

    @property
    def read_in_zookeeper(self) -> bool:
        """Whether this was decided from ZooKeeper's nodes (a KRaft store names its own owner,
        KRaft with no ``/controller`` epoch): its configs are then ZooKeeper's, where Kafka keeps a
        broker password encrypted."""
        return self.owner != KRAFT or self.kraft_controller_epoch is not None

    @property
    def stale_read(self) -> str | None:
        """What a read of ZooKeeper's ``/config`` must say when ZooKeeper no longer owns the configs
        (decided from ZooKeeper's own nodes: a migration, or a KRaft epoch in ``/controller``), else
        None. ZooKeeper then holds the KRaft controllers' copy, written back during dual-write and
        never again once the migration is finalized; nothing in ZooKeeper says which."""
        if not self.read_in_zookeeper or self.writable or self.owner == UNKNOWN:
            return None
        return (
            "ZooKeeper no longer owns this cluster's configs (a migration to KRaft is under way or finalized): "
            "it holds the KRaft controllers' copy, which stops being written once the migration is finalized, "
            "so this answer may be stale; ask the brokers (--bootstrap-server, without --zookeeper)"
        )

    def to_json(self) -> dict[str, Any]:
        """``configctl status``'s ``"metadata"`` document."""
        return {
            "owner": self.owner,
            "writable": self.writable,
            "controller_id": self.controller_id,
            "kraft_controller_epoch": self.kraft_controller_epoch,
            "migration": self.migration.to_json() if self.migration is not None else None,
            "detail": self.detail,
        }


def metadata_owner(controller: bytes | None, migration: bytes | None) -> MetadataOwner:
    """Decide who owns the metadata from the two nodes' bytes (None: the node does not exist).

    ``/migration`` wins: once it exists ZooKeeper is being (or has been) left behind, whatever
    ``/controller`` says. Then a KRaft epoch in ``/controller`` (Kafka's own refusal). An
    unreadable ``/controller`` refuses too (``unknown``): it is the one node that says whether
    ZooKeeper still owns the configs, Kafka's brokers fail on it as well, and a write guessed
    wrong is lost silently while a refusal costs a retry once the node is fixed.
    """
    registration: ControllerRegistration | None = None
    controller_problem: str | None = None
    if controller is not None:
        try:
            registration = ControllerZNode.decode(controller)
        except InvalidInput as exc:
            controller_problem = exc.message
    controller_id = registration.broker_id if registration is not None else None
    kraft_epoch = registration.kraft_controller_epoch if registration is not None else None

    if migration is not None:
        try:
            state: MigrationState | None = MigrationZNode.decode(migration)
        except InvalidInput as exc:
            state = None
            found = f"/migration exists but is unreadable ({exc.message})"
        else:
            found = f"/migration: {state.describe()}"
        return MetadataOwner(
            MIGRATING,
            f"a ZooKeeper-to-KRaft migration is under way ({found}); ZooKeeper no longer owns the configs",
            controller_id if registration is not None else _migration_controller(state),
            kraft_epoch,
            state,
        )
    if registration is not None and registration.is_kraft:
        return MetadataOwner(
            KRAFT,
            f"a KRaft controller (id {registration.broker_id}, epoch {kraft_epoch}) owns this cluster's "
            "metadata (/controller); Kafka 3.9's brokers refuse ZooKeeper config writes then (KAFKA-16539): "
            "change configs through it (kafka-configs.sh --bootstrap-server)",
            controller_id,
            kraft_epoch,
        )
    if controller_problem is not None:
        return MetadataOwner(
            UNKNOWN,
            f"/controller is unreadable ({controller_problem}), so ZooKeeper's ownership of the configs "
            "cannot be confirmed (a KRaft controller may have taken over)",
        )
    if registration is not None:
        return MetadataOwner(
            ZOOKEEPER,
            f"a ZooKeeper-mode controller (broker {registration.broker_id}) owns the metadata",
            controller_id,
            kraft_epoch,
        )
    return MetadataOwner(NONE, "no controller is registered (no /controller): ZooKeeper holds the configs")


def _migration_controller(state: MigrationState | None) -> int | None:
    if state is None or state.kraft_controller_id < 0:
        return None
    return state.kraft_controller_id
