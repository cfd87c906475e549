"""A broker's authorizer judges every write configctl sends through it (``--bootstrap-server``).

One Kafka 3.9 broker of this module's own, with Kafka's ``AclAuthorizer``, a SASL/SCRAM listener,
``admin`` a super user and ``bob`` a principal with no ACL at all (so no ALTER_CONFIGS, no ALTER).
Each family bob writes through the broker is refused by the broker: configctl exits with the
permission error in one line and nothing is written (the config node, configctl's history and
Kafka's change notifications as they were). The same write as ``admin`` goes through, so the
refusal is the authorizer's, not the listener's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KAFKA_HOME, STATIC, KafkaFleet

from configctl.entities import Entity
from configctl.localkafka import KafkaCluster
from configctl.localzk import LocalZooKeeper
from configctl.localzk.client import ClientSettings

pytestmark = pytest.mark.kafka

ACLS = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    # the PLAINTEXT listener (between brokers, and the test's own setup) is ANONYMOUS
    "super.users": "User:ANONYMOUS;User:admin",
}
PASSWORDS = {"admin": "admin-pw", "bob": "bob-pw"}


@pytest.fixture(scope="module")
def guarded(zk_server: LocalZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaFleet]:
    """One broker with the authorizer on, and SCRAM logins for ``admin`` and ``bob``."""
    work = tmp_path_factory.mktemp("kafka-acl")
    chroot = f"{zk_server.connect_string}/kafka-acl-{uuid.uuid4().hex[:8]}"
    cluster = KafkaCluster(
        KAFKA_HOME, work, ClientSettings(chroot), 1, properties={**STATIC, **ACLS}, scram=True
    )
    fleet = KafkaFleet(cluster, chroot)
    cluster.start()
    try:
        for user, password in PASSWORDS.items():  # SCRAM users for bootstrap: ZooKeeper, as Kafka allows
            added = fleet.cli("alter", "--user", user, "--add-config", f"SCRAM-SHA-256=[password={password}]")
            assert added.returncode == 0, added.stderr
        yield fleet
    finally:
        cluster.stop()


def login(fleet: KafkaFleet, user: str, tmp_path: Path) -> list[str]:
    """``--bootstrap-server`` on the SCRAM listener and ``--command-config`` logging in as ``user``."""
    config = tmp_path / f"{user}.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{PASSWORDS[user]}";\n',
        encoding="utf-8",
    )
    port = fleet.cluster.brokers[1].scram_port
    return ["--bootstrap-server", f"127.0.0.1:{port}", "--command-config", str(config)]


def written(fleet: KafkaFleet, entity: Entity) -> tuple[int, dict[str, str], int, int | None]:
    """The entity's node (version, config), its history records and Kafka's newest change number."""
    with fleet.store() as store:
        node = store.read(entity, strict=False)
        return node.version, dict(node.config), len(store.history(entity)), store.latest_change_number()


@pytest.mark.parametrize(
    ("selector", "pair"),
    [
        (("--topic", "T"), "retention.ms=86400000"),
        (("--user", "U"), "consumer_byte_rate=2048"),
        (("--client-defaults",), "producer_byte_rate=4096"),
        (("--ip", "10.1.2.3"), "connection_creation_rate=9"),
        (("--broker", "1"), "log.cleaner.threads=2"),
    ],
    ids=["topic", "user-quota", "client-default-quota", "ip", "broker"],
)
def test_a_principal_without_alter_configs_is_refused_and_nothing_is_written(
    guarded, tmp_path, selector, pair
):
    names = {"T": f"acl-{uuid.uuid4().hex[:8]}", "U": f"acl-user-{uuid.uuid4().hex[:8]}"}
    selector = tuple(names.get(a, a) for a in selector)
    if selector[0] == "--topic":
        guarded.create_topics(selector[1])
    entity = _entity(selector)
    before = written(guarded, entity)
    refused = guarded.cli(*login(guarded, "bob", tmp_path), "alter", *selector, "--add-config", pair)
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert len(refused.stderr.splitlines()) == 1 and "authorization" in refused.stderr.lower(), refused.stderr
    assert written(guarded, entity) == before

    allowed = guarded.cli(
        *login(guarded, "admin", tmp_path), "alter", *selector, "--add-config", pair, "-o", "json"
    )
    assert allowed.returncode == 0, allowed.stderr
    assert written(guarded, entity)[2] == before[2] + 1  # admin's write is recorded
    assert json.loads(allowed.stdout)["change_number"] == written(guarded, entity)[3]
    if selector[0] == "--broker":
        admin = login(guarded, "admin", tmp_path)
        restored = guarded.cli(*admin, "alter", *selector, "--delete-config", "log.cleaner.threads")
        assert restored.returncode == 0, restored.stderr


def test_a_scram_deletion_without_alter_on_the_cluster_is_refused(guarded, tmp_path):
    user = f"acl-scram-{uuid.uuid4().hex[:8]}"
    pair = "SCRAM-SHA-256=[password=one],SCRAM-SHA-512=[password=two]"
    assert guarded.cli("alter", "--user", user, "--add-config", pair).returncode == 0
    entity = Entity.of("users", user)
    before = written(guarded, entity)
    refused = guarded.cli(
        *login(guarded, "bob", tmp_path), "alter", "--user", user, "--delete-config", "SCRAM-SHA-256"
    )
    assert refused.returncode == 4 and len(refused.stderr.splitlines()) == 1, refused.stdout + refused.stderr
    assert written(guarded, entity) == before


def _entity(selector: tuple[str, ...]) -> Entity:
    kinds = {"--topic": "topics", "--user": "users", "--ip": "ips", "--broker": "brokers"}
    if selector[0] == "--client-defaults":
        return Entity.of("clients", "<default>")
    return Entity.of(kinds[selector[0]], selector[1])
