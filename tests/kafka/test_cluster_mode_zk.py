"""A Kafka 3.9.2 broker in ZooKeeper mode is no KRaft cluster: it finalizes no ``metadata.version``
(configctl/adminapi/features.py; the KRaft side is tests/kraft/test_kraft_features.py)."""

from __future__ import annotations

from configctl.adminapi.features import cluster_mode


def test_a_zookeeper_mode_broker_reports_no_metadata_version(kafka_one):
    with kafka_one.admin() as admin:
        mode = cluster_mode(admin)
    assert not mode.kraft
    assert (mode.metadata_level, mode.metadata_version, mode.release, mode.line) == (None, None, None, "3.x")
