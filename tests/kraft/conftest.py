"""Real Apache Kafka 4.4 clusters (KRaft mode, no ZooKeeper) for the tests that claim KRaft behaviour.

The jars come from ``make kafka`` (``build/kafka4/libs``; ``make test`` depends on it). Each
cluster is shared by the whole session and started only when a test asks for it, because each
node is a JVM and CI has two cores:

- ``kraft_combined`` (session): node 1, broker and controller in one process.
- ``kraft_cluster`` (session): brokers 1 and 2 with a controller of their own (node 100).

Every broker has a PLAINTEXT listener (``bootstrap``) and a SCRAM listener (``scram_bootstrap``)
on which ``SCRAM_USER`` logs in with ``command_config`` (a Kafka client properties file, as
kafka-configs.sh and configctl take it); the user was bootstrapped at format time. Kafka 4's own
kafka-configs.sh (``org.apache.kafka.tools.ConfigCommand``) is the reference client:
``config_command``.

Tests share the clusters, so each names its own topics (``unique``) and puts back any broker
config it changes.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import REPO_ROOT, create_topics, wait_for
from helpers import unique as unique  # the fixture, one home for every suite

from configctl.adminapi.client import KafkaAdmin
from configctl.localkraft import CONFIG_COMMAND, KRaftCluster

KAFKA4_HOME = REPO_ROOT / "build" / "kafka4"
SCRAM_USER = "configctl-admin"
SCRAM_PASSWORD = "kraft-admin-secret"


@dataclass
class KRaftFleet:
    """A running KRaft cluster and how a test reaches it."""

    cluster: KRaftCluster
    command_config: Path
    """Client properties that log ``scram_user`` in with SCRAM-SHA-512 on ``scram_bootstrap``."""
    scram_user: str = SCRAM_USER

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def scram_bootstrap(self) -> str:
        return self.cluster.scram_bootstrap

    @property
    def broker_ids(self) -> list[int]:
        return list(self.cluster.brokers)

    @property
    def controller_ids(self) -> list[int]:
        return list(self.cluster.controllers)

    @property
    def node_ids(self) -> list[int]:
        return list(self.cluster.nodes)

    def config_command(
        self, *args: str, controller: bool = False, scram: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Kafka 4's ``kafka-configs.sh ARGS`` through the brokers, ``controller=True`` through the
        controller quorum, ``scram=True`` logged in as ``SCRAM_USER`` on the SCRAM listener."""
        if scram:
            target = (
                "--bootstrap-server",
                self.scram_bootstrap,
                "--command-config",
                str(self.command_config),
            )
            return self.cluster.tool(CONFIG_COMMAND, *target, *args)
        return self.cluster.config_command(*args, controller=controller)

    def admin(self, *, scram: bool = False) -> KafkaAdmin:
        """configctl's Admin API client, on the PLAINTEXT listener or logged in on the SCRAM one."""
        if scram:
            return KafkaAdmin(self.scram_bootstrap, self.command_config)
        return KafkaAdmin(self.bootstrap)

    def create_topics(self, *names: str, configs: dict[str, str] | None = None) -> None:
        """Create topics (1 partition, RF 1) and wait until the brokers describe them."""
        create_topics(self.bootstrap, *names, configs=configs)


def _start(work: Path, *, brokers: int, combined: bool) -> KRaftFleet:
    users = {SCRAM_USER: SCRAM_PASSWORD}
    cluster = KRaftCluster(KAFKA4_HOME, work, brokers=brokers, combined=combined, scram_users=users)
    command_config = work / "scram-client.properties"
    command_config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{SCRAM_USER}" password="{SCRAM_PASSWORD}";\n',
        encoding="utf-8",
    )
    fleet = KRaftFleet(cluster, command_config)
    cluster.start()
    try:
        with fleet.admin() as admin:  # every broker in the metadata the others serve
            wait_for(
                lambda: admin.broker_ids() == fleet.broker_ids, timeout=60, message="every broker registered"
            )
    except BaseException:
        cluster.stop()
        raise
    return fleet


@pytest.fixture(scope="session")
def kraft_combined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftFleet]:
    """Node 1: a broker and the cluster's one controller in one process."""
    fleet = _start(tmp_path_factory.mktemp("kraft-combined"), brokers=1, combined=True)
    try:
        yield fleet
    finally:
        fleet.cluster.stop()


@pytest.fixture(scope="session")
def kraft_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftFleet]:
    """Brokers 1 and 2 and their own controller quorum of one (node 100)."""
    fleet = _start(tmp_path_factory.mktemp("kraft-cluster"), brokers=2, combined=False)
    try:
        yield fleet
    finally:
        fleet.cluster.stop()


@pytest.fixture(params=["kraft_combined", "kraft_cluster"])
def kraft(request: pytest.FixtureRequest) -> KRaftFleet:
    """Each shape in turn (a test using it runs once on the combined node, once on the cluster)."""
    return request.getfixturevalue(request.param)
