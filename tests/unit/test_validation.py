"""Validation: coercion as Kafka's ConfigDef parses, schema checks, update modes, placement, cross-field rules."""

from __future__ import annotations

import base64
import datetime
import math
import re
import time
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from configctl import catalogue
from configctl.catalogue import ConfigKey
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput, ValidationFailed
from configctl.handlers.validate import check, validate_config
from configctl.validation import closest, coerce
from configctl.values import normalize_value

pytestmark = pytest.mark.unit

TOPIC = Entity.of("topics", "orders")
BROKER = Entity.of("brokers", "1")
BROKER_DEFAULT = Entity.of("brokers", DEFAULT)
USER = Entity.of("users", "User:alice")

# Facts from Kafka 3.9 (DynamicBrokerConfig), written out here so the tests check the schemas
# against an independent statement of them.
LISTENER_PREFIX_REQUIRED = {
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
}
PER_BROKER_ONLY = LISTENER_PREFIX_REQUIRED | {
    "advertised.listeners",
    "listener.security.protocol.map",
    "listeners",
    "principal.builder.class",
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules",
    "sasl.kerberos.service.name",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.ticket.renew.window.factor",
    "sasl.login.refresh.buffer.seconds",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.mechanism.inter.broker.protocol",
    "ssl.cipher.suites",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.endpoint.identification.algorithm",
    "ssl.engine.factory.class",
    "ssl.keymanager.algorithm",
    "ssl.protocol",
    "ssl.provider",
    "ssl.secure.random.implementation",
    "ssl.trustmanager.algorithm",
}
LISTENER_CLUSTER_WIDE = {"max.connection.creation.rate", "max.connections", "num.network.threads"}

READ_ONLY = "is read-only: set it in server.properties and restart the broker"
PER_BROKER = "can only be set per broker (brokers/<id>), not at brokers/<default>"
PER_LISTENER = "can only be updated per listener"


def scram(iterations: int = 4096, key_bytes: int = 32) -> str:
    key = base64.b64encode(bytes(range(key_bytes))).decode()
    salt = base64.b64encode(b"1lv4pdnw4fwq7notcxm0yy1k7q").decode()
    return f"salt={salt},stored_key={key},server_key={key},iterations={iterations}"


# The example credential of the Kafka catalogue (SCRAM-SHA-256, "alice-secret", 4096 iterations).
ALICE_SHA256 = (
    "salt=MWx2NHBkbnc0ZndxN25vdGN4bTB5eTFrN3E=,stored_key=dbs02zawn1PWf+C6mFgNthm5hP2KyVE3S+TleRjX0Oc=,"
    "server_key=VWSqfiThWB5QzwOTEux/YawaCcQJwmRNQucrXRxM3Yg=,iterations=4096"
)


def key(etype: EntityType, name: str) -> ConfigKey:
    return catalogue.keys(etype)[name]


def one(problems: list[str]) -> str:
    assert len(problems) == 1, problems
    return problems[0]


# --------------------------------------------------------------------------------------------
# coerce
# --------------------------------------------------------------------------------------------

INT = key(EntityType.TOPICS, "max.message.bytes")  # int [0,...]
LONG = key(EntityType.TOPICS, "retention.bytes")  # long, no range
SHORT = key(EntityType.BROKERS, "offsets.commit.required.acks")  # short
DOUBLE = key(EntityType.CLIENTS, "request_percentage")  # double, no range
BOOLEAN = key(EntityType.TOPICS, "preallocate")
LIST = key(EntityType.TOPICS, "cleanup.policy")
STRING = key(EntityType.TOPICS, "compression.type")
PASSWORD = key(EntityType.BROKERS, "ssl.keystore.password")


@pytest.mark.parametrize(
    ("config_key", "raw", "expected"),
    [
        (INT, "0", 0),
        (INT, "+5", 5),
        (INT, "-5", -5),
        (INT, "007", 7),
        (INT, " 42 ", 42),  # ConfigDef trims before Integer.parseInt
        (INT, "\t42\n", 42),
        (INT, "2147483647", 2**31 - 1),
        (INT, "-2147483648", -(2**31)),
        (LONG, "9223372036854775807", 2**63 - 1),
        (LONG, "-9223372036854775808", -(2**63)),
        (SHORT, "32767", 32767),
        (SHORT, "-32768", -32768),
        (DOUBLE, "0.5", 0.5),
        (DOUBLE, "1", 1.0),
        (DOUBLE, "1.", 1.0),
        (DOUBLE, "-.5", -0.5),
        (DOUBLE, "+2.5", 2.5),
        (DOUBLE, "1e9", 1e9),
        (DOUBLE, "2.147483647E9", 2147483647.0),
        (DOUBLE, "1.5E-3", 0.0015),
        (DOUBLE, "1d", 1.0),
        (DOUBLE, "1.5f", 1.5),
        (DOUBLE, "0x1p3", 8.0),
        (DOUBLE, "-0x1.8p1", -3.0),
        (DOUBLE, "Infinity", math.inf),
        (DOUBLE, "-Infinity", -math.inf),
        (DOUBLE, "1e400", math.inf),  # as Double.parseDouble: overflow is infinity
        (BOOLEAN, "true", True),
        (BOOLEAN, "TRUE", True),
        (BOOLEAN, "False", False),
        (BOOLEAN, " true ", True),
        (LIST, "", []),
        (LIST, "  ", []),
        (LIST, "compact", ["compact"]),
        (LIST, "compact,delete", ["compact", "delete"]),
        (LIST, " compact , delete ", ["compact", "delete"]),
        (LIST, "a,,b", ["a", "", "b"]),  # ConfigDef keeps empty items; validators refuse them
        (LIST, "a,", ["a", ""]),
        (STRING, " gzip ", "gzip"),
        (STRING, "", ""),
        (PASSWORD, "s3cret", "s3cret"),
    ],
)
def test_coerce_accepts(config_key: ConfigKey, raw: str, expected: Any) -> None:
    value, error = coerce(config_key, raw)
    assert error is None
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("config_key", "raw", "fragment"),
    [
        (INT, "", "not a valid int"),
        (INT, "+", "not a valid int"),
        (INT, "-", "not a valid int"),
        (INT, "1.5", "not a valid int"),
        (INT, "1e3", "not a valid int"),
        (INT, "1_000", "not a valid int"),
        (INT, "1 000", "not a valid int"),
        (INT, "0x10", "not a valid int"),
        (INT, "٣", "not a valid int"),  # only ASCII digits
        (INT, "2147483648", "out of range for an int"),
        (INT, "-2147483649", "out of range for an int"),
        (LONG, "9223372036854775808", "out of range for a long"),
        (LONG, "-9223372036854775809", "out of range for a long"),
        (LONG, "99999999999999999999999", "out of range for a long"),
        (SHORT, "32768", "out of range for a short"),
        (DOUBLE, "", "not a valid double"),
        (DOUBLE, "abc", "not a valid double"),
        (DOUBLE, ".", "not a valid double"),
        (DOUBLE, "1e", "not a valid double"),
        (DOUBLE, "1,5", "not a valid double"),
        (DOUBLE, "inf", "not a valid double"),
        (DOUBLE, "NaN", "NaN is not a number"),
        (DOUBLE, "-NaN", "NaN is not a number"),
        (BOOLEAN, "yes", "not a valid boolean"),
        (BOOLEAN, "1", "not a valid boolean"),
        (BOOLEAN, "t", "not a valid boolean"),
        (BOOLEAN, "", "not a valid boolean"),
    ],
)
def test_coerce_refuses(config_key: ConfigKey, raw: str, fragment: str) -> None:
    value, error = coerce(config_key, raw)
    assert value is None
    assert error is not None
    assert error.startswith(f"{config_key.name}: ")
    assert fragment in error


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_coerce_long_round_trips(number: int) -> None:
    assert coerce(LONG, str(number)) == (number, None)
    assert coerce(LONG, f"+{number}" if number >= 0 else str(number)) == (number, None)


@given(
    st.one_of(
        st.integers(min_value=2**63, max_value=2**80),
        st.integers(min_value=-(2**80), max_value=-(2**63) - 1),
    )
)
def test_coerce_long_overflow(number: int) -> None:
    value, error = coerce(LONG, str(number))
    assert value is None and error is not None and "out of range" in error


# --------------------------------------------------------------------------------------------
# Every key, every entity path
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(catalogue.keys(EntityType.TOPICS)))
def test_every_topic_key_default_passes(name: str) -> None:
    config_key = key(EntityType.TOPICS, name)
    assert config_key.default is not None
    assert validate_config(TOPIC, {name: config_key.default}) == []


def test_all_topic_defaults_together_pass() -> None:
    config = {name: k.default for name, k in catalogue.keys(EntityType.TOPICS).items()}
    assert len(config) == 36
    assert validate_config(TOPIC, config) == []


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("retention.ms", "-1"),
        ("retention.ms", "86400000"),
        ("cleanup.policy", "compact,delete"),
        ("cleanup.policy", "delete,compact"),
        ("cleanup.policy", ""),
        ("compression.gzip.level", "-1"),
        ("compression.gzip.level", "1"),
        ("compression.gzip.level", "9"),
        ("compression.zstd.level", "-131072"),
        ("min.cleanable.dirty.ratio", "0"),
        ("min.cleanable.dirty.ratio", "1.0"),
        ("min.insync.replicas", "2"),
        ("segment.bytes", "14"),
        ("message.timestamp.type", "LogAppendTime"),
        ("message.format.version", "3.9-IV0"),
        ("leader.replication.throttled.replicas", "0:1,1:2"),
        ("leader.replication.throttled.replicas", "*"),
        ("unclean.leader.election.enable", "TRUE"),
        ("local.retention.ms", "-2"),
    ],
)
def test_valid_topic_values(name: str, value: str) -> None:
    assert validate_config(TOPIC, {name: value}) == []


def broker_value(config_key: ConfigKey) -> str:
    """A value of the right type and range for a broker key, from its schema alone."""
    sub = catalogue.schema(EntityType.BROKERS)["properties"][config_key.name]
    if "anyOf" in sub:
        sub = sub["anyOf"][0]
    if sub.get("type") == "integer":
        return str(max(sub["minimum"], min(1, sub["maximum"])))
    if sub.get("type") == "number":
        return str(sub.get("minimum", 0.5))
    if sub.get("type") == "boolean":
        return "true"
    if sub.get("type") == "array":
        items = sub["items"]
        if "enum" in items:
            return items["enum"][0]
        return "x" if sub.get("minItems") else ""
    if "enum" in sub:
        return sub["enum"][0]
    if "pattern" in sub:
        return "com.example.Plugin"
    return "x"


BROKER_KEYS = sorted(catalogue.keys(EntityType.BROKERS))


@pytest.mark.parametrize("name", BROKER_KEYS)
def test_every_broker_key_update_mode(name: str) -> None:
    config_key = key(EntityType.BROKERS, name)
    config = {name: broker_value(config_key)}
    at_broker = validate_config(BROKER, config)
    at_default = validate_config(BROKER_DEFAULT, config)
    if config_key.update_mode == "read-only":
        assert one(at_broker) == f"{name} {READ_ONLY}"
        assert one(at_default) == f"{name} {READ_ONLY}"
    elif name in LISTENER_PREFIX_REQUIRED:
        assert one(at_broker).startswith(f"{name} {PER_LISTENER}: use listener.name.<listener>.{name}")
        assert one(at_default).startswith(f"{name} {PER_LISTENER}")
    elif config_key.update_mode == "per-broker":
        assert at_broker == []
        assert one(at_default) == f"{name} {PER_BROKER}"
    else:
        assert config_key.update_mode == "cluster-wide"
        assert at_broker == []
        assert at_default == []


def test_update_modes_agree_with_kafka_lists() -> None:
    per_broker = {n for n, k in catalogue.keys(EntityType.BROKERS).items() if k.update_mode == "per-broker"}
    assert per_broker == PER_BROKER_ONLY
    brokers = catalogue.keys(EntityType.BROKERS)
    assert sum(k.update_mode == "cluster-wide" for k in brokers.values()) == 55
    assert (
        sum(k.update_mode == "read-only" for k in brokers.values()) == 226
    )  # + alter.config.policy.kraft.compatibility.enable


@pytest.mark.parametrize("name", sorted(PER_BROKER_ONLY | LISTENER_CLUSTER_WIDE))
def test_listener_prefixed_keys(name: str) -> None:
    prefixed = f"listener.name.internal.{name}"
    config = {prefixed: broker_value(key(EntityType.BROKERS, name))}
    assert validate_config(BROKER, config) == []
    at_default = validate_config(BROKER_DEFAULT, config)
    if name in LISTENER_CLUSTER_WIDE:
        assert at_default == []
    else:
        assert one(at_default) == f"{prefixed} {PER_BROKER}"


@pytest.mark.parametrize(
    "mechanism_config", sorted(catalogue.schema(EntityType.BROKERS)["x-listener-mechanism-configs"])
)
def test_listener_mechanism_prefix(mechanism_config: str) -> None:
    name = f"listener.name.sasl_ssl.scram-sha-512.{mechanism_config}"
    value = broker_value(key(EntityType.BROKERS, mechanism_config))
    assert validate_config(BROKER, {name: value}) == []
    assert one(validate_config(BROKER_DEFAULT, {name: value})) == f"{name} {PER_BROKER}"
    upper = f"listener.name.sasl_ssl.SCRAM-SHA-512.{mechanism_config}"
    assert "SASL mechanism in a listener prefix must be lower case" in one(
        validate_config(BROKER, {upper: value})
    )


def test_listener_prefix_rules() -> None:
    problem = one(validate_config(BROKER, {"listener.name.INTERNAL.ssl.keystore.location": "/k"}))
    assert "listener name in a listener prefix must be lower case" in problem
    assert "'listener.name.internal.ssl.keystore.location'" in problem
    # The prefixed key is validated against its base key's type and range.
    assert one(validate_config(BROKER, {"listener.name.internal.max.connections": "many"})) == (
        "listener.name.internal.max.connections: 'many' is not a valid int: expected a whole number"
    )
    assert one(validate_config(BROKER, {"listener.name.internal.ssl.client.auth": "maybe"})).startswith(
        "listener.name.internal.ssl.client.auth: 'maybe' is not one of required, requested, none"
    )
    # A typo in the base name is an unknown key with a suggestion that keeps the prefix.
    assert one(validate_config(BROKER, {"listener.name.internal.ssl.keystore.locaton": "/k"})) == (
        "unknown broker config 'listener.name.internal.ssl.keystore.locaton' "
        "(did you mean 'listener.name.internal.ssl.keystore.location'?); "
        "use --allow-custom-config for a plugin's custom key"
    )


@pytest.mark.parametrize(
    ("entity", "label"),
    [
        (Entity.of("topics", "t"), "topic"),
        (Entity.of("clients", "c"), "client"),
        (Entity.of("clients", DEFAULT), "client"),
        (Entity.of("users", "u"), "user"),
        (Entity.of("users", DEFAULT), "user"),
        (Entity.of("users", "u", "c"), "user/client quota"),
        (Entity.of("users", "u", DEFAULT), "user/client quota"),
        (Entity.of("users", DEFAULT, "c"), "user/client quota"),
        (Entity.of("users", DEFAULT, DEFAULT), "user/client quota"),
        (Entity.of("brokers", "1"), "broker"),
        (Entity.of("brokers", DEFAULT), "broker"),
        (Entity.of("ips", "1.2.3.4"), "IP"),
        (Entity.of("ips", DEFAULT), "IP"),
    ],
    ids=lambda v: v.path if isinstance(v, Entity) else v,
)
def test_all_entity_paths(entity: Entity, label: str) -> None:
    quotas = {"producer_byte_rate": "1048576", "consumer_byte_rate": "2048", "request_percentage": "200.5"}
    quotas["controller_mutation_rate"] = "10"
    valid = {
        EntityType.TOPICS: {"retention.ms": "86400000", "cleanup.policy": "compact,delete"},
        EntityType.CLIENTS: quotas,
        EntityType.USERS: quotas,
        EntityType.BROKERS: {"log.retention.ms": "3600000", "log.cleaner.threads": "2"},
        EntityType.IPS: {"connection_creation_rate": "10"},
    }[entity.type]
    assert validate_config(entity, valid) == []
    problem = one(validate_config(entity, {"no.such.key": "1"}))
    assert problem.startswith(f"unknown {label} config 'no.such.key'")
    # Quota keys belong to quota entities only; a topic key is unknown there and vice versa.
    if entity.type in (EntityType.CLIENTS, EntityType.USERS, EntityType.IPS):
        assert validate_config(entity, {"retention.ms": "1"})[0].startswith(f"unknown {label} config")
    if entity.type in (EntityType.TOPICS, EntityType.IPS):
        assert validate_config(entity, {"producer_byte_rate": "1"})[0].startswith(f"unknown {label} config")


@pytest.mark.parametrize(
    ("entity", "allowed"),
    [
        (Entity.of("users", "u"), True),
        (Entity.of("users", "User:CN=Alice Smith,O=Example Corp"), True),
        (Entity.of("users", DEFAULT), False),
        (Entity.of("users", "u", "c"), False),
        (Entity.of("users", "u", DEFAULT), False),
        (Entity.of("users", DEFAULT, "c"), False),
        (Entity.of("users", DEFAULT, DEFAULT), False),
    ],
    ids=lambda v: v.path if isinstance(v, Entity) else str(v),
)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_placement(entity: Entity, allowed: bool, mechanism: str) -> None:
    credential = scram(key_bytes=32 if mechanism == "SCRAM-SHA-256" else 64)
    problems = validate_config(entity, {mechanism: credential})
    if allowed:
        assert problems == []
    else:
        where = f"{entity.type.value}/{entity.name}" + (f"/clients/{entity.client}" if entity.client else "")
        assert one(problems) == f"{mechanism} can only be set for a named user (users/<user>), not at {where}"


def test_scram_values() -> None:
    assert validate_config(USER, {"SCRAM-SHA-256": ALICE_SHA256}) == []
    assert validate_config(USER, {"SCRAM-SHA-512": scram(iterations=16384, key_bytes=64)}) == []
    assert one(validate_config(USER, {"SCRAM-SHA-256": scram(iterations=4095)})) == (
        "SCRAM-SHA-256: 4095 iterations is less than the minimum 4096"
    )
    assert one(validate_config(USER, {"SCRAM-SHA-256": scram(iterations=16385)})) == (
        "SCRAM-SHA-256: 16385 iterations is more than the maximum 16384"
    )
    # A SHA-256 credential stored under SCRAM-SHA-512 could never authenticate.
    assert one(validate_config(USER, {"SCRAM-SHA-512": ALICE_SHA256})) == (
        "SCRAM-SHA-512: the credential's keys are 32 bytes long, not the 64 of SHA-512"
    )
    # The operator's input form is turned into the stored form before validation; here it is refused,
    # and the secret never appears in the message.
    problem = one(validate_config(USER, {"SCRAM-SHA-256": "[iterations=8192,password=alice-secret]"}))
    assert "is not a stored SCRAM credential" in problem
    assert "alice-secret" not in problem
    assert "alice-secret" not in one(validate_config(USER, {"SCRAM-SHA-256": "alice-secret"}))


# --------------------------------------------------------------------------------------------
# Types, ranges, enums, list items, suggestions
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entity", "name", "value", "problem"),
    [
        (TOPIC, "retention.ms", "-5", "retention.ms: -5 is less than the minimum -1"),
        (
            TOPIC,
            "retention.ms",
            "1 day",
            "retention.ms: '1 day' is not a valid long: expected a whole number",
        ),
        (
            TOPIC,
            "retention.ms",
            "9223372036854775808",
            "retention.ms: '9223372036854775808' is out of range for a long "
            "(-9223372036854775808 to 9223372036854775807)",
        ),
        (
            TOPIC,
            "segment.bytes",
            "2147483648",
            "segment.bytes: '2147483648' is out of range for an int (-2147483648 to 2147483647)",
        ),
        (TOPIC, "segment.bytes", "13", "segment.bytes: 13 is less than the minimum 14"),
        (TOPIC, "compression.lz4.level", "18", "compression.lz4.level: 18 is greater than the maximum 17"),
        (
            TOPIC,
            "compression.gzip.level",
            "0",
            "compression.gzip.level: 0 is not a valid value (valid values [1,...,9] or -1)",
        ),
        (
            TOPIC,
            "compression.gzip.level",
            "-2",
            "compression.gzip.level: -2 is not a valid value (valid values [1,...,9] or -1)",
        ),
        (
            TOPIC,
            "min.cleanable.dirty.ratio",
            "1.5",
            "min.cleanable.dirty.ratio: 1.5 is greater than the maximum 1",
        ),
        (
            TOPIC,
            "min.cleanable.dirty.ratio",
            "Infinity",
            "min.cleanable.dirty.ratio: Infinity is greater than the maximum 1",
        ),
        (TOPIC, "preallocate", "yes", "preallocate: 'yes' is not a valid boolean: expected true or false"),
        (
            TOPIC,
            "compression.type",
            "GZIP",
            "compression.type: 'GZIP' is not one of uncompressed, zstd, lz4, snappy, gzip, producer "
            "(did you mean 'gzip'?)",
        ),
        (
            TOPIC,
            "message.timestamp.type",
            "create",
            "message.timestamp.type: 'create' is not one of CreateTime, LogAppendTime (did you mean 'CreateTime'?)",
        ),
        (
            TOPIC,
            "cleanup.policy",
            "compact,deleet",
            "cleanup.policy: item 'deleet' is not one of compact, delete (did you mean 'delete'?)",
        ),
        (TOPIC, "cleanup.policy", "compact,", "cleanup.policy: item '' is not one of compact, delete"),
        (
            TOPIC,
            "leader.replication.throttled.replicas",
            "0:1,broker2",
            "leader.replication.throttled.replicas: item 'broker2' is not of the form "
            "<partition>:<broker-id> (or a lone *)",
        ),
        (
            TOPIC,
            "leader.replication.throttled.replicas",
            "*,0:1",
            "leader.replication.throttled.replicas: '*' (all replicas) must stand alone, not in a list",
        ),
        (
            Entity.of("ips", DEFAULT),
            "connection_creation_rate",
            "-1",
            "connection_creation_rate: -1 is less than the minimum 0",
        ),
        (
            Entity.of("clients", "c"),
            "request_percentage",
            "NaN",
            "request_percentage: 'NaN' is not accepted: NaN is not a number",
        ),
        (
            Entity.of("users", "u", "c"),
            "producer_byte_rate",
            "1MB",
            "producer_byte_rate: '1MB' is not a valid long: expected a whole number",
        ),
        (
            BROKER,
            "log.cleaner.threads",
            "-1",
            "log.cleaner.threads: -1 is less than the minimum 0",
        ),
        (
            BROKER,
            "metric.reporters",
            "",
            None,
        ),
        (
            BROKER,
            "principal.builder.class",
            "not a class",
            "principal.builder.class: 'not a class' is not a valid Java class name",
        ),
        (
            BROKER_DEFAULT,
            "compression.gzip.level",
            "10",
            "compression.gzip.level: 10 is not a valid value (valid values [1,...,9] or -1)",
        ),
        (BROKER_DEFAULT, "compression.gzip.level", "-1", None),
        (
            BROKER,
            "log.message.format.version",
            "3.9-IV0",
            f"log.message.format.version {READ_ONLY}",
        ),
    ],
)
def test_value_problems(entity: Entity, name: str, value: str, problem: str | None) -> None:
    problems = validate_config(entity, {name: value})
    if problem is None:
        assert problems == []
    else:
        assert one(problems) == problem


def test_long_enum_is_abbreviated() -> None:
    problem = one(validate_config(TOPIC, {"message.format.version": "3.10"}))
    assert problem.startswith("message.format.version: '3.10' is not one of 0.8.0, 0.8.1,")
    assert "(57 values)" in problem
    assert len(problem) < 200


@pytest.mark.parametrize(
    ("entity", "typo", "suggestion"),
    [
        (TOPIC, "retension.ms", "retention.ms"),
        (TOPIC, "RETENTION.MS", "retention.ms"),
        (TOPIC, "cleanup_policy", "cleanup.policy"),
        (TOPIC, "log.retention.ms", "retention.ms"),  # the broker synonym typed on a topic
        (TOPIC, "log.cleaner.min.compaction.lag.ms", "min.compaction.lag.ms"),
        (Entity.of("clients", "c"), "producer-byte-rate", "producer_byte_rate"),
        (Entity.of("users", "u"), "SCRAM-SHA-265", "SCRAM-SHA-256"),
        (Entity.of("users", "u", "c"), "consumer_byte_rat", "consumer_byte_rate"),
        (Entity.of("ips", "::1"), "connection_creation_rat", "connection_creation_rate"),
        (BROKER, "log.retention.msec", "log.retention.ms"),
    ],
)
def test_typo_suggestions(entity: Entity, typo: str, suggestion: str) -> None:
    problem = one(validate_config(entity, {typo: "1"}))
    assert f"config {typo!r} (did you mean {suggestion!r}?)" in problem


def test_scram_is_not_suggested_where_it_cannot_be_set() -> None:
    assert one(validate_config(Entity.of("users", DEFAULT), {"SCRAM-SHA-265": "x"})) == (
        "unknown user config 'SCRAM-SHA-265'"
    )
    assert one(validate_config(Entity.of("users", "u", "c"), {"SCRAM-SHA-265": "x"})) == (
        "unknown user/client quota config 'SCRAM-SHA-265'"
    )


def test_changed_as_a_single_name() -> None:
    config = {"retention.ms": "-5", "segment.ms": "1000"}
    assert validate_config(TOPIC, config, changed="segment.ms") == []  # type: ignore[arg-type]
    assert len(validate_config(TOPIC, config, changed="retention.ms")) == 1  # type: ignore[arg-type]


def test_unknown_topic_key_message() -> None:
    assert validate_config(TOPIC, {"retension.ms": "1"}) == [
        "unknown topic config 'retension.ms' (did you mean 'retention.ms'?)"
    ]
    assert validate_config(TOPIC, {"zzzz": "1"}) == ["unknown topic config 'zzzz'"]


def test_closest() -> None:
    assert closest("retension.ms", ["retention.ms", "segment.ms"]) == "retention.ms"
    assert closest("GZIP", ["gzip", "lz4"]) == "gzip"
    assert closest("qqqqqq", ["retention.ms"]) is None
    assert closest("x", []) is None


def test_every_problem_reported_together() -> None:
    config = {
        "retension.ms": "1",
        "retention.ms": "-5",
        "cleanup.policy": "compacted",
        "preallocate": "maybe",
        "segment.bytes": "99999999999",
        "min.insync.replicas": "2",  # fine
        "min.compaction.lag.ms": "10",
        "max.compaction.lag.ms": "5",
    }
    problems = validate_config(TOPIC, config)
    assert len(problems) == 6
    joined = "\n".join(problems)
    for name in (
        "retension.ms",
        "retention.ms",
        "cleanup.policy",
        "preallocate",
        "segment.bytes",
        "min.compaction",
    ):
        assert name in joined
    with pytest.raises(ValidationFailed) as caught:
        check(TOPIC, config)
    assert caught.value.problems == problems
    assert caught.value.exit_code == 1
    assert str(caught.value).startswith("6 problems: unknown topic config 'retension.ms'")
    assert "\n" not in str(caught.value)


def test_check_passes_silently_and_single_problem_message() -> None:
    assert check(TOPIC, {"retention.ms": "1000"}) is None
    with pytest.raises(
        ValidationFailed, match=r"^invalid config: retention.ms: -5 is less than the minimum -1$"
    ):
        check(TOPIC, {"retention.ms": "-5"})


def test_non_string_values_are_refused() -> None:
    assert (
        one(validate_config(TOPIC, {"retention.ms": 5}))
        == "retention.ms: the value must be a string, not int"
    )  # type: ignore[dict-item]


# --------------------------------------------------------------------------------------------
# Brokers: custom keys, passwords at <default>
# --------------------------------------------------------------------------------------------


def test_custom_broker_keys() -> None:
    config = {"my.plugin.rate": "5"}
    assert one(validate_config(BROKER, config)) == (
        "unknown broker config 'my.plugin.rate'; use --allow-custom-config for a plugin's custom key"
    )
    assert validate_config(BROKER, config, allow_custom=True) == []
    assert validate_config(BROKER_DEFAULT, config, allow_custom=True) == []
    # allow_custom is for broker keys only.
    assert validate_config(TOPIC, config, allow_custom=True)[0].startswith("unknown topic config")
    # A known key stays checked under allow_custom; a typo of one is still suggested without it.
    assert validate_config(BROKER, {"log.cleaner.threads": "x"}, allow_custom=True) != []
    assert "did you mean 'log.cleaner.threads'" in one(validate_config(BROKER, {"log.cleaner.thread": "2"}))


def test_password_configs_at_default() -> None:
    # Kafka: "Password config can be defined only at broker level" (names ending like a password config).
    config = {"my.plugin.ssl.keystore.password": "secret"}
    assert validate_config(BROKER, config, allow_custom=True) == []
    problem = one(validate_config(BROKER_DEFAULT, config, allow_custom=True))
    assert problem == (
        "my.plugin.ssl.keystore.password is a password config: it can only be set per broker "
        "(brokers/<id>), not at brokers/<default>"
    )
    assert "secret" not in problem.replace("my.plugin.ssl.keystore.password", "")
    # Known password configs are per-broker anyway: one sentence, not two.
    assert one(validate_config(BROKER_DEFAULT, {"sasl.jaas.config": "x"})) == f"sasl.jaas.config {PER_BROKER}"
    assert validate_config(BROKER, {"listener.name.internal.ssl.keystore.password": "s"}) == []


def test_read_only_key_with_a_bad_value_gets_both_sentences() -> None:
    name = "remote.log.manager.copier.thread.pool.size"
    assert validate_config(BROKER, {name: "0"}) == [
        f"{name} {READ_ONLY}",
        f"{name}: 0 is not a valid value (valid values [1,...] or -1)",
    ]


def test_read_only_messages_for_well_known_keys() -> None:
    for name, value in (("log.dirs", "/data"), ("broker.id", "1"), ("zookeeper.connect", "zk:2181")):
        assert one(validate_config(BROKER, {name: value})) == f"{name} {READ_ONLY}"
    assert validate_config(BROKER_DEFAULT, {"log.retention.ms": "3600000"}) == []
    assert (
        one(validate_config(BROKER_DEFAULT, {"log.retention.hours": "1"}))
        == f"log.retention.hours {READ_ONLY}"
    )


# --------------------------------------------------------------------------------------------
# changed, cross-field rules
# --------------------------------------------------------------------------------------------


def test_changed_limits_per_key_checks() -> None:
    stored = {"retention.ms": "-5", "bogus.key": "1"}
    config = {**stored, "segment.ms": "1000"}
    assert validate_config(TOPIC, config, changed=["segment.ms"]) == []
    assert one(validate_config(TOPIC, config, changed=["segment.ms", "retention.ms"])).startswith(
        "retention.ms:"
    )
    assert len(validate_config(TOPIC, config)) == 2
    # A deleted key (in changed, no longer in the config) has nothing to check.
    assert validate_config(TOPIC, {"segment.ms": "1000"}, changed=["retention.ms"]) == []
    # Read-only keys already stored in a broker config don't block an unrelated change.
    assert (
        validate_config(
            BROKER, {"log.dirs": "/x", "log.cleaner.threads": "2"}, changed=["log.cleaner.threads"]
        )
        == []
    )


def test_cross_field_rules_always_run_on_the_full_config() -> None:
    config = {"min.compaction.lag.ms": "10000", "max.compaction.lag.ms": "5000", "segment.ms": "1000"}
    problem = "min.compaction.lag.ms (10000) must not be greater than max.compaction.lag.ms (5000)"
    assert validate_config(TOPIC, config) == [problem]
    assert validate_config(TOPIC, config, changed=["segment.ms"]) == [problem]
    assert validate_config(TOPIC, {"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "5000"}) == []
    # An unset side resolves from the broker's config, which validation cannot see: not checked.
    assert validate_config(TOPIC, {"min.compaction.lag.ms": "10000"}) == []
    # An unparseable side is reported once, by the per-key check, not again by the rule.
    assert len(validate_config(TOPIC, {"min.compaction.lag.ms": "x", "max.compaction.lag.ms": "5"})) == 1


@pytest.mark.parametrize(
    ("config", "problems"),
    [
        ({"remote.storage.enable": "true"}, []),
        ({"remote.storage.enable": "true", "cleanup.policy": "delete"}, []),
        (
            {"remote.storage.enable": "true", "cleanup.policy": "compact,delete"},
            [
                "remote.storage.enable=true needs a cleanup.policy without compact "
                "(cleanup.policy is 'compact,delete')"
            ],
        ),
        ({"remote.storage.enable": "false", "cleanup.policy": "compact"}, []),
        ({"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "500"}, []),
        ({"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "1000"}, []),
        ({"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "-2"}, []),
        ({"remote.storage.enable": "true", "retention.ms": "-1", "local.retention.ms": "5000"}, []),
        ({"remote.storage.enable": "false", "retention.ms": "1000", "local.retention.ms": "5000"}, []),
        (
            {"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "5000"},
            [
                "local.retention.ms (5000) must not be greater than retention.ms (1000) when remote.storage.enable=true"
            ],
        ),
        (
            {"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "-1"},
            [
                "local.retention.ms must be -2 or between 0 and retention.ms (1000) when "
                "remote.storage.enable=true, not -1"
            ],
        ),
        ({"remote.storage.enable": "true", "retention.bytes": "-1", "local.retention.bytes": "5000"}, []),
        ({"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "0"}, []),
        (
            {"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "101"},
            [
                "local.retention.bytes (101) must not be greater than retention.bytes (100) "
                "when remote.storage.enable=true"
            ],
        ),
        (
            {"remote.storage.enable": "TRUE", "retention.bytes": "100", "local.retention.bytes": "-1"},
            [
                "local.retention.bytes must be -2 or between 0 and retention.bytes (100) when "
                "remote.storage.enable=true, not -1"
            ],
        ),
    ],
)
def test_remote_storage_rules(config: dict[str, str], problems: list[str]) -> None:
    assert validate_config(TOPIC, config) == problems


# --------------------------------------------------------------------------------------------
# normalize_value (desired-state files)
# --------------------------------------------------------------------------------------------

RETENTION = key(EntityType.TOPICS, "retention.ms")
RATIO = key(EntityType.TOPICS, "min.cleanable.dirty.ratio")


@pytest.mark.parametrize(
    ("config_key", "value", "expected"),
    [
        (RETENTION, 86400000, "86400000"),
        (RETENTION, "86400000", "86400000"),
        (RETENTION, 10**20, "100000000000000000000"),
        (RETENTION, 1e9, "1000000000"),  # a whole float for an integer key: plain digits
        (RETENTION, -1, "-1"),
        (BOOLEAN, True, "true"),
        (BOOLEAN, False, "false"),
        (LIST, ["compact", "delete"], "compact,delete"),
        (LIST, ("compact",), "compact"),
        (LIST, [], ""),
        (LIST, "compact,delete", "compact,delete"),
        (
            key(EntityType.BROKERS, "listeners"),
            ["PLAINTEXT://:9092", "SSL://:9093"],
            "PLAINTEXT://:9092,SSL://:9093",
        ),
        (RATIO, 0.5, "0.5"),
        (RATIO, 1, "1"),
        (DOUBLE, 2147483647.0, "2.147483647E9"),
        (DOUBLE, 100.0, "100.0"),
        (DOUBLE, 1234567.0, "1234567.0"),
        (DOUBLE, 1e7, "1.0E7"),
        (DOUBLE, 0.001, "0.001"),
        (DOUBLE, 1e-4, "1.0E-4"),
        (DOUBLE, 1.5e300, "1.5E300"),
        (DOUBLE, -2.5, "-2.5"),
        (DOUBLE, 0.0, "0.0"),
        (DOUBLE, -0.0, "-0.0"),
        (DOUBLE, math.inf, "Infinity"),
        (None, 5, "5"),
        (None, 0.25, "0.25"),
        (None, "anything goes", "anything goes"),
        (None, "", ""),
    ],
)
def test_normalize_value(config_key: ConfigKey | None, value: Any, expected: str) -> None:
    assert normalize_value(config_key, value) == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"a": 1}, "a mapping is not a config value"),
        ([["a"]], "nested lists or mappings"),
        ([{"a": 1}], "nested lists or mappings"),
        (["a,b"], "must not contain a comma"),
        (None, "has no value"),
        (math.nan, "NaN"),
        (datetime.date(2024, 1, 1), "a date is not a config value"),
        (b"bytes", "a bytes is not a config value"),
    ],
)
def test_normalize_value_refuses(value: Any, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(fragment)) as caught:
        normalize_value(RETENTION, value)
    assert str(caught.value).startswith("retention.ms: ")
    with pytest.raises(InvalidInput, match=r"^my\.key: "):
        normalize_value(None, value, name="my.key")


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_normalized_doubles_parse_back_exactly(number: float) -> None:
    text = normalize_value(DOUBLE, number)
    assert re.fullmatch(r"-?[0-9]+\.[0-9]+(E-?[0-9]+)?", text), text
    assert coerce(DOUBLE, text) == (number, None)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_normalized_longs_parse_back_exactly(number: int) -> None:
    assert coerce(RETENTION, normalize_value(RETENTION, number)) == (number, None)


@given(st.lists(st.sampled_from(["compact", "delete"]), max_size=3))
def test_normalized_lists_parse_back(items: list[str]) -> None:
    assert coerce(LIST, normalize_value(LIST, items)) == (items, None)


# --------------------------------------------------------------------------------------------
# Speed
# --------------------------------------------------------------------------------------------


def test_a_full_topic_config_validates_fast() -> None:
    config = {name: k.default for name, k in catalogue.keys(EntityType.TOPICS).items()}
    validate_config(TOPIC, config)  # compile and cache the validators
    rounds = 200
    start = time.perf_counter()
    for _ in range(rounds):
        validate_config(TOPIC, config)
    per_call = (time.perf_counter() - start) / rounds
    # About 0.17 ms on the 2-core build machine; the bound leaves room for a busy machine.
    assert per_call < 0.005, f"{per_call * 1000:.2f} ms per 36-key topic config"


# The listener's admission of whole configs (topics, quotas, IPs) remembers each (key, value)
# check; what it finds must be validate_config's answer, the first time and from memory.

_ADMITTED_KEYS = [
    "retention.ms",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "remote.storage.enable",
    "cleanup.policy",
    "local.retention.ms",
    "segment.bytes",
    "no.such.key",
]
_ADMITTED_VALUES = [
    "-2",
    "-1",
    "0",
    "1",
    "100",
    "x",
    "true",
    "compact",
    "delete",
    " 7 ",
    "99999999999999999999",
]


@given(
    st.sampled_from(["topics/orders", "topics/other", "ips/10.0.0.1"]),  # the families that remember
    st.dictionaries(
        st.sampled_from([*_ADMITTED_KEYS, "connection_creation_rate"]),
        st.sampled_from(_ADMITTED_VALUES),
        max_size=4,
    ),
)
@example("topics/orders", {"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "1"})
@example("topics/orders", {"remote.storage.enable": "true", "cleanup.policy": "compact"})
@example("topics/orders", {"remote.storage.enable": "true", "local.retention.ms": "100", "retention.ms": "1"})
@example("topics/orders", {"retention.ms": "x", "no.such.key": "1"})
def test_remembered_admission_finds_what_validate_config_finds(path, config):
    from configctl.handlers.whole import _problems

    entity = Entity.from_path(path)
    expected = validate_config(entity, config)
    assert _problems(entity, config, memo=True) == expected
    assert _problems(entity, config, memo=True) == expected  # from memory


@given(
    st.dictionaries(
        st.sampled_from(sorted(catalogue.keys(EntityType.TOPICS))),
        st.sampled_from(["-2", "-1", "0", "1", "100", "true", "false", "compact", "delete,compact", "x"]),
        max_size=5,
    )
)
@example({"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "1"})
@example({"remote.storage.enable": "true", "cleanup.policy": "compact"})
@example({"local.retention.ms": "100", "retention.ms": "1", "cleanup.policy": "compact"})
def test_a_topic_config_without_rule_keys_breaks_no_rule(config):
    """The topic handler skips Kafka's rules between keys for a config without any of its rule
    keys: only when the rules themselves find nothing there."""
    from configctl import crosskey
    from configctl.handlers import handler_for

    assert handler_for(EntityType.TOPICS).own_rules(config) == crosskey.topic_problems(config)
