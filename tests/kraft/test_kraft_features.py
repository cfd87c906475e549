"""configctl tells a KRaft cluster from what it reports (``adminapi.features``), and agrees with
Kafka 4's own kafka-features.sh (``org.apache.kafka.tools.FeatureCommand``) on what it runs.

The ZooKeeper-mode side (a 3.9.2 broker reports no ``metadata.version``) is
tests/kafka/test_cluster_mode_zk.py, where the 3.9 brokers are.
"""

from __future__ import annotations

import re

from conftest import KAFKA4_HOME

from configctl.adminapi.client import KafkaAdmin
from configctl.adminapi.features import cluster_mode
from configctl.localkraft import KRaftCluster

FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"


def kafka_features(cluster: KRaftCluster) -> dict[str, str]:
    """``kafka-features.sh describe``'s ``metadata.version`` line, as ``{field: value}``."""
    described = cluster.tool(FEATURE_COMMAND, "--bootstrap-server", cluster.bootstrap, "describe")
    assert described.returncode == 0, described.stderr
    line = next(line for line in described.stdout.splitlines() if "Feature: metadata.version" in line)
    return dict(re.findall(r"(\w+):\s*(\S+)", line))


def test_a_kraft_cluster_reports_its_metadata_version_as_kafka_s_own_tool_does(kraft):
    with kraft.admin() as admin:
        mode = cluster_mode(admin)
    assert mode.kraft
    assert (mode.metadata_version, mode.release, mode.line) == ("4.4-IV2", "4.4", "4.x")
    kafka_says = kafka_features(kraft.cluster)
    assert kafka_says["FinalizedVersionLevel"] == mode.metadata_version
    assert kafka_says["SupportedMaxVersion"].startswith(f"{mode.release}-")


def test_a_kafka_4_cluster_still_at_3_9_s_metadata_version_reads_as_4x(tmp_path):
    """The finalized level is what the cluster committed to, not what its software is: a Kafka 4
    cluster that has not finalized an upgrade from 3.9 still runs 3.9-IV0."""
    with KRaftCluster(KAFKA4_HOME, tmp_path, combined=True, release_version="3.9-IV0") as cluster:
        with KafkaAdmin(cluster.bootstrap) as admin:
            mode = cluster_mode(admin)
        kafka_says = kafka_features(cluster)
    assert mode.kraft
    assert (mode.metadata_version, mode.release, mode.line) == ("3.9-IV0", "4.4", "4.x")
    assert kafka_says["FinalizedVersionLevel"] == "3.9-IV0"
