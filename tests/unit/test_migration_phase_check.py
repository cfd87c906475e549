"""The migration's phase and its equivalence proof, pure (the real nodes: tests/migration)."""

from __future__ import annotations

import pytest

from configctl import secrets
from configctl.entities import Entity, EntityType
from configctl.migration import ControllerZNode, MigrationState, MigrationZNode, metadata_owner
from configctl.migrationcheck import prove
from configctl.migrationphase import NodeAnswer, decide
from configctl.store import Stored

ZK_BROKER = NodeAnswer()
ZK_MIGRATING = NodeAnswer(migration_ready=True)
KRAFT_BROKER = NodeAnswer(kraft=True)
MIGRATING_CONTROLLER = NodeAnswer(kraft=True, migration_ready=True)
FINALIZED_CONTROLLER = NodeAnswer(kraft=True)


def _owner(migration: MigrationState | None, kraft_epoch: int = -1):
    controller = ControllerZNode.encode(3000 if kraft_epoch > 0 else 1, 0, kraft_epoch)
    return metadata_owner(controller, None if migration is None else MigrationZNode.encode(migration))


MIGRATED = MigrationState(3000, 1, 41, 1)
PREPARING = MigrationState(-1, -1, -1, -1)


@pytest.mark.parametrize(
    ("owner", "brokers", "controllers", "phase", "certain"),
    [
        (_owner(None), {1: ZK_BROKER}, {}, "zookeeper", True),
        (_owner(PREPARING), {1: ZK_BROKER}, {"c:1": MIGRATING_CONTROLLER}, "migrating", True),
        (_owner(MIGRATED, 1), {1: ZK_MIGRATING}, {"c:1": MIGRATING_CONTROLLER}, "dual-write", True),
        (_owner(MIGRATED, 1), {1: KRAFT_BROKER}, {"c:1": MIGRATING_CONTROLLER}, "dual-write", True),
        (_owner(MIGRATED, 1), {1: KRAFT_BROKER}, {"c:1": FINALIZED_CONTROLLER}, "kraft", True),
        # ZooKeeper alone cannot tell dual-write from finalized: named as uncertain, never guessed.
        (_owner(MIGRATED, 1), {}, {}, "dual-write", False),
        (None, {1: KRAFT_BROKER}, {}, "kraft", False),
        (None, {1: KRAFT_BROKER}, {"c:1": FINALIZED_CONTROLLER}, "kraft", True),
        # Without ZooKeeper: the brokers and controllers alone, each phase they can tell.
        (None, {1: ZK_BROKER}, {}, "zookeeper", False),
        (None, {1: ZK_BROKER}, {"c:1": MIGRATING_CONTROLLER}, "migrating", True),
        (None, {1: ZK_MIGRATING}, {"c:1": MIGRATING_CONTROLLER}, "dual-write", False),
        (None, {1: ZK_MIGRATING}, {}, "dual-write", False),
        (None, {1: KRAFT_BROKER, 2: ZK_MIGRATING}, {"c:1": MIGRATING_CONTROLLER}, "dual-write", True),
        # An unreachable controller is no witness.
        (_owner(MIGRATED, 1), {1: KRAFT_BROKER}, {"c:1": NodeAnswer(problem="down")}, "dual-write", False),
    ],
)
def test_phase(owner, brokers, controllers, phase, certain) -> None:
    decided = decide(owner, brokers, controllers)
    assert (decided.name, decided.certain) == (phase, certain)
    assert decided.to_json()["phase"] == phase


def test_node_modes() -> None:
    assert [a.mode for a in (ZK_BROKER, ZK_MIGRATING, KRAFT_BROKER, MIGRATING_CONTROLLER)] == [
        "zookeeper",
        "zookeeper, migration mode",
        "kraft",
        "kraft, migration mode",
    ]
    assert NodeAnswer(problem="x").mode == "unreachable"


def _stored(entity: Entity, config: dict[str, str]) -> Stored:
    return Stored(entity, config, 0)


TOPIC = Entity.of(EntityType.TOPICS, "orders")
DEFAULT = Entity.named(EntityType.BROKERS, "")
BROKER_5 = Entity.named(EntityType.BROKERS, "5")
ALICE = Entity.named(EntityType.USERS, "alice")
CREDENTIAL = secrets.scram_credential("SCRAM-SHA-256", "pw", 8192)


def test_equal_sides_prove_equal() -> None:
    zk = [
        _stored(TOPIC, {"retention.ms": "1000"}),
        _stored(DEFAULT, {"log.retention.ms": "5"}),
        _stored(ALICE, {"producer_byte_rate": "1024", "SCRAM-SHA-256": CREDENTIAL}),
    ]
    kraft = [
        _stored(TOPIC, {"retention.ms": "1000"}),
        _stored(DEFAULT, {"log.retention.ms": "5"}),
        _stored(ALICE, {"producer_byte_rate": "1024.0", "SCRAM-SHA-256": secrets.shown_iterations(8192)}),
    ]
    proof = prove(zk, kraft, {1})
    assert proof.equal, [d.line for d in proof.differences]
    assert proof.compared == {"topics": 1, "brokers": 0, "default": 1, "quotas": 1, "scram": 1}


def test_each_difference_is_one_line_naming_the_entity() -> None:
    zk = [_stored(TOPIC, {"retention.ms": "1000"}), _stored(ALICE, {"SCRAM-SHA-256": CREDENTIAL})]
    kraft = [_stored(TOPIC, {"retention.ms": "2000"}), _stored(ALICE, {"SCRAM-SHA-256": "iterations=4096"})]
    lines = [d.line for d in prove(zk, kraft, {1}).differences]
    assert lines == [
        "topic 'orders': retention.ms: ZooKeeper holds '1000', the KRaft side '2000'",
        "user 'alice': SCRAM-SHA-256: ZooKeeper holds 'iterations=8192', the KRaft side 'iterations=4096'",
    ]


def test_a_secret_is_compared_by_presence_and_never_shown() -> None:
    broker = Entity.named(EntityType.BROKERS, "1")
    key = "listener.name.internal.ssl.key.password"
    proof = prove([_stored(broker, {key: "encrypted-bytes"})], [_stored(broker, {})], {1})
    (difference,) = proof.differences
    assert "encrypted-bytes" not in difference.line and "set (secret, not shown)" in difference.line
    assert prove([_stored(broker, {key: "encrypted"})], [_stored(broker, {key: "******"})], {1}).equal


def test_a_broker_that_does_not_run_is_not_checked_and_own_topics_are_left_out() -> None:
    history = Entity.of(EntityType.TOPICS, "_configctl_history")
    proof = prove(
        [_stored(BROKER_5, {"log.cleaner.threads": "2"}), _stored(history, {"cleanup.policy": "compact"})],
        [],
        {1, 2},
        own_topics={"_configctl_history"},
    )
    assert proof.equal
    assert proof.unchecked and "broker 5 does not run" in proof.unchecked[0]


def test_an_unreadable_zookeeper_node_is_a_difference() -> None:
    proof = prove([Stored(TOPIC, {}, 3, problem="not JSON")], [], {1})
    assert [d.key for d in proof.differences] == ["(node)"]


def test_a_family_the_kraft_side_cannot_report_yet_is_not_checked_never_equal() -> None:
    # Read from the controllers (a broker still runs ZooKeeper mode): topics and the default only.
    zk = [
        _stored(TOPIC, {"retention.ms": "1000"}),
        _stored(DEFAULT, {"log.retention.ms": "5"}),
        _stored(BROKER_5, {"log.cleaner.threads": "2"}),
        _stored(ALICE, {"producer_byte_rate": "1024", "SCRAM-SHA-256": CREDENTIAL}),
        _stored(Entity.named(EntityType.IPS, "10.0.0.1"), {"connection_creation_rate": "10"}),
    ]
    kraft = [_stored(TOPIC, {"retention.ms": "2000"}), _stored(DEFAULT, {"log.retention.ms": "5"})]
    unread = {family: f"{family} unread" for family in ("brokers", "quotas", "scram")}
    proof = prove(zk, kraft, None, unread=unread)
    assert [d.line for d in proof.differences] == [
        "topic 'orders': retention.ms: ZooKeeper holds '1000', the KRaft side '2000'"
    ]
    assert proof.compared == {"topics": 1, "brokers": 0, "default": 1, "quotas": 0, "scram": 0}
    assert proof.unchecked == [
        "brokers: 1 entity ZooKeeper holds: brokers unread",
        "quotas: 2 entities ZooKeeper holds: quotas unread",
        "scram: 1 entity ZooKeeper holds: scram unread",
    ]
    # What is unread is never a difference, even where the KRaft side says otherwise.
    assert prove([_stored(ALICE, {"SCRAM-SHA-256": CREDENTIAL})], [], None, unread=unread).equal
