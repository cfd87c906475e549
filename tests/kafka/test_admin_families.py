"""Every family written through the brokers: KafkaAdmin's requests, against a real Kafka 3.9 broker.

Topic configs (IncrementalAlterConfigs, resource type 2), client quotas of each entity kind and
their defaults (AlterClientQuotas) and SCRAM credentials (AlterUserScramCredentials, salted on
this side as Kafka's own client salts). Each test reads back what the broker wrote to ZooKeeper,
what the broker reports, and (where it says more) what Kafka's own ConfigCommand reads.
"""

from __future__ import annotations

import dataclasses

import pytest
from helpers import wait_for

from configctl import secrets
from configctl.adminapi.scram import upsertion
from configctl.entities import Entity
from configctl.errors import BrokerRefused

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
