"""Precedence: effective values, their sources and synonyms, for brokers, topics, quotas and IPs."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from configctl import catalogue
from configctl.entities import EntityType
from configctl.entitylevels import quota_paths, resolve_ip, resolve_quotas
from configctl.errors import InvalidInput
from configctl.precedence import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    MASK,
    STATIC_BROKER_CONFIG,
    BrokerValues,
    EffectiveValue,
    Synonym,
    resolve_broker,
    resolve_topic,
)
from configctl.values import kafka_text

pytestmark = pytest.mark.unit

LAYER_SOURCES = (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG)
BROKER_KEYS = catalogue.keys(EntityType.BROKERS)
TOPIC_KEYS = catalogue.keys(EntityType.TOPICS)


def broker(per_broker=None, cluster_default=None, static=None, broker_id=1):
    return resolve_broker(broker_id, per_broker or {}, cluster_default or {}, static or {})


def effective(name, per_broker=None, cluster_default=None, static=None) -> EffectiveValue:
    return broker(per_broker, cluster_default, static).values[name]


def syn(name, value, source):
    return Synonym(name, value, source)


# ----------------------------------------------------------------------------------------------
# Broker: one plain key through every combination of layers
# ----------------------------------------------------------------------------------------------

PLAIN = "message.max.bytes"
PLAIN_DEFAULT = BROKER_KEYS[PLAIN].default


@pytest.mark.parametrize("present", list(itertools.product([False, True], repeat=3)))
def test_plain_key_every_layer_combination(present):
    layers = [{PLAIN: str(1001 + i)} if on else {} for i, on in enumerate(present)]
    result = effective(PLAIN, *layers)
    expected_synonyms = [
        syn(PLAIN, str(1001 + i), LAYER_SOURCES[i]) for i, on in enumerate(present) if on
    ] + [syn(PLAIN, PLAIN_DEFAULT, DEFAULT_CONFIG)]
    assert list(result.synonyms) == expected_synonyms
    assert (result.value, result.source) == (expected_synonyms[0].value, expected_synonyms[0].source)
    assert result.name == PLAIN and result.sensitive is False


def test_every_catalogue_key_is_present_with_its_default_when_nothing_is_set():
    values = broker().values
    # A broker reports every KafkaConfig setting; the broker-only replication throttles are
    # dynamic configs outside KafkaConfig, listed only while a layer sets them.
    dynamic_only = {name for name, facts in BROKER_KEYS.items() if facts.dynamic_only}
    assert dynamic_only == {
        "follower.replication.throttled.rate",
        "leader.replication.throttled.rate",
        "replica.alter.log.dirs.io.max.bytes.per.second",
    }
    assert set(BROKER_KEYS) - dynamic_only <= set(values) and not dynamic_only & set(values)
    for name, facts in BROKER_KEYS.items():
        if facts.dynamic_only:
            continue
        result = values[name]
        assert result.source == DEFAULT_CONFIG
        assert result.value == facts.default  # its own default, even where a synonym has one
        if len(facts.synonyms) <= 1:
            assert result.synonyms == (
                () if facts.default is None else (syn(name, facts.default, DEFAULT_CONFIG),)
            )


def test_a_throttle_rate_is_listed_once_a_layer_sets_it():
    values = broker({"leader.replication.throttled.rate": "1000"}).values
    rate = values["leader.replication.throttled.rate"]
    assert (rate.value, rate.source) == ("1000", DYNAMIC_BROKER_CONFIG)
    assert "follower.replication.throttled.rate" not in values


def test_null_default_and_nothing_set_is_none():
    result = effective("advertised.listeners")
    assert BROKER_KEYS["advertised.listeners"].default is None
    assert (result.value, result.source, result.synonyms) == (None, DEFAULT_CONFIG, ())
    assert result.to_json()["value"] is None


def test_broker_values_is_a_read_only_mapping():
    values = broker(static={PLAIN: "5"}).values
    assert isinstance(values, BrokerValues)
    assert PLAIN in values and values.get("no.such.key") is None and len(values) == len(list(values))
    with pytest.raises(TypeError):
        values[PLAIN] = None  # type: ignore[index]


# ----------------------------------------------------------------------------------------------
# Broker synonyms and unit conversion
# ----------------------------------------------------------------------------------------------


# Kafka 3.9 reports each key's *own* value (KafkaConfig keeps the winning layer's synonyms and
# drops the others) and only the synonyms from its own name on (ConfigHelper's dropWhile). What a
# topic inherits is KafkaConfig's derived value (ms, else minutes, else hours). Each rule below is
# what real brokers report in tests/kafka.


def test_static_retention_hours_is_reported_by_hours_alone():
    values = broker(static={"log.retention.hours": "24"}).values
    hours = (
        syn("log.retention.hours", "24", STATIC_BROKER_CONFIG),
        syn("log.retention.hours", "168", DEFAULT_CONFIG),
    )
    assert values["log.retention.hours"] == EffectiveValue(
        "log.retention.hours", "24", STATIC_BROKER_CONFIG, hours, False
    )
    # ms and minutes have no default of their own, and no synonym of their own name is set.
    for name in ("log.retention.ms", "log.retention.minutes"):
        assert values[name] == EffectiveValue(name, None, DEFAULT_CONFIG, (), False)
    # A topic inherits the derived value.
    topic = resolve_topic("t", {}, values)["retention.ms"]
    assert (topic.value, topic.source, topic.synonyms) == ("86400000", DEFAULT_CONFIG, ())


def test_retention_defaults_come_from_hours():
    values = broker().values
    assert values["log.retention.ms"].value is None
    assert values["log.retention.minutes"].value is None
    assert values["log.retention.hours"].value == "168"
    assert values["log.retention.ms"].synonyms == ()
    assert values["log.retention.hours"].synonyms == (syn("log.retention.hours", "168", DEFAULT_CONFIG),)
    assert resolve_topic("t", {}, values)["retention.ms"].value == "604800000"


def test_within_a_layer_ms_beats_minutes_beats_hours():
    static = {"log.retention.hours": "24", "log.retention.minutes": "30"}
    assert resolve_topic("t", {}, broker(static=static).values)["retention.ms"].value == "1800000"
    minutes = effective("log.retention.minutes", static=static)
    assert (minutes.value, minutes.source) == ("30", STATIC_BROKER_CONFIG)
    static["log.retention.ms"] = "1234"
    result = effective("log.retention.ms", static=static)
    assert result.value == "1234"
    assert result.synonyms == (
        syn("log.retention.ms", "1234", STATIC_BROKER_CONFIG),
        syn("log.retention.minutes", "30", STATIC_BROKER_CONFIG),
        syn("log.retention.hours", "24", STATIC_BROKER_CONFIG),
        syn("log.retention.hours", "168", DEFAULT_CONFIG),
    )
    assert resolve_topic("t", {}, broker(static=static).values)["retention.ms"].value == "1234"


def test_each_higher_layer_hides_every_synonym_below():
    static = {"log.retention.hours": "24", "log.retention.minutes": "30"}
    cluster_default = {"log.retention.ms": "5000"}
    per_broker = {"log.retention.ms": "1000"}
    full = (
        syn("log.retention.ms", "1000", DYNAMIC_BROKER_CONFIG),
        syn("log.retention.ms", "5000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        syn("log.retention.minutes", "30", STATIC_BROKER_CONFIG),
        syn("log.retention.hours", "24", STATIC_BROKER_CONFIG),
        syn("log.retention.hours", "168", DEFAULT_CONFIG),
    )
    top = effective("log.retention.ms", per_broker, cluster_default, static)
    assert (top.value, top.source, top.synonyms) == ("1000", DYNAMIC_BROKER_CONFIG, full)
    middle = effective("log.retention.ms", None, cluster_default, static)
    assert (middle.value, middle.source, middle.synonyms) == ("5000", DYNAMIC_DEFAULT_BROKER_CONFIG, full[1:])
    low = effective("log.retention.minutes", None, None, static)
    assert (low.value, low.source, low.synonyms) == ("30", STATIC_BROKER_CONFIG, full[2:])
    # ms in a dynamic layer removed minutes and hours from the static layer: each reports its
    # own built-in default (none for minutes), while still listing the static synonyms it had.
    values = broker(per_broker, cluster_default, static).values
    minutes, hours = values["log.retention.minutes"], values["log.retention.hours"]
    assert (minutes.value, minutes.source, minutes.synonyms) == (None, STATIC_BROKER_CONFIG, full[2:])
    assert (hours.value, hours.source, hours.synonyms) == ("168", STATIC_BROKER_CONFIG, full[3:])
    assert resolve_topic("t", {}, values)["retention.ms"].value == "1000"


def test_dynamic_secondary_retention_synonyms_are_read_only_and_ignored():
    # log.retention.minutes/.hours are not dynamic in Kafka: a stored value is dropped on load.
    result = broker(
        {"log.retention.hours": "1"}, {"log.retention.minutes": "30"}, {"log.retention.hours": "24"}
    )
    assert result.values["log.retention.hours"].value == "24"
    assert result.values["log.retention.hours"].source == STATIC_BROKER_CONFIG
    assert resolve_topic("t", {}, result.values)["retention.ms"].value == "86400000"
    assert {(i.entity_path, i.name) for i in result.ignored} == {
        ("brokers/1", "log.retention.hours"),
        ("brokers/<default>", "log.retention.minutes"),
    }
    assert all("is read-only" in i.reason for i in result.ignored)
    assert all(
        s.source != DYNAMIC_DEFAULT_BROKER_CONFIG for s in result.values["log.retention.hours"].synonyms
    )


def test_a_dynamic_ms_leaves_the_coarser_keys_at_their_own_defaults():
    values = broker({"log.retention.ms": "5400000"}).values
    assert values["log.retention.minutes"].value is None
    assert values["log.retention.hours"].value == "168"
    assert resolve_topic("t", {}, values)["retention.ms"].value == "5400000"


@pytest.mark.parametrize("sentinel", ["-1", "-2", "-60"])
def test_negative_sentinels_are_kept(sentinel):
    values = broker(static={"log.retention.hours": sentinel}).values
    assert values["log.retention.hours"].value == sentinel
    assert resolve_topic("t", {}, values)["retention.ms"].value == sentinel


def test_log_roll_ms_and_hours():
    values = broker().values
    assert (values["log.roll.ms"].value, values["log.roll.ms"].source) == (None, DEFAULT_CONFIG)
    assert resolve_topic("t", {}, values)["segment.ms"].value == "604800000"
    values = broker(static={"log.roll.hours": "2"}).values
    assert (values["log.roll.ms"].value, values["log.roll.ms"].source) == (None, DEFAULT_CONFIG)
    assert (values["log.roll.hours"].value, values["log.roll.hours"].source) == ("2", STATIC_BROKER_CONFIG)
    assert resolve_topic("t", {}, values)["segment.ms"].value == "7200000"
    values = broker({"log.roll.ms": "1000"}, None, {"log.roll.hours": "2"}).values
    assert values["log.roll.ms"].synonyms == (
        syn("log.roll.ms", "1000", DYNAMIC_BROKER_CONFIG),
        syn("log.roll.hours", "2", STATIC_BROKER_CONFIG),
        syn("log.roll.hours", "168", DEFAULT_CONFIG),
    )
    assert (values["log.roll.ms"].value, values["log.roll.hours"].value) == ("1000", "168")
    assert values["log.roll.hours"].source == STATIC_BROKER_CONFIG


def test_log_roll_jitter_ms_and_hours():
    def segment_jitter(*layers):
        return resolve_topic("t", {}, broker(*layers).values)["segment.jitter.ms"].value

    assert effective("log.roll.jitter.ms").value is None
    assert segment_jitter() == "0"
    assert segment_jitter(None, None, {"log.roll.jitter.hours": "1"}) == "3600000"
    assert segment_jitter(None, {"log.roll.jitter.ms": "7"}, {"log.roll.jitter.hours": "1"}) == "7"


def test_log_flush_interval_falls_back_to_scheduler_interval():
    values = broker().values
    top = values["log.flush.interval.ms"]
    assert (top.value, top.source, top.synonyms) == (None, DEFAULT_CONFIG, ())
    assert resolve_topic("t", {}, values)["flush.ms"].value == "9223372036854775807"

    values = broker(static={"log.flush.scheduler.interval.ms": "3000"}).values
    assert values["log.flush.interval.ms"].value is None
    assert values["log.flush.scheduler.interval.ms"].synonyms == (
        syn("log.flush.scheduler.interval.ms", "3000", STATIC_BROKER_CONFIG),
        syn("log.flush.scheduler.interval.ms", "9223372036854775807", DEFAULT_CONFIG),
    )
    assert resolve_topic("t", {}, values)["flush.ms"].value == "3000"

    values = broker(None, {"log.flush.interval.ms": "10"}, {"log.flush.scheduler.interval.ms": "3000"}).values
    assert (values["log.flush.interval.ms"].value, values["log.flush.interval.ms"].source) == (
        "10",
        DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    # log.flush.interval.ms removed the scheduler interval from server.properties when Kafka
    # merged the layers (its built-in default stands); the scheduler does not remove it back.
    assert values["log.flush.scheduler.interval.ms"].value == "9223372036854775807"
    values = broker(None, {"log.flush.scheduler.interval.ms": "20"}, {"log.flush.interval.ms": "10"}).values
    assert values["log.flush.interval.ms"].value == "10"


# ----------------------------------------------------------------------------------------------
# Broker: values Kafka drops from the dynamic layers
# ----------------------------------------------------------------------------------------------

# The reason is the sentence the write side refuses the same key with (configctl.validation).
REASON_READ_ONLY = "is read-only: set it in server.properties"
REASON_PER_BROKER_AT_DEFAULT = "can only be set per broker (brokers/<id>), not at brokers/<default>"
REASON_NEEDS_LISTENER_PREFIX = "can only be updated per listener"
REASON_PASSWORD_AT_DEFAULT = "is a password config: it can only be set per broker"

IGNORED_CASES = [
    # (layer, key, value, reason or None when it takes effect)
    ("per_broker", "broker.id", "7", REASON_READ_ONLY),
    ("cluster_default", "broker.id", "7", REASON_READ_ONLY),
    ("per_broker", "log.flush.scheduler.interval.ms", "5", REASON_READ_ONLY),
    ("cluster_default", "listeners", "PLAINTEXT://:9093", REASON_PER_BROKER_AT_DEFAULT),
    ("per_broker", "listeners", "PLAINTEXT://:9093", None),
    ("cluster_default", "ssl.keystore.location", "/k", REASON_NEEDS_LISTENER_PREFIX),
    ("per_broker", "ssl.keystore.location", "/k", REASON_NEEDS_LISTENER_PREFIX),
    ("per_broker", "ssl.keystore.password", "pw", REASON_NEEDS_LISTENER_PREFIX),
    ("cluster_default", "listener.name.internal.ssl.keystore.location", "/k", REASON_PER_BROKER_AT_DEFAULT),
    ("per_broker", "listener.name.internal.ssl.keystore.location", "/k", None),
    ("cluster_default", "listener.name.internal.max.connections", "5", None),
    ("cluster_default", "listener.name.internal.plain.sasl.jaas.config", "x", REASON_PER_BROKER_AT_DEFAULT),
    ("cluster_default", "custom.ssl.truststore.password", "pw", REASON_PASSWORD_AT_DEFAULT),
    ("per_broker", "custom.ssl.truststore.password", "pw", None),
    ("cluster_default", "num.io.threads", "abc", "is not a valid int"),
    ("per_broker", "num.network.threads", "0", "is less than the minimum 1"),
    ("per_broker", "num.io.threads", " 12 ", None),
    ("cluster_default", "message.max.bytes", "99999999999", "is out of range for an int"),
    ("cluster_default", "unclean.leader.election.enable", "yes", "is not a valid boolean"),
    ("cluster_default", "unclean.leader.election.enable", "TRUE", None),
    ("per_broker", "log.cleaner.min.cleanable.ratio", "1.5", "is greater than the maximum 1"),
    ("per_broker", "log.cleaner.min.cleanable.ratio", "0.25", None),
    # Java's Double.parseDouble reads these, so every reader takes them as the write side does
    ("per_broker", "log.cleaner.min.cleanable.ratio", "0.5d", None),
    ("per_broker", "log.cleaner.min.cleanable.ratio", "0x1p-1", None),
    ("per_broker", "log.cleaner.min.cleanable.ratio", "NaN", "NaN is not a number"),
    ("per_broker", "log.retention.ms", "1_000", "is not a valid long"),
]


@pytest.mark.parametrize(("layer", "name", "value", "reason"), IGNORED_CASES)
def test_dynamic_values_kafka_drops_are_ignored_and_reported(layer, name, value, reason):
    result = resolve_broker(
        3, **{"per_broker": {}, "cluster_default": {}, "static": {}, layer: {name: value}}
    )
    path = "brokers/3" if layer == "per_broker" else "brokers/<default>"
    source = DYNAMIC_BROKER_CONFIG if layer == "per_broker" else DYNAMIC_DEFAULT_BROKER_CONFIG
    if reason is None:
        assert result.ignored == ()
        # reported as Kafka writes the parsed value back (" 12 " -> "12", TRUE -> true, 0x1p-1 -> 0.5)
        facts = catalogue.lookup(EntityType.BROKERS, name)
        shown = kafka_text(facts.kafka_type if facts else None, value)
        assert (result.values[name].value, result.values[name].source) == (shown, source)
    else:
        ((ignored_path, ignored_name, why),) = [(i.entity_path, i.name, i.reason) for i in result.ignored]
        assert (ignored_path, ignored_name) == (path, name) and reason in why, why
        got = result.values.get(name)
        assert got is None or got.source == DEFAULT_CONFIG
        assert all(s.source != source for v in result.values.values() for s in v.synonyms)


def test_ignored_values_leave_lower_layers_in_force():
    result = broker(
        {"broker.id": "7"}, {"listeners": "PLAINTEXT://:1"}, {"broker.id": "2", "listeners": "PLAINTEXT://:2"}
    )
    assert result.values["broker.id"] == EffectiveValue(
        "broker.id",
        "2",
        STATIC_BROKER_CONFIG,
        (syn("broker.id", "2", STATIC_BROKER_CONFIG), syn("broker.id", "-1", DEFAULT_CONFIG)),
        False,
    )
    assert result.values["listeners"].value == "PLAINTEXT://:2"
    assert len(result.ignored) == 2


def test_static_layer_is_never_screened():
    result = broker(static={"broker.id": "4", "ssl.keystore.location": "/k", "num.io.threads": "abc"})
    assert result.ignored == ()
    assert result.values["broker.id"].value == "4"
    assert result.values["ssl.keystore.location"].value == "/k"
    assert result.values["num.io.threads"].value == "abc"


# ----------------------------------------------------------------------------------------------
# Broker: custom and listener-prefixed keys
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layer", "source"), list(zip(("per_broker", "cluster_default", "static"), LAYER_SOURCES, strict=True))
)
def test_custom_key_carries_its_layer_source(layer, source):
    result = resolve_broker(
        1, **{"per_broker": {}, "cluster_default": {}, "static": {}, layer: {"my.plugin.x": "v"}}
    )
    assert result.values["my.plugin.x"] == EffectiveValue(
        "my.plugin.x", "v", source, (syn("my.plugin.x", "v", source),), False
    )


def test_custom_key_in_two_layers_and_absent_custom_keys():
    values = broker(None, {"my.plugin.x": "hi"}, {"my.plugin.x": "lo"}).values
    assert values["my.plugin.x"].value == "hi"
    assert values["my.plugin.x"].synonyms == (
        syn("my.plugin.x", "hi", DYNAMIC_DEFAULT_BROKER_CONFIG),
        syn("my.plugin.x", "lo", STATIC_BROKER_CONFIG),
    )
    assert "my.plugin.x" not in broker().values


def test_listener_prefixed_value_beats_the_base_in_the_same_layer():
    values = broker(static={"listener.name.internal.max.connections": "50", "max.connections": "100"}).values
    prefixed = values["listener.name.internal.max.connections"]
    assert (prefixed.value, prefixed.source) == ("50", STATIC_BROKER_CONFIG)
    assert prefixed.synonyms == (
        syn("listener.name.internal.max.connections", "50", STATIC_BROKER_CONFIG),
        syn("max.connections", "100", STATIC_BROKER_CONFIG),
        syn("max.connections", "2147483647", DEFAULT_CONFIG),
    )
    # The base key itself does not see listener overrides.
    assert values["max.connections"].value == "100"
    assert [s.name for s in values["max.connections"].synonyms] == ["max.connections", "max.connections"]


def test_a_base_key_in_a_higher_layer_does_not_remove_a_listener_override_below():
    # Kafka merges the layers without matching listener overrides: the static override stays.
    values = broker(None, {"max.connections": "7"}, {"listener.name.internal.max.connections": "50"}).values
    prefixed = values["listener.name.internal.max.connections"]
    assert (prefixed.value, prefixed.source) == ("50", STATIC_BROKER_CONFIG)
    assert [s.source for s in prefixed.synonyms] == [STATIC_BROKER_CONFIG, DEFAULT_CONFIG]
    assert values["max.connections"].value == "7"


def test_listener_mechanism_prefixed_password_is_sensitive_and_uses_its_base():
    name = "listener.name.sasl_ssl.plain.sasl.jaas.config"
    values = broker({name: "secret"}, None, {"sasl.jaas.config": "base-secret"}).values
    result = values[name]
    assert (result.value, result.source, result.sensitive) == ("secret", DYNAMIC_BROKER_CONFIG, True)
    assert [s.name for s in result.synonyms] == [name, "sasl.jaas.config"]
    shown = result.to_json()
    assert shown["value"] == MASK and {s["value"] for s in shown["synonyms"]} == {MASK}


def test_unset_listener_prefix_only_from_the_base_is_not_listed():
    assert not any(k.startswith("listener.name.") for k in broker(static={"max.connections": "1"}).values)


# ----------------------------------------------------------------------------------------------
# Topics
# ----------------------------------------------------------------------------------------------

NO_BROKER_SYNONYM = {
    "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas",
    "remote.log.copy.disable",
    "remote.log.delete.on.disable",
    "remote.storage.enable",
}
FACTORS = {"identity": 1, "minutes_to_ms": 60_000, "hours_to_ms": 3_600_000}
TOPIC_CHAIN = [
    (topic_key, server_key, conversion)
    for topic_key, facts in TOPIC_KEYS.items()
    for server_key, conversion in facts.broker_synonyms
]


def test_topic_catalogue_shape():
    assert len(TOPIC_KEYS) == 36
    assert {k for k, f in TOPIC_KEYS.items() if not f.broker_synonyms} == NO_BROKER_SYNONYM


def _sample(server_key: str) -> str:
    """A value of the server key's type that Kafka would accept dynamically (type and range)."""
    kafka_type = BROKER_KEYS[server_key].kafka_type
    if kafka_type in ("int", "long", "short"):
        minimum = catalogue.schema(EntityType.BROKERS)["properties"][server_key].get("minimum", 0)
        return str(max(7, minimum))
    prop = catalogue.schema(EntityType.BROKERS)["properties"][server_key]
    choices = prop.get("enum") or prop.get("items", {}).get("enum")
    if choices:  # Kafka drops a value its validator refuses: pick a valid one that is not the default
        return next(str(c) for c in reversed(choices))
    return {"double": "0.25", "boolean": "true"}.get(kafka_type, "x-test")


# Server keys go in server.properties, and in brokers/<default> when Kafka allows them there.
TOPIC_CHAIN_LAYERS = [
    (layer, *case)
    for case in TOPIC_CHAIN
    for layer in ("cluster_default", "static")
    if layer == "static" or BROKER_KEYS[case[1]].update_mode == "cluster-wide"
]


@pytest.mark.parametrize(("layer", "topic_key", "server_key", "conversion"), TOPIC_CHAIN_LAYERS)
def test_topic_key_follows_each_broker_synonym(layer, topic_key, server_key, conversion):
    raw = _sample(server_key)
    source = DYNAMIC_DEFAULT_BROKER_CONFIG if layer == "cluster_default" else STATIC_BROKER_CONFIG
    values = resolve_broker(
        1, **{"per_broker": {}, "cluster_default": {}, "static": {}, layer: {server_key: raw}}
    ).values
    result = resolve_topic("orders", {}, values)[topic_key]
    expected = str(int(raw) * FACTORS[conversion]) if conversion != "identity" else raw
    if server_key == TOPIC_KEYS[topic_key].broker_synonyms[0][0]:
        assert (result.value, result.source) == (
            kafka_text(BROKER_KEYS[server_key].kafka_type, expected),
            source,
        )
        assert result.synonyms[0] == syn(server_key, raw, source)
    else:
        # Kafka lists a topic key's synonyms from its primary server key on (dropWhile): a
        # secondary one (log.retention.hours for retention.ms) gives the value but no source.
        assert (result.value, result.source, result.synonyms) == (expected, DEFAULT_CONFIG, ())
    # Overriding the topic beats the broker value and lists the override first.
    top = resolve_topic("orders", {topic_key: "override"}, values)[topic_key]
    assert (top.value, top.source) == ("override", DYNAMIC_TOPIC_CONFIG)
    assert top.synonyms == (syn(topic_key, "override", DYNAMIC_TOPIC_CONFIG), *result.synonyms)


@pytest.mark.parametrize("topic_key", sorted(TOPIC_KEYS))
def test_every_topic_key_with_nothing_set_is_the_default(topic_key):
    result = resolve_topic("orders", {}, broker().values)[topic_key]
    assert result.value == TOPIC_KEYS[topic_key].default
    assert result.source == DEFAULT_CONFIG


@pytest.mark.parametrize("topic_key", sorted(TOPIC_KEYS))
def test_every_topic_override_wins(topic_key):
    values = broker(
        {"log.retention.ms": "1"}, {"log.cleanup.policy": "compact"}, {"log.roll.hours": "1"}
    ).values
    result = resolve_topic("orders", {topic_key: "v"}, values)[topic_key]
    assert (result.value, result.source, result.synonyms[0]) == (
        "v",
        DYNAMIC_TOPIC_CONFIG,
        syn(topic_key, "v", DYNAMIC_TOPIC_CONFIG),
    )


@pytest.mark.parametrize("topic_key", sorted(NO_BROKER_SYNONYM))
def test_topic_keys_without_broker_synonym(topic_key):
    values = broker(static={"remote.log.storage.system.enable": "true"}).values
    result = resolve_topic("orders", {}, values)[topic_key]
    assert (result.value, result.source, result.synonyms) == (
        TOPIC_KEYS[topic_key].default,
        DEFAULT_CONFIG,
        (),
    )
    over = resolve_topic("orders", {topic_key: "true"}, values)[topic_key]
    assert (over.value, over.source, over.synonyms) == (
        "true",
        DYNAMIC_TOPIC_CONFIG,
        (syn(topic_key, "true", DYNAMIC_TOPIC_CONFIG),),
    )


def test_topic_retention_chain_with_every_layer():
    values = broker(
        {"log.retention.ms": "1000"}, {"log.retention.ms": "5000"}, {"log.retention.hours": "24"}
    ).values
    result = resolve_topic("orders", {}, values)["retention.ms"]
    assert (result.value, result.source) == ("1000", DYNAMIC_BROKER_CONFIG)
    assert result.synonyms == (
        syn("log.retention.ms", "1000", DYNAMIC_BROKER_CONFIG),
        syn("log.retention.ms", "5000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        syn("log.retention.hours", "24", STATIC_BROKER_CONFIG),
        syn("log.retention.hours", "168", DEFAULT_CONFIG),
    )
    static_only = resolve_topic("orders", {}, broker(static={"log.retention.minutes": "2"}).values)[
        "retention.ms"
    ]
    assert (static_only.value, static_only.source) == ("120000", DEFAULT_CONFIG)


def test_topic_resolution_with_a_plain_dict_matches_and_fallbacks_are_shared():
    values = broker(None, {"log.cleanup.policy": "compact"}, {"log.roll.hours": "3"}).values
    assert resolve_topic("a", {"retention.ms": "9"}, dict(values)) == resolve_topic(
        "a", {"retention.ms": "9"}, values
    )
    assert values.topic_fallbacks() is values.topic_fallbacks()
    first = resolve_topic("a", {}, values)
    first["segment.ms"] = None  # callers get their own dict
    assert resolve_topic("b", {}, values)["segment.ms"].value == "10800000"


def test_unknown_topic_override_is_reported_as_set():
    result = resolve_topic("orders", {"no.such.config": "1"}, broker().values)["no.such.config"]
    assert (result.value, result.source) == ("1", DYNAMIC_TOPIC_CONFIG)


# ----------------------------------------------------------------------------------------------
# Quotas
# ----------------------------------------------------------------------------------------------

USER, CLIENT = "User:alice", "app 1"
U, C = "User%3Aalice", "app%201"
LEVELS = [
    f"users/{U}/clients/{C}",
    f"users/{U}/clients/<default>",
    f"users/{U}",
    f"users/<default>/clients/{C}",
    "users/<default>/clients/<default>",
    "users/<default>",
    f"clients/{C}",
    "clients/<default>",
]
QUOTA = "producer_byte_rate"
QUOTA_DEFAULT = catalogue.keys(EntityType.CLIENTS)[QUOTA].default


def test_quota_paths_are_sanitized_and_ordered():
    assert quota_paths(USER, CLIENT) == LEVELS


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_each_quota_level_beats_every_lower_level(level):
    configs = {path: {QUOTA: str(100 + i)} for i, path in enumerate(LEVELS) if i >= level}
    result = resolve_quotas(USER, CLIENT, configs)[QUOTA]
    assert (result.value, result.source) == (str(100 + level), LEVELS[level])
    assert result.synonyms == (
        *(syn(QUOTA, str(100 + i), LEVELS[i]) for i in range(level, len(LEVELS))),
        syn(QUOTA, QUOTA_DEFAULT, DEFAULT_CONFIG),
    )


@pytest.mark.parametrize(("higher", "lower"), list(itertools.combinations(range(len(LEVELS)), 2)))
def test_each_higher_quota_level_hides_a_lower_one(higher, lower):
    configs = {LEVELS[higher]: {QUOTA: "hi"}, LEVELS[lower]: {QUOTA: "lo"}}
    result = resolve_quotas(USER, CLIENT, configs)[QUOTA]
    assert (result.value, result.source) == ("hi", LEVELS[higher])


def test_quota_defaults_when_nothing_is_set_and_scram_is_not_a_quota():
    configs = {f"users/{U}": {"SCRAM-SHA-256": "salt=...", "SCRAM-SHA-512": "x"}}
    result = resolve_quotas(USER, CLIENT, configs)
    assert set(result) == {
        "consumer_byte_rate",
        "producer_byte_rate",
        "request_percentage",
        "controller_mutation_rate",
    }
    for name, value in result.items():
        default = catalogue.keys(EntityType.CLIENTS)[name].default
        assert (value.value, value.source, value.synonyms) == (
            default,
            DEFAULT_CONFIG,
            (syn(name, default, DEFAULT_CONFIG),),
        )


def test_quota_keys_resolve_independently():
    configs = {f"users/{U}": {"producer_byte_rate": "1"}, "clients/<default>": {"consumer_byte_rate": "2"}}
    result = resolve_quotas(USER, CLIENT, configs)
    assert (result["producer_byte_rate"].source, result["consumer_byte_rate"].source) == (
        f"users/{U}",
        "clients/<default>",
    )


def test_user_only_lookup_skips_specific_client_levels():
    applicable = [LEVELS[1], LEVELS[2], LEVELS[4], LEVELS[5], LEVELS[7]]
    assert quota_paths(USER, None) == applicable
    configs = {path: {QUOTA: path} for path in LEVELS}
    for path in applicable:
        assert resolve_quotas(USER, None, configs)[QUOTA].source == path
        del configs[path]
    assert (
        resolve_quotas(USER, None, configs)[QUOTA].source == DEFAULT_CONFIG
    )  # specific-client levels never count


def test_client_only_lookup_skips_specific_user_levels():
    applicable = [LEVELS[3], LEVELS[4], LEVELS[5], LEVELS[6], LEVELS[7]]
    assert quota_paths(None, CLIENT) == applicable
    configs = {path: {QUOTA: path} for path in LEVELS}
    for path in applicable:
        assert resolve_quotas(None, CLIENT, configs)[QUOTA].source == path
        del configs[path]
    assert resolve_quotas(None, CLIENT, configs)[QUOTA].source == DEFAULT_CONFIG


def test_unnamed_user_and_client_use_only_default_levels():
    assert quota_paths(None, None) == [
        "users/<default>/clients/<default>",
        "users/<default>",
        "clients/<default>",
    ]
    assert quota_paths("", "") == quota_paths(None, None)


def test_quota_source_for_the_default_user_with_a_named_client():
    configs = {"users/<default>/clients/app1": {QUOTA: "5"}}
    assert resolve_quotas("bob", "app1", configs)[QUOTA].source == "users/<default>/clients/app1"


# ----------------------------------------------------------------------------------------------
# IPs
# ----------------------------------------------------------------------------------------------

RATE = "connection_creation_rate"
RATE_DEFAULT = catalogue.keys(EntityType.IPS)[RATE].default


def test_ip_levels():
    configs = {"ips/10.0.0.1": {RATE: "5"}, "ips/<default>": {RATE: "9"}}
    result = resolve_ip("10.0.0.1", configs)[RATE]
    assert (result.value, result.source) == ("5", "ips/10.0.0.1")
    assert result.synonyms == (
        syn(RATE, "5", "ips/10.0.0.1"),
        syn(RATE, "9", "ips/<default>"),
        syn(RATE, RATE_DEFAULT, DEFAULT_CONFIG),
    )
    assert resolve_ip("10.0.0.2", configs)[RATE].source == "ips/<default>"
    assert resolve_ip("10.0.0.2", {})[RATE].source == DEFAULT_CONFIG
    assert resolve_ip("10.0.0.2", {})[RATE].value == RATE_DEFAULT
    assert resolve_ip("<default>", configs)[RATE].source == "ips/<default>"


@pytest.mark.parametrize("stored", ["::1", "0:0:0:0:0:0:0:1", "0000:0000:0000:0000:0000:0000:0000:0001"])
def test_ipv6_spellings_match(stored):
    assert resolve_ip("::1", {f"ips/{stored}": {RATE: "3"}})[RATE].source == f"ips/{stored}"


@pytest.mark.parametrize("bad", ["10.0.0.300", "host.example", ""])
def test_invalid_ip_is_a_clear_error(bad):
    with pytest.raises(InvalidInput, match="not a valid IPv4 or IPv6 address"):
        resolve_ip(bad, {})


# ----------------------------------------------------------------------------------------------
# JSON rendering and masking
# ----------------------------------------------------------------------------------------------


def test_to_json_shape_and_masking():
    plain = effective("log.retention.ms", {"log.retention.ms": "1"})
    assert plain.to_json() == {
        "name": "log.retention.ms",
        "value": "1",
        "source": DYNAMIC_BROKER_CONFIG,
        "synonyms": [
            {"name": "log.retention.ms", "value": "1", "source": DYNAMIC_BROKER_CONFIG},
            {"name": "log.retention.hours", "value": "168", "source": DEFAULT_CONFIG},
        ],
    }
    secret = effective(
        "listener.name.internal.ssl.keystore.password",
        {"listener.name.internal.ssl.keystore.password": "pw"},
        None,
        {"ssl.keystore.password": "pw0"},
    )
    assert secret.sensitive
    masked = secret.to_json()
    assert masked["value"] == MASK and [s["value"] for s in masked["synonyms"]] == [MASK, MASK]
    assert secret.to_json(mask=False)["value"] == "pw"
    assert [s["value"] for s in secret.to_json(mask=lambda v: f"h({v})")["synonyms"]] == ["h(pw)", "h(pw0)"]
    unset_secret = effective("ssl.keystore.password")
    assert unset_secret.to_json() == {
        "name": "ssl.keystore.password",
        "value": None,
        "source": DEFAULT_CONFIG,
        "synonyms": [],
    }


# ----------------------------------------------------------------------------------------------
# Property: adding a value below the deciding layer never changes the result
# ----------------------------------------------------------------------------------------------

RETENTION = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
layer_values = st.dictionaries(st.sampled_from(RETENTION), st.integers(-1, 10**6).map(str), max_size=3)


@settings(max_examples=200, deadline=None)
@given(
    layers=st.tuples(layer_values, layer_values, layer_values),
    extra=st.tuples(st.integers(0, 2), st.sampled_from(RETENTION), st.integers(-1, 10**6).map(str)),
)
def test_property_lower_layer_never_changes_a_decided_broker_value(layers, extra):
    before = broker(*layers).values
    # The deciding layer: the highest that sets a synonym Kafka keeps (the dynamic layers may
    # only set log.retention.ms; minutes and hours there are dropped as read-only).
    decided = next(
        (
            index
            for index, layer in enumerate(layers)
            if any(key in layer for key in (RETENTION if index == 2 else RETENTION[:1]))
        ),
        3,
    )
    layer, name, value = extra
    if layer <= decided:
        layer = decided + 1
    if layer > 2:
        return  # decided by the built-in default: nothing is lower
    grown = [dict(x) for x in layers]
    grown[layer][name] = value
    after = broker(*grown).values
    # Values never move; a reported source may (Kafka lists a lower layer's own-name synonym).
    for key in RETENTION:
        assert after[key].value == before[key].value
    topic_before = resolve_topic("t", {}, before)["retention.ms"]
    topic_after = resolve_topic("t", {}, after)["retention.ms"]
    assert topic_after.value == topic_before.value


@settings(max_examples=200, deadline=None)
@given(
    present=st.sets(st.integers(0, len(LEVELS) - 1), min_size=1),
    lower=st.integers(0, len(LEVELS) - 1),
)
def test_property_lower_quota_level_never_changes_the_result(present, lower):
    configs = {LEVELS[i]: {QUOTA: str(i)} for i in present}
    before = resolve_quotas(USER, CLIENT, configs)[QUOTA]
    winner = min(present)
    if lower <= winner:
        return
    configs[LEVELS[lower]] = {QUOTA: "new"}
    after = resolve_quotas(USER, CLIENT, configs)[QUOTA]
    assert (after.value, after.source) == (before.value, before.source) == (str(winner), LEVELS[winner])


@settings(max_examples=100, deadline=None)
@given(override=st.integers(0, 10**9).map(str), broker_ms=st.integers(-1, 10**9).map(str))
def test_property_topic_override_always_wins(override, broker_ms):
    values = broker({"log.retention.ms": broker_ms}).values
    result = resolve_topic("t", {"retention.ms": override}, values)["retention.ms"]
    assert (result.value, result.source) == (override, DYNAMIC_TOPIC_CONFIG)
