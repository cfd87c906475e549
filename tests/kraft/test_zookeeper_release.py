"""The one line without KRaft: on ZooKeeper (Kafka 3.9, the only line with ZooKeeper mode) the Kafka 4
the store answers 3.9, and a key Kafka 4 removed is written as it always was."""

from __future__ import annotations

from helpers import run_cli

from configctl.zk.configstore import ZooKeeperStore


def test_a_zookeeper_store_runs_kafka_3_9_and_keeps_3_9s_rules(zk_connect, zk):
    with ZooKeeperStore.connect(zk_connect) as store:
        assert store.kafka_release() == "3.9"
    done = run_cli(
        "--zookeeper",
        zk_connect,
        "alter",
        "--topic",
        "legacy",
        "--add-config",
        "message.format.version=3.0-IV1,message.downconversion.enable=false",
    )
    assert done.returncode == 0, done.stderr
    data, _ = zk.get("/config/topics/legacy")
    assert b'"message.format.version":"3.0-IV1"' in data.replace(b" ", b"")
