"""Kafka 4's groups and client-metrics families meet a ZooKeeper cluster (Kafka 3.9): refused, nothing written.

A ZooKeeper-mode cluster has no ``/config/groups`` or ``/config/client-metrics`` a broker reads: a
node written there would be a config no broker ever applies. Every write path refuses the family
in the one line :func:`configctl.entities.refuse_kraft_only` words, before any node moves, and an
export of such a cluster reads as it did before Kafka 4's families existed.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers import run_cli
from kazoo.client import KazooClient

from configctl import writer
from configctl.entities import ZOOKEEPER_TYPES, Entity, EntityType
from configctl.errors import InvalidInput
from configctl.zk.configstore import ZooKeeperStore

WITH_GROUPS = """\
users:
  User:alice: {producer_byte_rate: 1048576}
groups:
  payments: {consumer.session.timeout.ms: 50000}
"""


def everything(zk: KazooClient, path: str = "/") -> dict[str, bytes]:
    """Every node under the chroot with its bytes: what "nothing written" is checked against."""
    result = {}
    for child in zk.get_children(path):
        full = f"{path.rstrip('/')}/{child}"
        result[full] = zk.get(full)[0]
        result.update(everything(zk, full))
    return result


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_a_groups_section_is_refused_on_zookeeper_with_nothing_written(zk_connect, zk, tmp_path, command):
    file = tmp_path / "desired.yaml"
    file.write_text(WITH_GROUPS, encoding="utf-8")
    before = everything(zk)
    done = run_cli(
        "--zookeeper", zk_connect, command, "-f", str(file), *(["--yes"] if command == "apply" else [])
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: groups configs need Kafka 4 (a KRaft cluster, --bootstrap-server); "
        "this cluster runs Kafka 3.9; nothing was written"
    ]
    # the users entry beside it is not written either: the whole file is refused
    assert everything(zk) == before
    assert not zk.exists("/config/groups") and not zk.exists("/config/users/User%3Aalice")


def test_the_write_path_refuses_a_client_metrics_subscription_on_zookeeper(zk_connect, zk):
    """Below the CLI (which refuses the family without --bootstrap-server already): ``writer.alter``."""
    subscription = Entity.of(EntityType.CLIENT_METRICS, "everything")
    change = writer.prepare_change(subscription, {"interval.ms": "60000"})
    before = everything(zk)
    with (
        ZooKeeperStore.connect(zk_connect) as store,
        pytest.raises(InvalidInput, match=r"^client-metrics configs need Kafka 4 .* nothing was written$"),
    ):
        writer.alter(store, subscription, change)
    assert everything(zk) == before and not zk.exists("/config/client-metrics")


def test_a_zookeeper_export_has_no_kafka4_sections(zk_connect, tmp_path):
    file = tmp_path / "users.yaml"
    file.write_text(textwrap.dedent(WITH_GROUPS.split("groups:")[0]), encoding="utf-8")
    assert run_cli("--zookeeper", zk_connect, "apply", "-f", str(file), "--yes").returncode == 0
    exported = run_cli("--zookeeper", zk_connect, "export")
    assert exported.returncode == 0, exported.stderr
    sections = [line.split(":")[0] for line in exported.stdout.splitlines() if line[:1].isalpha()]
    assert sections == [t.value for t in ZOOKEEPER_TYPES]
    # and the export applies back to the cluster it came from
    again = Path(tmp_path / "exported.yaml")
    again.write_text(exported.stdout, encoding="utf-8")
    planned = run_cli("--zookeeper", zk_connect, "plan", "-f", str(again), "--prune")
    assert planned.returncode == 0 and "No changes" in planned.stdout, planned.stdout + planned.stderr
