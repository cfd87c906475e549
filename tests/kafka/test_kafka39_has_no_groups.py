"""A ZooKeeper-mode cluster (Kafka 3.9) has neither of Kafka 4's groups nor client-metrics configs.

Whatever the command, naming one is refused in one line and nothing is written: without
``--bootstrap-server`` before any store is opened, with it (a 3.9 cluster's brokers) before
anything is sent. The ZooKeeper store's listing and reading of every type is unaffected: it has
no ``/config/groups`` nor ``/config/client-metrics``, and answers them empty.
"""

from __future__ import annotations

import pytest

from configctl.entities import EntityType

NEEDS_KAFKA4 = "configs need Kafka 4 (a KRaft cluster, --bootstrap-server)"


@pytest.mark.parametrize(
    "selector",
    [
        ("--group", "payments"),
        ("--client-metrics", "producers"),
        ("--entity-type", "groups", "--entity-name", "payments"),
    ],
)
def test_a_write_through_the_brokers_of_a_zookeeper_mode_cluster_is_refused(kafka_one, selector):
    key = "interval.ms=1000" if "producers" in selector else "consumer.session.timeout.ms=50000"
    for bootstrap in ((), ("--bootstrap-server", kafka_one.bootstrap)):
        done = kafka_one.cli(*bootstrap, "alter", *selector, "--add-config", key)
        assert done.returncode != 0, done.stdout
        (line,) = done.stderr.strip().splitlines()
        assert NEEDS_KAFKA4 in line and "nothing was written" in line
    with kafka_one.store() as store:
        for etype in (EntityType.GROUPS, EntityType.CLIENT_METRICS):
            assert store.entities(etype) == []
        assert not {"groups", "client-metrics"} & set(store.session.children("/config"))
        read = store.read_all()  # every type, the two new ones empty
        assert {s.entity.type for s in read} <= {t for t in EntityType if not t.kraft_only}
