"""The migration commands' edges without a migrating cluster: what is missing, what cannot be
reached, and what ZooKeeper alone can tell (the real migration: tests/migration)."""

from __future__ import annotations

import json

from helpers import run_cli
from kazoo.client import KazooClient

from configctl.migration import ControllerZNode, MigrationState, MigrationZNode

NOBODY = "127.0.0.1:1"  # nothing listens there: refused at once


def one_line_error(result, status: int, found: str) -> None:
    assert result.returncode == status, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and found in result.stderr, result.stderr


def test_check_carry_need_the_brokers(zk_connect: str) -> None:
    for command in ("check", "carry"):
        result = run_cli("--zookeeper", zk_connect, "migration", command)
        one_line_error(result, 1, "give --bootstrap-server")


def test_unreachable_brokers_are_one_line_exit_3(zk_connect: str) -> None:
    for command in ("check", "carry", "status"):
        result = run_cli("--zookeeper", zk_connect, "--bootstrap-server", NOBODY, "migration", command)
        one_line_error(result, 3, NOBODY)


def test_unreachable_zookeeper_is_one_line_exit_3() -> None:
    result = run_cli("--zookeeper", NOBODY, "--zk-timeout", "2", "migration", "status")
    one_line_error(result, 3, NOBODY)


def test_status_from_zookeeper_alone(zk_connect: str, zk: KazooClient) -> None:
    zk.create("/controller", ControllerZNode.encode(1, 0))
    result = run_cli("--zookeeper", zk_connect, "-o", "json", "migration", "status")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["phase"], document["brokers"], document["controllers"]) == ("zookeeper", [], [])
    zk.create("/migration", MigrationZNode.encode(MigrationState(3000, 1, 41, 1)))
    zk.set("/controller", ControllerZNode.encode(3000, 0, 1))
    table = run_cli("--zookeeper", zk_connect, "migration", "status")
    assert table.returncode == 0, table.stderr
    assert "Migration phase: dual-write (not certain)" in table.stdout
    assert "give --bootstrap-controller to tell" in table.stdout


def test_an_open_rollout_refuses_the_carry_before_anything_is_asked(zk_connect: str) -> None:
    from configctl.entities import Entity, EntityType
    from configctl.rollout import record as rec
    from configctl.rollout.record import Planned
    from configctl.zk.configstore import ZooKeeperStore

    planned = [Planned(Entity(EntityType.TOPICS, "orders"), 1, {"retention.ms": "1"}, -1)]
    with ZooKeeperStore.connect(zk_connect) as store:  # its process is gone once this closes: left open
        opened = store.rollouts.open(
            planned, kind=rec.WAVES, reason="", options=rec.Options(), waves=1, step={}, summary="x"
        )
        rollout_id = opened.id
    result = run_cli("--zookeeper", zk_connect, "--bootstrap-server", NOBODY, "migration", "carry")
    one_line_error(result, 1, f"rollout {rollout_id} is running")
    assert "nothing was carried" in result.stderr and NOBODY not in result.stderr
