"""``--zookeeper`` of one Kafka cluster and ``--bootstrap-server`` of another are refused (issue 32 #4).

An operator's trial: the broker config went to the first cluster, its history record and a
change notification into the second's ZooKeeper, and the command printed a change number of the
other cluster. Now the brokers' cluster id (their metadata) is compared with ZooKeeper's
``/cluster/id`` before the first write, and a mismatch is one line, exit 1, with nothing written
in either cluster. The second cluster is a real Kafka 3.9 broker on its own chroot of the shared
ZooKeeper (module-scoped: one JVM for this file).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conftest import KAFKA_HOME, STATIC
from helpers import run_cli
from kazoo.client import KazooClient

from configctl.adminapi.client import KafkaAdmin
from configctl.localkafka import KafkaCluster
from configctl.localzk import LocalZooKeeper
from configctl.localzk.client import ClientSettings

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def other_cluster(
    zk_server: LocalZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaCluster]:
    """A second Kafka cluster: broker 1 on its own chroot of the shared ZooKeeper."""
    chroot = f"/kafka-other-{uuid.uuid4().hex[:8]}"
    cluster = KafkaCluster(
        KAFKA_HOME,
        tmp_path_factory.mktemp("kafka-other"),
        ClientSettings(f"{zk_server.connect_string}{chroot}"),
        1,
        properties=STATIC,
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def everything_under(connect: str, *roots: str) -> dict[str, tuple[bytes, int]]:
    """Every node under ``roots`` in ZooKeeper ``connect``: its data and version."""
    client = KazooClient(hosts=connect, timeout=10.0)
    client.start(timeout=30)
    try:
        found: dict[str, tuple[bytes, int]] = {}
        pending = [root for root in roots if client.exists(root)]
        while pending:
            path = pending.pop()
            data, stat = client.get(path)
            found[path] = (data, stat.version)
            pending += [f"{path.rstrip('/')}/{child}" for child in client.get_children(path)]
        return found
    finally:
        client.stop()
        client.close()


def test_both_options_of_one_cluster_are_compared_by_its_id(kafka_one, other_cluster):
    with KafkaAdmin(kafka_one.bootstrap) as ours, KafkaAdmin(other_cluster.bootstrap) as theirs:
        assert ours.cluster_id() and theirs.cluster_id()
        assert ours.cluster_id() != theirs.cluster_id()  # two clusters, told apart by their ids


@pytest.mark.parametrize(
    "selector",
    [("--broker", "1"), ("--broker-defaults",), ("--topic", f"orders-mixed-{uuid.uuid4().hex[:6]}")],
    ids=["running broker", "broker default", "topic (a ZooKeeper write)"],
)
def test_mixed_clusters_are_refused_with_nothing_written_anywhere(kafka_one, other_cluster, selector):
    if selector[0] == "--topic":
        kafka_one.create_topics(selector[1])  # a topic of the ZooKeeper's cluster: alter would take it
    roots = ("/config", "/configctl")
    before_ours = everything_under(kafka_one.connect, *roots)
    before_theirs = everything_under(other_cluster.zk.connect, *roots)
    result = kafka_one.cli(
        "--bootstrap-server", other_cluster.bootstrap,
        "alter", *selector, "--add-config", "log.cleaner.threads=2" if selector[0].startswith("--broker") else "retention.ms=1",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"error: --bootstrap-server {other_cluster.bootstrap} is cluster ")
    assert "both must name the same Kafka cluster; nothing was written" in result.stderr
    assert everything_under(kafka_one.connect, *roots) == before_ours
    assert everything_under(other_cluster.zk.connect, *roots) == before_theirs
    with KafkaAdmin(other_cluster.bootstrap) as admin:
        assert admin.describe_broker(1, ["log.cleaner.threads"])["log.cleaner.threads"].source != (
            "DYNAMIC_BROKER_CONFIG"
        )


def test_a_dry_run_of_mixed_clusters_is_refused_too(kafka_one, other_cluster):
    result = kafka_one.cli(
        "--bootstrap-server", other_cluster.bootstrap,
        "alter", "--broker", "1", "--add-config", "log.cleaner.threads=2", "--dry-run",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "both must name the same Kafka cluster" in result.stderr


def test_a_read_is_not_refused_the_check_is_before_the_first_write(kafka_one, other_cluster):
    """``describe`` writes nothing, so it is not held to the check (it reads ZooKeeper only)."""
    result = kafka_one.cli("--bootstrap-server", other_cluster.bootstrap, "describe", "--broker", "1")
    assert result.returncode == 0, result.stderr


def test_a_zookeeper_without_a_cluster_id_is_not_the_brokers_cluster(zk_connect, kafka_one):
    result = run_cli(
        "--zookeeper", zk_connect, "--bootstrap-server", kafka_one.bootstrap,
        "alter", "--topic", "orders", "--add-config", "retention.ms=1",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "holds no Kafka cluster id (/cluster/id absent)" in result.stderr
    assert everything_under(zk_connect, "/config", "/configctl") == {}
