"""The catalogue: ConfigKey records read from the ``x-`` annotations of the committed schemas."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from configctl import catalogue
from configctl.entities import EntityType

pytestmark = pytest.mark.unit

KAFKA_TYPES = {
    "int",
    "short",
    "long",
    "double",
    "boolean",
    "list",
    "string",
    "class",
    "password",
    "scram_credential",
}
QUOTA_KEYS = {"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}


@pytest.mark.parametrize(
    ("etype", "count"),
    [
        (EntityType.TOPICS, 36),
        (EntityType.BROKERS, 318),  # 314 documented + 3 dynamic-only throttle rates + 1 new in 3.9
        (EntityType.USERS, 6),
        (EntityType.CLIENTS, 4),
        (EntityType.IPS, 1),
    ],
)
def test_key_counts(etype: EntityType, count: int) -> None:
    assert len(catalogue.keys(etype)) == count
    assert catalogue.known_names(etype) == tuple(catalogue.keys(etype))


@pytest.mark.parametrize("etype", list(EntityType))
def test_schemas_are_valid_draft_2020_12(etype: EntityType) -> None:
    document = catalogue.schema(etype)
    Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    for name, key in catalogue.keys(etype).items():
        assert key.name == name
        assert key.entity_type is etype
        assert key.kafka_type in KAFKA_TYPES


def test_quota_keys() -> None:
    assert set(catalogue.keys(EntityType.CLIENTS)) == QUOTA_KEYS
    assert set(catalogue.keys(EntityType.USERS)) == QUOTA_KEYS | {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert set(catalogue.keys(EntityType.IPS)) == {"connection_creation_rate"}
    scram = catalogue.keys(EntityType.USERS)["SCRAM-SHA-512"]
    assert scram.kafka_type == "scram_credential"
    assert scram.sensitive
    assert catalogue.keys(EntityType.CLIENTS)["request_percentage"].default == "2.147483647E9"


def test_topic_facts() -> None:
    retention = catalogue.keys(EntityType.TOPICS)["retention.ms"]
    assert retention.kafka_type == "long"
    assert retention.default == "604800000"
    assert retention.broker_synonyms == (
        ("log.retention.ms", "identity"),
        ("log.retention.minutes", "minutes_to_ms"),
        ("log.retention.hours", "hours_to_ms"),
    )
    assert retention.update_mode is None
    assert catalogue.keys(EntityType.TOPICS)["cleanup.policy"].kafka_type == "list"
    assert catalogue.keys(EntityType.TOPICS)["follower.replication.throttled.replicas"].default == ""


def test_broker_update_modes() -> None:
    brokers = catalogue.keys(EntityType.BROKERS)
    modes = {key.update_mode for key in brokers.values()}
    assert modes == {"read-only", "per-broker", "cluster-wide"}
    assert brokers["log.dirs"].read_only
    assert brokers["listeners"].per_broker
    assert not brokers["log.retention.ms"].read_only and not brokers["log.retention.ms"].per_broker
    assert brokers["log.retention.ms"].synonyms == (
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    )
    assert brokers["follower.replication.throttled.rate"].dynamic_only
    assert sum(key.per_broker for key in brokers.values()) == 37


def test_sensitivity() -> None:
    assert catalogue.is_sensitive(EntityType.BROKERS, "ssl.keystore.password")
    assert catalogue.is_sensitive(EntityType.BROKERS, "listener.name.internal.ssl.keystore.password")
    assert catalogue.is_sensitive(EntityType.BROKERS, "listener.name.internal.plain.sasl.jaas.config")
    assert catalogue.is_sensitive(
        EntityType.BROKERS, "my.plugin.ssl.truststore.password"
    )  # custom key, by suffix
    assert not catalogue.is_sensitive(EntityType.BROKERS, "log.retention.ms")
    assert not catalogue.is_sensitive(EntityType.BROKERS, "my.plugin.key")
    assert catalogue.is_sensitive(EntityType.USERS, "SCRAM-SHA-256")
    assert not catalogue.is_sensitive(EntityType.USERS, "producer_byte_rate")
    assert not catalogue.is_sensitive(EntityType.TOPICS, "retention.ms")
    assert not catalogue.is_sensitive(EntityType.TOPICS, "nope")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("listener.name.internal.ssl.keystore.location", ("internal", "ssl.keystore.location")),
        ("listener.name.internal.plain.sasl.jaas.config", ("internal", "sasl.jaas.config")),
        ("listener.name.internal.sasl.jaas.config", ("internal", "sasl.jaas.config")),
        (
            "listener.name.external.oauthbearer.connections.max.reauth.ms",
            ("external", "connections.max.reauth.ms"),
        ),
        ("listener.name.internal.max.connections", ("internal", "max.connections")),
        ("listener.name.internal.custom.thing", ("internal", "custom.thing")),
        ("listener.name.internal", (None, "listener.name.internal")),
        ("listener.name..x", (None, "listener.name..x")),
        ("ssl.keystore.location", (None, "ssl.keystore.location")),
    ],
)
def test_split_listener_prefix(name: str, expected: tuple[str | None, str]) -> None:
    assert catalogue.split_listener_prefix(name) == expected


def test_lookup() -> None:
    base = catalogue.lookup(EntityType.BROKERS, "ssl.keystore.location")
    assert base is not None
    assert catalogue.lookup(EntityType.BROKERS, "listener.name.internal.ssl.keystore.location") is base
    assert catalogue.lookup(EntityType.BROKERS, "listener.name.internal.scram-sha-256.sasl.jaas.config") is (
        catalogue.lookup(EntityType.BROKERS, "sasl.jaas.config")
    )
    assert catalogue.lookup(EntityType.BROKERS, "listener.name.internal.custom.thing") is None
    assert catalogue.lookup(EntityType.BROKERS, "nope") is None
    # Listener prefixes mean nothing outside broker configs.
    assert catalogue.lookup(EntityType.TOPICS, "listener.name.internal.retention.ms") is None
    assert (
        catalogue.lookup(EntityType.TOPICS, "retention.ms")
        is catalogue.keys(EntityType.TOPICS)["retention.ms"]
    )


def test_custom_keys_and_quota_precedence() -> None:
    assert catalogue.custom_keys_allowed(EntityType.BROKERS)
    for etype in (EntityType.TOPICS, EntityType.USERS, EntityType.CLIENTS, EntityType.IPS):
        assert not catalogue.custom_keys_allowed(etype)
    assert catalogue.quota_precedence() == (
        "users/<user>/clients/<client-id>",
        "users/<user>/clients/<default>",
        "users/<user>",
        "users/<default>/clients/<client-id>",
        "users/<default>/clients/<default>",
        "users/<default>",
        "clients/<client-id>",
        "clients/<default>",
    )


def test_schemas_dir_points_at_the_checkout() -> None:
    assert (catalogue.schemas_dir() / "topics.json").is_file()
