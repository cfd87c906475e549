"""No write under ``/config`` while ZooKeeper does not own the metadata (real ZooKeeper, real CLI).

Kafka 3.9's brokers refuse their ZooKeeper config writes while ``/controller`` names a KRaft
controller (tag 3.9.0-rc3 of apache/kafka, ``core/src/main/scala/kafka/zk/KafkaZkClient.scala``,
``setOrCreateEntityConfigs``, KAFKA-16539); configctl refuses them then, and also while
``/migration`` (``ZkData.scala``'s ``MigrationZNode``) shows a migration: one line, exit 14,
the whole tree unchanged. The nodes are written here with the exact bytes Kafka 3.9 writes
(``ControllerZNode.encode`` / ``MigrationZNode.encode`` of the Kafka 3.9.2 jars).

A garbled ``/controller`` refuses too (exit 14, ``owner`` ``unknown``): it is the node that says
whether ZooKeeper still owns the configs, Kafka's own brokers fail on it, and a user would rather
fix it than have a write silently lost to a KRaft controller.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import REPO_ROOT, run_cli, wait_for
from kazoo.client import KazooClient

from configctl.entities import Entity, EntityType
from configctl.errors import MigrationInProgress
from configctl.localkafka import KafkaCluster
from configctl.localzk.client import ClientSettings
from configctl.migration import ControllerZNode
from configctl.store import Change
from configctl.zk import configstore
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.zk.errors import VersionConflict

pytestmark = pytest.mark.zk

KAFKA_HOME = REPO_ROOT / "build" / "kafka"

# ControllerZNode.encode(1, 1700000000000L, -1): a ZooKeeper-mode controller of Kafka 3.9
ZK_CONTROLLER = b'{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
# the same before Kafka 3.4: no kraftControllerEpoch
ZK_CONTROLLER_V1 = b'{"version":1,"brokerid":1,"timestamp":"1700000000000"}'
# ControllerZNode.encode(3000, 1700000000000L, 2): KRaft controller 3000 claimed the cluster at epoch 2
KRAFT_CONTROLLER = b'{"version":2,"brokerid":3000,"timestamp":"1700000000000","kraftControllerEpoch":2}'
# MigrationZNode.encode(...): keys in the Scala hash map's order, exactly as Kafka writes them
MIGRATION_PREPARING = (
    b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":-1,'
    b'"kraft_metadata_epoch":-1,"kraft_controller_epoch":-1}'
)
MIGRATION_COPYING = (
    b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":3000,'
    b'"kraft_metadata_epoch":-1,"kraft_controller_epoch":2}'
)
MIGRATION_MIGRATED = (
    b'{"version":0,"kraft_metadata_offset":42,"kraft_controller_id":3000,'
    b'"kraft_metadata_epoch":2,"kraft_controller_epoch":2}'
)
# (phase, /controller, /migration) as a migration goes: the ZooKeeper controller stays until the
# KRaft controller claims /controller (and bumps /controller_epoch) in the same step
MIGRATION_STATES = [
    ("preparing", ZK_CONTROLLER, MIGRATION_PREPARING),
    ("copying", KRAFT_CONTROLLER, MIGRATION_COPYING),
    ("migrated", KRAFT_CONTROLLER, MIGRATION_MIGRATED),
]


def cli(connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", connect, *args, **kwargs)


def tree(zk: KazooClient, path: str = "/") -> dict[str, tuple[bytes, int]]:
    """Every node with its data and last-modifying transaction: any write at all shows."""
    found = {}
    for child in zk.get_children(path):
        full = f"{path.rstrip('/')}/{child}"
        data, stat = zk.get(full)
        found[full] = (data, stat.mzxid)
        found.update(tree(zk, full))
    return found


def zookeeper_controller(zk: KazooClient, data: bytes = ZK_CONTROLLER) -> None:
    """What a ZooKeeper-mode Kafka controller leaves: /controller (ephemeral) and /controller_epoch."""
    zk.create("/controller_epoch", b"1")
    zk.create("/controller", data, ephemeral=True)


def kraft_takes_over(zk: KazooClient, migration: bytes | None = None) -> None:
    """``tryRegisterKRaftControllerAsActiveController``: one multi bumps /controller_epoch and
    replaces /controller with a persistent KRaft registration; then the driver writes /migration."""
    if not zk.exists("/controller_epoch"):
        zookeeper_controller(zk)
    transaction = zk.transaction()
    transaction.set_data("/controller_epoch", b"2", version=0)
    transaction.delete("/controller")
    transaction.create("/controller", KRAFT_CONTROLLER)
    assert not [result for result in transaction.commit() if isinstance(result, Exception)]
    if migration is not None:
        zk.create("/migration", migration)


def refused(result, found: str) -> None:
    """Exit 14 and one line on stderr naming what was found (apply prints its plan first)."""
    assert result.returncode == 14, (result.returncode, result.stderr)
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: refusing to write under /config: "), result.stderr
    assert found in result.stderr and "nothing was written" in result.stderr


def status(connect: str) -> dict:
    result = cli(connect, "status", "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# -- ZooKeeper owns the metadata: writes go through ----------------------------------------------


@pytest.mark.parametrize("controller", [ZK_CONTROLLER, ZK_CONTROLLER_V1], ids=["3.9", "before-3.4"])
def test_writes_work_under_a_zookeeper_mode_controller(zk_connect, zk, controller):
    zookeeper_controller(zk, controller)
    result = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=86400000")
    assert result.returncode == 0, result.stderr
    assert json.loads(zk.get("/config/topics/orders")[0])["config"] == {"retention.ms": "86400000"}
    metadata = status(zk_connect)["metadata"]
    assert (metadata["owner"], metadata["controller_id"], metadata["writable"]) == ("zookeeper", 1, True)
    assert metadata["kraft_controller_epoch"] == (-1 if controller == ZK_CONTROLLER else None)


@pytest.mark.slow
@pytest.mark.skipif(
    not (KAFKA_HOME / "libs").is_dir(), reason="no Kafka 3.9 jars in build/kafka (make kafka)"
)
def test_a_real_kafka_39_controller_writes_epoch_minus_one_and_writes_go_through(zk_connect, zk, tmp_path):
    """The claim the guard rests on, checked against Kafka itself: a ZooKeeper-mode controller
    registers with ``kraftControllerEpoch`` -1, byte for byte what our encoder writes."""
    with KafkaCluster(KAFKA_HOME, tmp_path / "kafka", ClientSettings(zk_connect)):
        data = wait_for(lambda: zk.exists("/controller") and zk.get("/controller")[0], timeout=60)
        registration = json.loads(data)
        assert (registration["version"], registration["brokerid"]) == (2, 1)
        assert registration["kraftControllerEpoch"] == -1
        assert data == ControllerZNode.encode(1, int(registration["timestamp"]))
        result = cli(zk_connect, "alter", "--client", "app", "--add-config", "producer_byte_rate=1024")
        assert result.returncode == 0, result.stderr
        metadata = status(zk_connect)["metadata"]
        assert (metadata["owner"], metadata["controller_id"], metadata["kraft_controller_epoch"]) == (
            "zookeeper",
            1,
            -1,
        )


def test_writes_work_without_any_controller_as_kafka_configs_does(zk_connect, zk):
    """``kafka-configs.sh --zookeeper`` skips the controller check (``ConfigCommand.scala``:
    ``enableEntityConfigControllerCheck = false``) so a cluster can be set up before it starts."""
    assert cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000").returncode == 0
    assert status(zk_connect)["metadata"]["owner"] == "none"


# -- a KRaft controller owns it: every write path refuses, nothing written ------------------------


def test_every_write_path_is_refused_under_a_kraft_controller(zk_connect, zk, tmp_path: Path):
    zookeeper_controller(zk)
    assert cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000").returncode == 0
    assert cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=2000").returncode == 0
    kraft_takes_over(zk)
    before = tree(zk)
    desired = tmp_path / "desired.yaml"
    desired.write_text("topics:\n  orders: {retention.ms: 3000}\n  audit: {retention.ms: 4000}\n")
    attempts = {
        "alter": ["alter", "--topic", "orders", "--add-config", "retention.ms=5000"],
        "delete": ["alter", "--topic", "orders", "--delete-config", "retention.ms"],
        "new entity": ["alter", "--user", "alice", "--add-config", "producer_byte_rate=1024"],
        "apply": ["apply", "-f", str(desired), "--yes"],
        "rollback": ["rollback", "--topic", "orders", "--to", "0", "--yes"],
    }
    for name, args in attempts.items():
        result = cli(zk_connect, *args)
        refused(result, "a KRaft controller (id 3000, epoch 2) owns this cluster's metadata")
        assert tree(zk) == before, name
    metadata = status(zk_connect)["metadata"]
    assert metadata == {
        "owner": "kraft",
        "writable": False,
        "controller_id": 3000,
        "kraft_controller_epoch": 2,
        "migration": None,
        "detail": metadata["detail"],
    }
    assert "KAFKA-16539" in metadata["detail"]


def test_reads_and_dry_runs_still_work_under_a_kraft_controller(zk_connect, zk, tmp_path: Path):
    zookeeper_controller(zk)
    assert cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000").returncode == 0
    kraft_takes_over(zk)
    described = cli(zk_connect, "describe", "--topic", "orders", "-o", "json")
    assert described.returncode == 0 and json.loads(described.stdout)[0]["config"] == {"retention.ms": "1000"}
    # ZooKeeper's answer says what it is: a copy that may be stale, on stderr, in one line.
    assert "this answer may be stale" in described.stderr and len(described.stderr.splitlines()) == 1
    dry = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=9", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    desired = tmp_path / "desired.yaml"
    desired.write_text("topics:\n  orders: {retention.ms: 3000}\n")
    assert cli(zk_connect, "plan", "-f", str(desired)).returncode == 2  # changes to show, none written
    for args in (["export"], ["history", "--topic", "orders"]):
        result = cli(zk_connect, *args)
        assert result.returncode == 0, (args, result.stderr)


def test_a_rollout_is_refused_before_its_record_is_written(zk_connect, zk, fleet_of_three):
    """Nothing under /config, no rollout record, no claim. (The rollout creates its two empty
    parent directories under /configctl before its first multi, where the check is: left as is.)"""
    kraft_takes_over(zk)

    def settled() -> dict[str, tuple[bytes, int]]:
        # the listeners keep their own state and fleet records up to date meanwhile
        return {
            path: node
            for path, node in tree(zk).items()
            if not path.startswith(("/configctl/brokers", "/configctl/fleet"))
        }

    before = settled()
    result = cli(
        zk_connect,
        "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000",
        "--canary", "1", "--soak", "1s", "--wait", "10",
    )  # fmt: skip
    refused(result, "a KRaft controller (id 3000, epoch 2)")
    added = {path: node[0] for path, node in settled().items() if before.get(path) != node}
    assert set(added) <= {"/configctl/rollouts", "/configctl/rollout-claims"}
    assert set(added.values()) <= {b""}
    assert zk.get_children("/configctl/rollouts") == [] and zk.get_children("/configctl/rollout-claims") == []


# -- a migration, in each phase ZooKeeper can show -----------------------------------------------


@pytest.mark.parametrize(
    ("phase", "controller", "migration"), MIGRATION_STATES, ids=[s[0] for s in MIGRATION_STATES]
)
def test_a_migration_in_any_phase_refuses_writes_and_status_shows_it(
    zk_connect, zk, tmp_path: Path, phase, controller, migration
):
    zookeeper_controller(zk)
    for retention in ("1000", "2000"):
        assert (
            cli(
                zk_connect, "alter", "--topic", "orders", "--add-config", f"retention.ms={retention}"
            ).returncode
            == 0
        )
    if controller == KRAFT_CONTROLLER:
        kraft_takes_over(zk, migration)
    else:
        zk.create("/migration", migration)
    before = tree(zk)
    desired = tmp_path / "desired.yaml"
    desired.write_text("topics:\n  orders: {retention.ms: 3000}\n")
    for args in (
        ["alter", "--topic", "orders", "--add-config", "retention.ms=5000"],
        ["apply", "-f", str(desired), "--yes"],
        ["rollback", "--topic", "orders", "--to", "0", "--yes"],
    ):
        refused(cli(zk_connect, *args), f"a ZooKeeper-to-KRaft migration is under way (/migration: {phase}")
        assert tree(zk) == before, args

    document = status(zk_connect)
    metadata = document["metadata"]
    assert (metadata["owner"], metadata["writable"]) == ("migrating", False)
    assert metadata["migration"]["phase"] == phase
    # The migration's phase as migration status names it, from ZooKeeper alone (no broker asked):
    # dual-write and finalized cannot be told apart there, and it says so.
    expected = ("dual-write", False) if phase == "migrated" else ("migrating", True)
    assert (document["migration"]["phase"], document["migration"]["certain"]) == expected
    assert metadata["controller_id"] == (1 if phase == "preparing" else 3000)
    table = cli(zk_connect, "status")
    assert table.returncode == 0 and "Metadata: migrating: a ZooKeeper-to-KRaft migration" in table.stdout
    assert "refuses writes (exit 14)" in table.stdout


def test_status_keeps_contract_7_keys_and_adds_one_line(zk_connect, zk):
    zookeeper_controller(zk)
    document = status(zk_connect)
    assert set(document) == {"latest_change_number", "brokers", "metadata"}
    table = cli(zk_connect, "status")
    assert table.returncode == 0
    assert "Metadata: zookeeper: a ZooKeeper-mode controller (broker 1) owns the metadata" in table.stdout


# -- garbled nodes: one line, never a crash -------------------------------------------------------


@pytest.mark.parametrize("garbled", [b"{not json", b"", b'{"brokerid":"1"}', b"\x1b[31m\xff"])
def test_a_garbled_controller_node_refuses_in_one_line_and_status_says_so(zk_connect, zk, garbled):
    zk.create("/controller", garbled)
    before = tree(zk)
    result = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000")
    refused(result, "/controller is unreadable (")
    assert "\x1b" not in result.stderr
    assert tree(zk) == before
    metadata = status(zk_connect)["metadata"]
    assert (metadata["owner"], metadata["writable"], metadata["controller_id"]) == ("unknown", False, None)
    table = cli(zk_connect, "status")
    assert table.returncode == 0 and "Metadata: unknown" in table.stdout and "\x1b[31m" not in table.stdout


def test_a_garbled_migration_node_still_refuses(zk_connect, zk):
    zookeeper_controller(zk)
    zk.create("/migration", b'{"version":7}')
    before = tree(zk)
    result = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000")
    refused(result, "/migration exists but is unreadable (/migration has version 7")
    assert tree(zk) == before
    assert status(zk_connect)["metadata"]["migration"] is None


# -- the race: a KRaft controller claiming the cluster between the check and the multi -----------


def test_a_kraft_claim_between_the_check_and_the_multi_fails_the_multi(zk_connect, zk, monkeypatch):
    """The multi checks /controller_epoch's version as read with the owner: a claim in between
    (which bumps it) makes the multi fail, and the next attempt is refused."""
    zookeeper_controller(zk)
    checked = configstore.read_metadata_owner

    def claim_right_after_the_check(session):
        found = checked(session)
        if not zk.exists("/migration"):
            kraft_takes_over(zk, MIGRATION_COPYING)
        return found

    monkeypatch.setattr(configstore, "read_metadata_owner", claim_right_after_the_check)
    entity = Entity.of(EntityType.TOPICS, "orders")
    with ConfigStore.connect(zk_connect) as store:
        with pytest.raises(VersionConflict, match="/controller_epoch moved"):
            store.commit([Change(entity, {"retention.ms": "1000"}, -1)])
        assert not zk.exists("/config/topics/orders")
        with pytest.raises(MigrationInProgress):
            store.commit([Change(entity, {"retention.ms": "1000"}, -1)])
    assert not zk.exists("/config/topics/orders")
