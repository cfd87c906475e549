"""Every family written through the brokers: KafkaAdmin's requests, against a real Kafka 3.9 broker.

Topic configs (IncrementalAlterConfigs, resource type 2), client quotas of each entity kind and
their defaults (AlterClientQuotas) and SCRAM credentials (AlterUserScramCredentials, salted on
this side as Kafka's own client salts). Each test reads back what the broker wrote to ZooKeeper,
what the broker reports, and (where it says more) what Kafka's own ConfigCommand reads.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import describe_stored
from helpers import free_port, wait_for

from configctl import secrets
from configctl.adminapi.scram import upsertion
from configctl.adminapi.store import BrokersThroughAdmin
from configctl.entities import Entity
from configctl.errors import BrokerRefused
from configctl.store import ABSENT, Change, Store
from configctl.znodes import CHANGES_PATH, decode_notification

pytestmark = pytest.mark.kafka


def stored(fleet, entity: Entity) -> tuple[dict[str, str], int]:
    with fleet.store() as store:
        found = store.read(entity, strict=False)
        return dict(found.config), found.version


def test_a_topic_config_is_set_deleted_validated_and_refused_through_the_broker(kafka_one, unique):
    topic = unique("families")
    kafka_one.create_topics(topic)
    entity = Entity.of("topics", topic)
    with kafka_one.admin() as admin:
        admin.alter_topic(topic, {"retention.ms": "86400000", "cleanup.policy": "compact,delete"})
        assert stored(kafka_one, entity)[0] == {
            "retention.ms": "86400000",
            "cleanup.policy": "compact,delete",
        }
        assert admin.describe_topic(topic, ["retention.ms"])["retention.ms"].value == "86400000"

        admin.alter_topic(topic, {"retention.ms": "1000"}, validate_only=True)  # judged, not written
        with pytest.raises(BrokerRefused, match=r"the broker refused to change topic .*cleanup.policy"):
            admin.alter_topic(topic, {"cleanup.policy": "sometimes"}, validate_only=True)
        with pytest.raises(BrokerRefused, match="the broker refused"):
            admin.alter_topic(topic, {"cleanup.policy": "sometimes"})
        assert stored(kafka_one, entity)[0]["retention.ms"] == "86400000"

        admin.alter_topic(topic, {}, ["cleanup.policy"])
        assert stored(kafka_one, entity)[0] == {"retention.ms": "86400000"}


@pytest.mark.parametrize(
    "kind",
    [
        "user",
        "user-default",
        "client",
        "client-default",
        "user-client",
        "user-default-client",
        "ip",
        "ip-default",
    ],
)
def test_quotas_of_every_entity_kind_go_through_the_broker(kafka_one, unique, kind):
    user, client = unique("q-user"), unique("q-client")
    entity = {
        "user": Entity.of("users", user),
        "user-default": Entity.of("users", "<default>"),
        "client": Entity.of("clients", client),
        "client-default": Entity.of("clients", "<default>"),
        "user-client": Entity.of("users", user, client),
        "user-default-client": Entity.of("users", "<default>", "<default>"),
        "ip": Entity.of("ips", "10.20.30.40"),
        "ip-default": Entity.of("ips", "<default>"),
    }[kind]
    key, text = (
        ("connection_creation_rate", "25") if kind.startswith("ip") else ("request_percentage", "12.5")
    )
    with kafka_one.admin() as admin:
        try:
            admin.alter_client_quotas(entity, {key: text}, validate_only=True)
            assert key not in stored(kafka_one, entity)[0]
            admin.alter_client_quotas(entity, {key: text})
            wait_for(lambda: admin.client_quotas(entity) == {key: text}, timeout=30, message="quota reported")
            # the broker stores a rate as Java prints the double, a count as a whole number
            assert stored(kafka_one, entity)[0][key] in (text, "25", "12.5")
        finally:
            admin.alter_client_quotas(entity, {}, [key])
        assert key not in stored(kafka_one, entity)[0]


def test_a_quota_the_broker_refuses_writes_nothing(kafka_one, unique):
    entity = Entity.of("users", unique("q-refused"))
    with kafka_one.admin() as admin, pytest.raises(BrokerRefused, match="Invalid configuration key"):
        admin.alter_client_quotas(entity, {"no_such_quota": "1"})
    assert stored(kafka_one, entity) == ({}, -1)


def test_a_scram_credential_salted_here_is_the_one_the_broker_stores_and_can_be_deleted(kafka_one, unique):
    user, password = unique("scram-admin"), unique("pw")
    entity = Entity.of("users", user)
    salted = upsertion("SCRAM-SHA-512", f"iterations=8192,password={password}")
    with kafka_one.admin() as admin:
        admin.alter_scram_credentials(user, [salted, upsertion("SCRAM-SHA-256", f"password={password}")])
        assert admin.scram_credentials(user) == {"SCRAM-SHA-512": 8192, "SCRAM-SHA-256": 4096}
        config, _ = stored(kafka_one, entity)
        # the broker's credential is configctl's own (secrets.py) for the same salt and password
        assert config["SCRAM-SHA-512"] == secrets.scram_credential(
            "SCRAM-SHA-512", password, 8192, salt=salted.salt
        )
        assert secrets.verify_scram_password("SCRAM-SHA-256", config["SCRAM-SHA-256"], password)
        assert password not in repr(salted)

        admin.alter_scram_credentials(user, deletions=["SCRAM-SHA-256"])
        assert admin.scram_credentials(user) == {"SCRAM-SHA-512": 8192}
        assert set(stored(kafka_one, entity)[0]) == {"SCRAM-SHA-512"}
        with pytest.raises(BrokerRefused, match="Too few iterations"):
            admin.alter_scram_credentials(user, [dataclasses.replace(salted, iterations=1)])
        assert admin.scram_credentials(user) == {"SCRAM-SHA-512": 8192}


# -- through configctl's command line (--bootstrap-server) -------------------------------------


def via_broker(fleet, *args: str, bootstrap: str | None = None):
    return fleet.cli("--bootstrap-server", bootstrap or fleet.bootstrap, *args)


def newest_record(fleet, *selector: str) -> dict:
    result = fleet.cli("history", *selector, "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]


def records(fleet, *selector: str) -> int:
    result = fleet.cli("history", *selector, "-o", "json")
    assert result.returncode == 0, result.stderr
    return len(json.loads(result.stdout))


def kafka_describe(fleet, *entity: str) -> str:
    """Kafka's own ConfigCommand, through the broker: what it reads for ``entity``."""
    result = fleet.cluster.config_command(*entity, "--describe")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def notified_by(fleet, number: int) -> str:
    with fleet.store() as store:
        data, _ = store.session.get(f"{CHANGES_PATH}/config_change_{number:010d}")
        return decode_notification(data).path


def test_a_topic_write_goes_through_the_broker_with_history_and_its_change_number(kafka_one, unique):
    topic = unique("cli-topic")
    kafka_one.create_topics(topic)
    result = via_broker(
        kafka_one, "alter", "--topic", topic, "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]",
        "--reason", "OPS-32", "--wait", "30", "-o", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    number = document["change_number"]
    assert document["rollout"]["change_number"] == number
    assert [b["status"] for b in document["rollout"]["brokers"]] == ["applied"]
    assert notified_by(kafka_one, number) == f"topics/{topic}"
    record = newest_record(kafka_one, "--topic", topic)
    assert (record["reason"], record["config"]["retention.ms"]) == ("OPS-32", "86400000")
    assert record["version"] == document["version"]
    described = kafka_describe(kafka_one, "--entity-type", "topics", "--entity-name", topic)
    assert "retention.ms=86400000" in described and "cleanup.policy=compact,delete" in described


@pytest.mark.parametrize(
    "selector",
    [
        ("--user", "U"),
        ("--user-defaults",),
        ("--client", "C"),
        ("--client-defaults",),
        ("--user", "U", "--client", "C"),
        ("--user", "U", "--client-defaults"),
        ("--user-defaults", "--client-defaults"),
        ("--ip", "10.32.0.7"),
        ("--ip-defaults",),
    ],
    ids=lambda s: "-".join(a.strip("-") for a in s),
)
def test_a_quota_write_goes_through_the_broker_and_kafka_reads_it_back(kafka_one, unique, selector):
    names = {"U": unique("cli-user"), "C": unique("cli-client")}
    selector = tuple(names.get(a, a) for a in selector)
    key, value = ("connection_creation_rate", "17") if "ip" in selector[0] else ("consumer_byte_rate", "4096")
    try:
        result = via_broker(
            kafka_one, "alter", *selector, "--add-config", f"{key}={value}", "--reason", "Q-32", "-o", "json"
        )
        assert result.returncode == 0, result.stderr
        document = json.loads(result.stdout)
        assert notified_by(kafka_one, document["change_number"]) == document["entity_path"]
        record = newest_record(kafka_one, *selector)
        assert record["reason"] == "Q-32" and float(record["config"][key]) == float(value)
        assert record["version"] == document["version"]
        described = kafka_describe(kafka_one, *_kafka_entity(selector))
        assert f"{key}={float(value)}" in described, described
    finally:
        assert via_broker(kafka_one, "alter", *selector, "--delete-config", key).returncode == 0


def _kafka_entity(selector: tuple[str, ...]) -> list[str]:
    """configctl's entity flags as kafka-configs.sh spells them."""
    spelled = {"--user": "--entity-type users --entity-name", "--client": "--entity-type clients --entity-name",
               "--ip": "--entity-type ips --entity-name", "--user-defaults": "--entity-type users --entity-default",
               "--client-defaults": "--entity-type clients --entity-default",
               "--ip-defaults": "--entity-type ips --entity-default"}  # fmt: skip
    return [part for arg in selector for part in spelled.get(arg, arg).split()]


def test_a_scram_credential_goes_to_zookeeper_as_kafka_allows_and_its_deletion_through_the_broker(
    kafka_one, unique
):
    """``alter`` hands the store a credential already salted into its stored form, which no broker
    can take (it needs the salted password): it goes to ZooKeeper, as Kafka 3.9's own tool allows
    for SCRAM users; deleting a mechanism needs no password and goes through the broker."""
    user, password = unique("cli-scram"), unique("pw")
    pair = f"SCRAM-SHA-256=[password={password}],SCRAM-SHA-512=[password={password}]"
    added = via_broker(kafka_one, "alter", "--user", user, "--add-config", pair)
    assert added.returncode == 0, added.stderr
    assert password not in added.stdout + added.stderr
    with kafka_one.admin() as admin:
        wait_for(
            lambda: admin.scram_credentials(user) == {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096},
            timeout=30,
            message="credentials",
        )
        deleted = via_broker(
            kafka_one,
            "alter",
            "--user",
            user,
            "--delete-config",
            "SCRAM-SHA-256",
            "--reason",
            "S-32",
            "-o",
            "json",
        )
        assert deleted.returncode == 0, deleted.stderr
        assert admin.scram_credentials(user) == {"SCRAM-SHA-512": 4096}
    assert notified_by(kafka_one, json.loads(deleted.stdout)["change_number"]) == f"users/{user}"
    record = newest_record(kafka_one, "--user", user)
    assert (record["reason"], record["version"], list(record["config"])) == ("S-32", 1, ["SCRAM-SHA-512"])


def test_a_broker_write_that_empties_a_quota_node_is_recorded(kafka_one, unique):
    user = unique("emptied")
    assert (
        via_broker(kafka_one, "alter", "--user", user, "--add-config", "consumer_byte_rate=1024").returncode
        == 0
    )
    emptied = via_broker(
        kafka_one, "alter", "--user", user, "--delete-config", "consumer_byte_rate", "--reason", "E"
    )
    assert emptied.returncode == 0, emptied.stderr
    assert newest_record(kafka_one, "--user", user)["reason"] == "E"


def test_a_password_in_clear_is_salted_here_and_sent_never_stored(kafka_one, unique):
    """The store's own path for a SCRAM password in clear (what ``alter`` hands it once the write
    path leaves it in clear with --bootstrap-server): salted here, one AlterUserScramCredentials
    with the quota beside it in its own AlterClientQuotas, history recorded with the broker's
    credential and the newest change number."""
    user, password = unique("store-scram"), unique("pw")
    entity = Entity.of("users", user)
    with kafka_one.store() as zookeeper:
        through = BrokersThroughAdmin(Store(zookeeper), kafka_one.bootstrap)
        try:
            spec = f"iterations=8192,password={password}"
            change = Change(entity, {"SCRAM-SHA-512": spec, "consumer_byte_rate": "2048"}, ABSENT)
            (committed,) = through.commit([change], reason="store-32")
        finally:
            through.close()
        config = zookeeper.read(entity).config
        history = zookeeper.history(entity)
    assert secrets.verify_scram_password("SCRAM-SHA-512", config["SCRAM-SHA-512"], password)
    assert float(config["consumer_byte_rate"]) == 2048
    assert committed.version == 1 and notified_by(kafka_one, committed.change_number) == entity.path
    assert password not in repr(history) and history[0].reason == "store-32"
    with kafka_one.admin() as admin:
        assert admin.scram_credentials(user) == {"SCRAM-SHA-512": 8192}


def test_dry_run_asks_the_broker_for_every_family_and_fails_when_none_answers(kafka_one, unique):
    topic = unique("dry-topic")
    kafka_one.create_topics(topic)
    before = describe_stored(kafka_one, "--topic", topic)
    dead = f"127.0.0.1:{free_port()}"
    for selector, pair in [
        (("--topic", topic), "retention.ms=1000"),
        (("--user", unique("dry")), "consumer_byte_rate=1"),
    ]:
        asked = via_broker(kafka_one, "alter", *selector, "--add-config", pair, "--dry-run")
        assert asked.returncode == 0, asked.stderr
        nobody = via_broker(kafka_one, "alter", *selector, "--add-config", pair, "--dry-run", bootstrap=dead)
        assert nobody.returncode == 3 and len(nobody.stderr.splitlines()) == 1, nobody.stderr
        assert "no Kafka broker" in nobody.stderr
    assert describe_stored(kafka_one, "--topic", topic) == before


def test_a_topic_config_only_the_broker_refuses_is_its_refusal_dry_run_or_not(kafka_one, unique):
    """``remote.log.copy.disable`` passes configctl's own checks; a ZooKeeper-mode broker refuses
    it. With --dry-run the broker is asked (validateOnly) and says so; nothing is written either way."""
    topic = unique("refused-topic")
    kafka_one.create_topics(topic)
    before = (describe_stored(kafka_one, "--topic", topic), records(kafka_one, "--topic", topic))
    for extra in (("--dry-run",), ()):
        refused = via_broker(
            kafka_one, "alter", "--topic", topic, "--add-config", "remote.log.copy.disable=true", *extra
        )
        assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert "the broker refused" in refused.stderr and "Zookeeper's mode" in refused.stderr
        assert (describe_stored(kafka_one, "--topic", topic), records(kafka_one, "--topic", topic)) == before


def test_an_ipv6_entity_through_the_broker_is_kafka_3_9_s_refusal_and_nothing_is_written(kafka_one):
    """Kafka 3.9's AlterClientQuotas URL-encodes an IPv6 name before checking it and refuses it
    (``tests/kafka/test_kafka_writes.py``): through the broker, configctl says so; without
    --bootstrap-server it is written to ZooKeeper as before."""
    ip = "fd00::32:1"
    refused = via_broker(kafka_one, "alter", "--ip", ip, "--add-config", "connection_creation_rate=5")
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "the broker refused" in refused.stderr and "not a valid IP" in refused.stderr
    assert describe_stored(kafka_one, "--ip", ip) == {}


def test_a_broker_write_whose_history_record_cannot_be_written_says_so_exit_8(kafka_one, unique):
    """The broker took the write (its own transaction), then configctl's history record was
    refused (here: the entity's history directory made read-only for everyone): exit 8, naming
    the write as done, never "nothing was written"; the config is what Kafka's tool reads."""
    from kazoo.client import KazooClient
    from kazoo.security import make_acl

    from configctl.znodes import HistoryZNodes

    topic = unique("unrecorded")
    kafka_one.create_topics(topic)
    directory = HistoryZNodes.directory(Entity.of("topics", topic))
    client = KazooClient(hosts=kafka_one.connect)
    client.start(timeout=15)
    try:
        if client.exists(directory):
            client.set_acls(directory, [make_acl("world", "anyone", read=True, admin=True)])
        else:
            client.ensure_path(directory.rsplit("/", 1)[0])
            client.create(directory, b"", acl=[make_acl("world", "anyone", read=True, admin=True)])
        done = via_broker(kafka_one, "alter", "--topic", topic, "--add-config", "retention.ms=7200000")
        assert done.returncode == 8, done.stdout + done.stderr
        assert "written to the cluster, but its history record was not" in done.stderr, done.stderr
        assert describe_stored(kafka_one, "--topic", topic) == {"retention.ms": "7200000"}
    finally:
        client.set_acls(directory, [make_acl("world", "anyone", all=True)])
        client.stop()
