"""The pure decoders of ``/controller`` and ``/migration``, and who owns the metadata.

The bytes are Kafka 3.9's own (tag 3.9.0-rc3 of apache/kafka, ``core/src/main/scala/kafka/zk/
ZkData.scala``), produced by ``kafka.zk.ControllerZNode.encode`` and ``kafka.zk.MigrationZNode.encode``
of the Kafka 3.9.2 jars: ``/migration``'s keys come in a Scala hash map's order, not the source's.
"""

from __future__ import annotations

import pytest

from configctl.errors import EXIT_CODES, InvalidInput, MigrationInProgress
from configctl.migration import (
    COPYING,
    KRAFT,
    MIGRATED,
    MIGRATING,
    NONE,
    PREPARING,
    UNKNOWN,
    ZOOKEEPER,
    ControllerRegistration,
    ControllerZNode,
    MigrationState,
    MigrationZNode,
    metadata_owner,
)

pytestmark = pytest.mark.unit

# ControllerZNode.encode(1, 1700000000000L, -1): what a ZooKeeper-mode controller of Kafka 3.9 writes
ZK_CONTROLLER = b'{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
# Kafka before 3.4 (version 1): no kraftControllerEpoch at all
ZK_CONTROLLER_V1 = b'{"version":1,"brokerid":1,"timestamp":"1700000000000"}'
# ControllerZNode.encode(3000, 1700000000000L, 2): a KRaft controller that claimed the cluster
KRAFT_CONTROLLER = b'{"version":2,"brokerid":3000,"timestamp":"1700000000000","kraftControllerEpoch":2}'
# MigrationZNode.encode(ZkMigrationLeadershipState.EMPTY): the node a KRaft controller creates first
MIGRATION_PREPARING = (
    b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":-1,'
    b'"kraft_metadata_epoch":-1,"kraft_controller_epoch":-1}'
)
# ... once KRaft controller 3000 (epoch 2) claimed /controller, before the metadata is copied
MIGRATION_COPYING = (
    b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":3000,'
    b'"kraft_metadata_epoch":-1,"kraft_controller_epoch":2}'
)
# ... once the copy is committed in KRaft at offset 42, epoch 2 (dual-write)
MIGRATION_MIGRATED = (
    b'{"version":0,"kraft_metadata_offset":42,"kraft_controller_id":3000,'
    b'"kraft_metadata_epoch":2,"kraft_controller_epoch":2}'
)


# -- /controller ----------------------------------------------------------------------------------


def test_controller_encoder_writes_kafkas_exact_bytes():
    assert ControllerZNode.encode(1, 1700000000000) == ZK_CONTROLLER
    assert ControllerZNode.encode(3000, 1700000000000, 2) == KRAFT_CONTROLLER


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (ZK_CONTROLLER, ControllerRegistration(1, -1)),
        (ZK_CONTROLLER_V1, ControllerRegistration(1, None)),
        (KRAFT_CONTROLLER, ControllerRegistration(3000, 2)),
        # Kafka checks neither version nor timestamp, and reads extra keys without complaint
        (b'{"brokerid":7,"kraftControllerEpoch":5,"extra":true}', ControllerRegistration(7, 5)),
    ],
)
def test_controller_decoder_reads_what_kafka_reads(data, expected):
    assert ControllerZNode.decode(data) == expected


def test_only_an_epoch_above_zero_is_a_kraft_controller_as_in_kafka():
    assert ControllerRegistration(3000, 2).is_kraft
    assert not ControllerRegistration(1, -1).is_kraft
    assert not ControllerRegistration(1, None).is_kraft
    assert not ControllerRegistration(1, 0).is_kraft  # kraftEpoch.exists(epoch => epoch > 0)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"{not json", "not valid JSON"),
        (b"[1]", "must be a JSON object"),
        (b'{"version":2}', 'no "brokerid"'),
        (b'{"brokerid":"1"}', "must be an int"),
        (b'{"brokerid":true}', "must be an int"),
        (b'{"brokerid":2147483648}', "must be an int"),
        (b'{"brokerid":1,"kraftControllerEpoch":null}', "must be an int"),
        (b'{"brokerid":1,"kraftControllerEpoch":1.5}', "must be an int"),
        (b'{"brokerid":1,"brokerid":2}', "duplicate"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_garbled_controller_node_is_one_line_of_reason(data, reason):
    with pytest.raises(InvalidInput, match=reason) as caught:
        ControllerZNode.decode(data)
    assert "\n" not in str(caught.value)


# -- /migration -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "state", "phase"),
    [
        (MIGRATION_PREPARING, MigrationState(-1, -1, -1, -1), PREPARING),
        (MIGRATION_COPYING, MigrationState(3000, 2, -1, -1), COPYING),
        (MIGRATION_MIGRATED, MigrationState(3000, 2, 42, 2), MIGRATED),
    ],
)
def test_migration_node_round_trips_kafkas_bytes_and_phase(data, state, phase):
    assert MigrationZNode.decode(data) == state
    assert MigrationZNode.encode(state) == data
    assert state.phase == phase
    assert state.to_json()["phase"] == phase


def test_migration_offset_is_a_long_and_offset_zero_is_not_yet_migrated():
    big = MigrationState(3000, 2, 2**40, 2)
    assert MigrationZNode.decode(MigrationZNode.encode(big)) == big
    # initialZkMigrationComplete: kraftMetadataOffset > 0
    assert MigrationState(3000, 2, 0, 2).phase == COPYING


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"garbage", "not valid JSON"),
        (MIGRATION_PREPARING.replace(b'"version":0', b'"version":1'), "version 1"),
        (MIGRATION_PREPARING.replace(b'"kraft_controller_id":-1,', b""), 'no "kraft_controller_id"'),
        (MIGRATION_PREPARING.replace(b'"kraft_metadata_epoch":-1', b'"kraft_metadata_epoch":"x"'), "int"),
        (MIGRATION_PREPARING.replace(b'"kraft_metadata_offset":-1', b'"kraft_metadata_offset":1e3'), "long"),
    ],
)
def test_a_garbled_migration_node_is_one_line_of_reason(data, reason):
    with pytest.raises(InvalidInput, match=reason) as caught:
        MigrationZNode.decode(data)
    assert "\n" not in str(caught.value)


# -- who owns the metadata ------------------------------------------------------------------------


@pytest.mark.parametrize("controller", [None, ZK_CONTROLLER, ZK_CONTROLLER_V1])
def test_zookeeper_owns_the_metadata_without_a_kraft_controller_or_migration(controller):
    owner = metadata_owner(controller, None)
    assert owner.owner == (NONE if controller is None else ZOOKEEPER)
    assert owner.writable
    owner.check_writable()  # does not raise
    assert owner.to_json()["migration"] is None


def test_a_kraft_controller_owns_the_metadata_and_writes_are_refused_naming_it():
    owner = metadata_owner(KRAFT_CONTROLLER, None)
    assert (owner.owner, owner.controller_id, owner.kraft_controller_epoch) == (KRAFT, 3000, 2)
    assert not owner.writable
    with pytest.raises(MigrationInProgress) as caught:
        owner.check_writable()
    message = str(caught.value)
    assert message.startswith("refusing to write under /config: a KRaft controller (id 3000, epoch 2)")
    assert "KAFKA-16539" in message and "nothing was written" in message and "\n" not in message
    assert caught.value.exit_code == 14 and 14 in EXIT_CODES


@pytest.mark.parametrize(
    ("controller", "migration", "phase", "controller_id"),
    [
        (ZK_CONTROLLER, MIGRATION_PREPARING, PREPARING, 1),  # the ZooKeeper controller still runs
        (KRAFT_CONTROLLER, MIGRATION_COPYING, COPYING, 3000),
        (KRAFT_CONTROLLER, MIGRATION_MIGRATED, MIGRATED, 3000),
        (None, MIGRATION_MIGRATED, MIGRATED, 3000),  # /controller gone: the migration still says who
        (None, MIGRATION_PREPARING, PREPARING, None),
    ],
)
def test_a_migration_in_any_phase_refuses_writes(controller, migration, phase, controller_id):
    owner = metadata_owner(controller, migration)
    assert owner.owner == MIGRATING and not owner.writable
    assert owner.migration is not None and owner.migration.phase == phase
    assert owner.controller_id == controller_id
    document = owner.to_json()
    assert document["owner"] == MIGRATING and document["migration"]["phase"] == phase
    with pytest.raises(MigrationInProgress, match=f"ZooKeeper-to-KRaft migration is under way .*{phase}"):
        owner.check_writable()


def test_an_unreadable_migration_node_still_means_a_migration():
    owner = metadata_owner(ZK_CONTROLLER, b"{oops")
    assert owner.owner == MIGRATING and owner.migration is None and not owner.writable
    assert "/migration exists but is unreadable" in owner.detail


@pytest.mark.parametrize("garbled", [b"", b"{not json", b'{"brokerid":"1"}', b"\x1b[2J"])
def test_an_unreadable_controller_node_refuses_rather_than_guess(garbled):
    owner = metadata_owner(garbled, None)
    assert owner.owner == UNKNOWN and not owner.writable and owner.controller_id is None
    with pytest.raises(MigrationInProgress, match="/controller is unreadable") as caught:
        owner.check_writable()
    assert "\n" not in str(caught.value)
