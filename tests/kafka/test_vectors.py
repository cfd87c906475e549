"""The cases a real broker decides: configctl accepts exactly what Kafka 3.9 accepts.

Each change goes to Kafka's own ``kafka-configs.sh --bootstrap-server`` (the broker, and the
tool's own checks, decide) and to configctl; both must accept, or both refuse, and a refusal by
configctl leaves ZooKeeper's ``/config`` tree exactly as it was.
"""

from __future__ import annotations

import pytest
from conftest import broker_configs_restored

from configctl.zk.configstore import ZooKeeperStore as ConfigStore

pytestmark = pytest.mark.kafka

CASES = [
    # (name, kafka-configs.sh entity args, configctl entity args, config, Kafka's verdict)
    ("per-ip zero without overrides", ["--entity-type", "brokers", "--entity-default"],
     ["--broker-defaults", "--allow-running-brokers"], "max.connections.per.ip=0", False),
    ("per-ip zero with overrides", ["--entity-type", "brokers", "--entity-default"],
     ["--broker-defaults", "--allow-running-brokers"],
     "max.connections.per.ip=0,max.connections.per.ip.overrides=[127.0.0.1:5]", True),
    ("override with an invalid host", ["--entity-type", "brokers", "--entity-default"],
     ["--broker-defaults", "--allow-running-brokers"], "max.connections.per.ip.overrides=[bad host!:5]", False),
    ("override with a host that does not resolve", ["--entity-type", "brokers", "--entity-default"],
     ["--broker-defaults", "--allow-running-brokers"],
     "max.connections.per.ip.overrides=[no-such-host.invalid:5]", True),
    ("an IP entity that does not resolve", ["--entity-type", "ips", "--entity-name", "no-such-host.invalid"],
     ["--ip", "no-such-host.invalid"], "connection_creation_rate=5", False),
    ("an IP entity that is a resolvable host", ["--entity-type", "ips", "--entity-name", "localhost"],
     ["--ip", "localhost"], "connection_creation_rate=5", True),
]  # fmt: skip


def tree(store: ConfigStore) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    pending = ["/config"]
    while pending:
        path = pending.pop()
        data, _ = store.session.client.get(path)
        found[path] = data
        pending.extend(f"{path}/{child}" for child in store.session.client.get_children(path))
    return found


@pytest.mark.parametrize(
    ("name", "kafka_entity", "our_entity", "config", "accepted"), CASES, ids=[c[0] for c in CASES]
)
def test_configctl_decides_as_the_broker_does(kafka_one, name, kafka_entity, our_entity, config, accepted):
    with broker_configs_restored(kafka_one):
        kafka = kafka_one.cluster.config_command("--alter", *kafka_entity, "--add-config", config)
        assert (kafka.returncode == 0) is accepted, kafka.stdout + kafka.stderr
        undo = [pair.split("=")[0] for pair in config.split(",")]
        if accepted:  # undo Kafka's write so configctl meets the same state
            kafka_one.cluster.config_command("--alter", *kafka_entity, "--delete-config", ",".join(undo))
        with kafka_one.store() as store:
            before = tree(store)
        ours = kafka_one.cli("alter", *our_entity, "--add-config", config)
        assert (ours.returncode == 0) is accepted, ours.stderr
        if not accepted:
            assert ours.returncode == 1 and ours.stderr.count("\n") == 1 and "Traceback" not in ours.stderr
            with kafka_one.store() as store:
                assert tree(store) == before
        else:
            assert kafka_one.cli("alter", *our_entity, "--delete-config", ",".join(undo)).returncode == 0
