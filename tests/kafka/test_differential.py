"""What configctl writes is what a real Kafka 3.9 broker then reports, for every entity family.

Each test writes with configctl (the CLI, as a user would) and asks the broker through the Admin
API: DescribeConfigs with synonyms for topics and brokers (compared key by key, value, source and
synonyms, with ``describe --effective``), DescribeClientQuotas for users, clients, users+clients
and IPs, DescribeUserScramCredentials and a real SCRAM login for credentials.
"""

from __future__ import annotations

import pytest
from conftest import (
    KafkaFleet,
    broker_configs_restored,
    describe_stored,
    differences,
    effective,
    until_agree,
)
from helpers import wait_for
from kafka.admin import KafkaAdminClient

from configctl.entities import Entity

pytestmark = pytest.mark.kafka


def reported_topic(fleet: KafkaFleet, topic: str) -> dict:
    with fleet.admin() as admin:
        return {name: entry.to_json() for name, entry in admin.describe_topic(topic).items()}


def reported_broker(fleet: KafkaFleet, broker_id: int) -> dict:
    with fleet.admin() as admin:
        return {name: entry.to_json() for name, entry in admin.describe_broker(broker_id).items()}


def agree(ours, theirs) -> None:
    left, right = until_agree(ours, theirs)
    assert left == right, "configctl and the broker disagree:\n" + "\n".join(differences(left, right))


# -- topics ------------------------------------------------------------------------------------


def test_a_topic_config_written_by_configctl_is_what_the_broker_reports(kafka_one, unique):
    topic = unique("orders")
    kafka_one.create_topics(topic)
    result = kafka_one.cli(
        "alter", "--topic", topic, "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]"
    )
    assert result.returncode == 0, result.stderr
    agree(lambda: effective(kafka_one, 1, "--topic", topic), lambda: reported_topic(kafka_one, topic))
    reported = reported_topic(kafka_one, topic)
    assert reported["retention.ms"]["value"] == "86400000"
    assert reported["cleanup.policy"]["value"] == "compact,delete"
    assert reported["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"


def test_a_topic_without_overrides_reports_what_configctl_computes(kafka_one, unique):
    topic = unique("plain")
    kafka_one.create_topics(topic)
    agree(lambda: effective(kafka_one, 1, "--topic", topic), lambda: reported_topic(kafka_one, topic))


def test_deleting_a_topic_override_falls_back_as_the_broker_does(kafka_one, unique):
    topic = unique("fallback")
    kafka_one.create_topics(topic)
    assert kafka_one.cli("alter", "--topic", topic, "--add-config", "segment.ms=3600000").returncode == 0
    assert kafka_one.cli("alter", "--topic", topic, "--delete-config", "segment.ms").returncode == 0
    agree(lambda: effective(kafka_one, 1, "--topic", topic), lambda: reported_topic(kafka_one, topic))


# -- brokers: per broker and <default> ---------------------------------------------------------


def test_broker_configs_per_broker_and_default_are_what_the_broker_reports(kafka_one):
    with broker_configs_restored(kafka_one):
        for args in (
            ("--broker-defaults", "--add-config", "log.retention.ms=7200000,log.cleaner.backoff.ms=20000"),
            (
                "--broker",
                "1",
                "--add-config",
                "log.cleaner.threads=2,log.cleaner.io.max.bytes.per.second=1048576",
            ),
        ):
            result = kafka_one.cli("alter", *args, "--allow-running-brokers")
            assert result.returncode == 0, result.stderr
        agree(lambda: effective(kafka_one, 1), lambda: reported_broker(kafka_one, 1))
        reported = reported_broker(kafka_one, 1)
        assert reported["log.cleaner.threads"]["source"] == "DYNAMIC_BROKER_CONFIG"
        assert reported["log.cleaner.backoff.ms"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"


def test_a_topic_follows_a_broker_default_as_the_broker_computes_it(kafka_one, unique):
    topic = unique("inherits")
    kafka_one.create_topics(topic)
    with broker_configs_restored(kafka_one):
        result = kafka_one.cli(
            "alter",
            "--broker-defaults",
            "--add-config",
            "log.retention.ms=5400000",
            "--allow-running-brokers",
        )
        assert result.returncode == 0, result.stderr
        agree(lambda: effective(kafka_one, 1, "--topic", topic), lambda: reported_topic(kafka_one, topic))
        assert reported_topic(kafka_one, topic)["retention.ms"]["value"] == "5400000"


# -- quotas: users, clients, users+clients, IPs ------------------------------------------------


QUOTA_CASES = [
    ("--user", "{u}"),
    ("--user", "CN={u} one,OU=x"),
    ("--client", "{c}"),
    ("--client", "{c} with space"),
    ("--user", "{u}", "--client", "{c}"),
    ("--user", "{u}", "--client-defaults"),
    ("--user-defaults", "--client", "{c}"),
]


@pytest.mark.parametrize("selector", QUOTA_CASES, ids=lambda s: " ".join(s))
def test_quotas_written_by_configctl_are_what_the_broker_reports(kafka_one, unique, selector):
    names = {"u": unique("user"), "c": unique("app")}
    args = tuple(part.format(**names) for part in selector)
    result = kafka_one.cli(
        "alter",
        *args,
        "--add-config",
        "producer_byte_rate=1048576,consumer_byte_rate=2048,request_percentage=12.5",
    )
    assert result.returncode == 0, result.stderr
    entity = _entity(args)
    stored = describe_stored(kafka_one, *args)
    assert stored == {
        "producer_byte_rate": "1048576",
        "consumer_byte_rate": "2048",
        "request_percentage": "12.5",
    }
    with kafka_one.admin() as admin:
        wait_for(
            lambda: admin.client_quotas(entity) == stored, timeout=30, message="the broker reports the quota"
        )


def test_default_user_and_client_quotas_are_what_the_broker_reports(kafka_one):
    for args in (("--user-defaults",), ("--client-defaults",), ("--user-defaults", "--client-defaults")):
        assert kafka_one.cli("alter", *args, "--add-config", "consumer_byte_rate=4096").returncode == 0
        with kafka_one.admin() as admin:
            wait_for(
                lambda a=args: admin.client_quotas(_entity(a)) == {"consumer_byte_rate": "4096"},
                timeout=30,
                message=f"the broker reports {args}",
            )
        assert kafka_one.cli("alter", *args, "--delete-config", "consumer_byte_rate").returncode == 0
        with kafka_one.admin() as admin:
            wait_for(lambda a=args: admin.client_quotas(_entity(a)) == {}, timeout=30, message="quota gone")


@pytest.mark.parametrize("ip", ["127.0.0.7", "::1", "<default>"])
def test_ip_connection_rates_written_by_configctl_are_what_the_broker_reports(kafka_one, ip):
    args = ("--ip-defaults",) if ip == "<default>" else ("--ip", ip)
    assert kafka_one.cli("alter", *args, "--add-config", "connection_creation_rate=25").returncode == 0
    try:
        with kafka_one.admin() as admin:
            wait_for(
                lambda: admin.client_quotas(_entity(args)) == {"connection_creation_rate": "25"},
                timeout=30,
                message="the broker reports the IP rate",
            )
    finally:
        assert kafka_one.cli("alter", *args, "--delete-config", "connection_creation_rate").returncode == 0


def _entity(args: tuple[str, ...]) -> Entity:
    user = client = None
    kind = None
    it = iter(args)
    for flag in it:
        if flag == "--user":
            user = next(it)
        elif flag == "--user-defaults":
            user = "<default>"
        elif flag == "--client":
            client = next(it)
        elif flag == "--client-defaults":
            client = "<default>"
        elif flag == "--ip":
            kind, user = "ips", next(it)
        elif flag == "--ip-defaults":
            kind, user = "ips", "<default>"
    if kind == "ips":
        return Entity.of("ips", user)
    if user is None:
        return Entity.of("clients", client)
    return Entity.of("users", user, client)


# -- SCRAM credentials -------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_scram_credential_written_by_configctl_logs_in_to_the_broker(kafka_one, unique, mechanism):
    user = unique("svc")
    password = "pa55-" + unique("w")
    result = kafka_one.cli(
        "alter", "--user", user, "--add-config", f"{mechanism}=[iterations=8192,password={password}]"
    )
    assert result.returncode == 0, result.stderr
    with kafka_one.admin() as admin:
        wait_for(lambda: admin.scram_credentials(user) == {mechanism: 8192}, timeout=30, message="credential")
    broker = kafka_one.cluster.brokers[1]
    wait_for(lambda: _scram_login(broker.scram_port, user, password, mechanism), timeout=30, message="login")
    assert not _scram_login(broker.scram_port, user, password + "x", mechanism)


def _scram_login(port: int, user: str, password: str, mechanism: str) -> bool:
    try:
        client = KafkaAdminClient(
            bootstrap_servers=[f"127.0.0.1:{port}"],
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_plain_username=user,
            sasl_plain_password=password,
            request_timeout_ms=5000,
            bootstrap_timeout_ms=5000,
        )
    except Exception:
        return False
    try:
        client.describe_cluster()
        return True
    except Exception:
        return False
    finally:
        client.close()
