"""Kafka 4's two KRaft-only families: groups and client-metrics subscriptions, as entities and handlers.

Their schemas are generated from Kafka 4.4.0's own definitions (scripts/generate_family_schemas.py);
their rules are shown against a real 4.4 broker in tests/kraft/test_kraft_new_families.py. Here:
the entity table's rows (no ``<default>``, names taken as typed), validation through each family's
handler, a group's fallback to the brokers' ``group.*`` keys, and the command line's one-line
refusal without ``--bootstrap-server`` (ZooKeeper: Kafka 3.9 has neither family).
"""

from __future__ import annotations

import pytest
from helpers import run_cli

from configctl import catalogue, entities, handlers
from configctl.adminapi.families import goes_through
from configctl.entities import TYPE_ORDER, ZOOKEEPER_TYPES, Entity, EntityType, refuse_kraft_only
from configctl.errors import InvalidInput
from configctl.handlers.base import BrokerView
from configctl.handlers.validate import validate_config
from configctl.sources import DEFAULT_CONFIG
from configctl.store import Change

pytestmark = pytest.mark.unit

SESSION, HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"


def test_the_two_types_are_kraft_only_entity_types_without_a_default():
    assert [t.value for t in TYPE_ORDER[-2:]] == ["groups", "client-metrics"]
    assert [t for t in TYPE_ORDER if t.kraft_only] == [EntityType.GROUPS, EntityType.CLIENT_METRICS]
    assert TYPE_ORDER[:5] == ZOOKEEPER_TYPES
    assert entities.parse_entity_type("group") is EntityType.GROUPS
    assert entities.parse_entity_type("client-metrics") is EntityType.CLIENT_METRICS
    group = Entity.named(EntityType.GROUPS, "payments/eu")  # Kafka allows any text: '/' too
    assert (group.path, group.label, group.display) == (
        "groups/payments%2Feu",
        "groups/payments/eu",
        "group 'payments/eu'",
    )
    assert Entity.from_path(group.path) == group
    assert Entity.of("client-metrics", "producers").display == "client-metrics 'producers'"
    for etype in (EntityType.GROUPS, EntityType.CLIENT_METRICS):
        assert not etype.has_default
        with pytest.raises(InvalidInput, match="have no <default> entity"):
            Entity.named(etype, "")
        with pytest.raises(InvalidInput, match=r"must not be empty|no <default>"):
            Entity.of(etype, "")
    # a group literally named <default> is that group, as a user named so is that principal
    assert Entity.named(EntityType.GROUPS, "<default>").path == "groups/%3Cdefault%3E"
    assert handlers.handler_for(Entity.of("groups", "g")) is handlers.GROUP
    assert handlers.handler_for(Entity.of("client-metrics", "s")) is handlers.CLIENT_METRICS


def test_the_schemas_are_kafka_44s():
    groups, metrics = catalogue.keys(EntityType.GROUPS), catalogue.keys(EntityType.CLIENT_METRICS)
    assert set(metrics) == {"metrics", "interval.ms", "match"}
    assert (metrics["interval.ms"].default, groups[SESSION].default) == ("300000", "45000")
    assert groups[SESSION].broker_synonyms == (("group.consumer.session.timeout.ms", "identity"),)
    assert groups["share.auto.offset.reset"].broker_synonyms == ()
    assert catalogue.schema(EntityType.GROUPS)["x-kafka-release"] == "4.4.0"


def test_a_group_is_validated_key_by_key_then_by_its_rules():
    group = Entity.of("groups", "payments")
    assert (
        validate_config(
            group, {SESSION: "50000", HEARTBEAT: "6000", "share.auto.offset.reset": "by_duration:PT1H"}
        )
        == []
    )
    assert validate_config(
        group,
        {
            SESSION: "6000",
            HEARTBEAT: "6000",
            "share.delivery.count.limit": "1",
            "share.isolation.level": "none",
            "share.auto.offset.reset": "EARLIEST",
            "errors.deadletterqueue.topic.name": "__dlq",
            "streams.rack.aware.assignment.tags": "zone,rack,zone",
            "group.share.session.timeout.ms": "50000",
        },
    ) == [
        "share.delivery.count.limit: 1 is less than the minimum 2",
        "share.isolation.level: 'none' is not one of read_committed, read_uncommitted",
        "unknown group config 'group.share.session.timeout.ms' (did you mean 'share.session.timeout.ms'?)",
        f"{SESSION} (6000) must be greater than {HEARTBEAT} (6000)",
        "share.auto.offset.reset: 'EARLIEST' is not 'earliest', 'latest' or 'by_duration:<PnDTnHnMn.nS>'",
        "errors.deadletterqueue.topic.name: a dead-letter queue topic must not start with '__' (Kafka's own topics)",
        "streams.rack.aware.assignment.tags must not contain duplicate tag keys",
    ]


def test_a_subscription_is_validated_as_kafka_44_validates_it():
    subscription = Entity.of("client-metrics", "producers")
    good = {
        "interval.ms": "60000",
        "metrics": "org.apache.kafka.producer.",
        "match": "client_id=app-.*,client_software_name=apache-kafka-java",
    }
    assert validate_config(subscription, good) == []
    assert validate_config(
        subscription, {"interval.ms": "3600001", "match": "foo=bar,client_id", "every": "1"}
    ) == [
        "interval.ms: 3600001 is greater than the maximum 3600000",
        "unknown client-metrics config 'every'",
        "match: 'foo' is not a client field Kafka matches on (client_instance_id, client_id, client_software_name, "
        "client_software_version, client_source_address, client_source_port)",
        "match: 'client_id' is not <client field>=<pattern> (one '=', fields: client_instance_id, client_id, "
        "client_software_name, client_software_version, client_source_address, client_source_port)",
    ]


def test_a_group_key_falls_back_to_the_brokers_group_key_then_its_default():
    group = Entity.of("groups", "payments")
    view = BrokerView(1, {"group.consumer.heartbeat.interval.ms": "4000"}, {group.path: {SESSION: "50000"}})
    values = handlers.GROUP.effective(group, view)
    assert (values[SESSION].value, values[SESSION].source) == ("50000", "DYNAMIC_GROUP_CONFIG")
    assert [s.name for s in values[SESSION].synonyms] == [SESSION, "group.consumer.session.timeout.ms"]
    assert (values[HEARTBEAT].value, values[HEARTBEAT].source) == ("4000", "STATIC_BROKER_CONFIG")
    assert (values["share.auto.offset.reset"].value, values["share.auto.offset.reset"].source) == (
        "latest",
        DEFAULT_CONFIG,
    )
    # a change to the group moves the group alone
    after = view.with_config(group.path, {SESSION: "55000"})
    (moved,) = handlers.GROUP.moved(group, view, after, frozenset({SESSION}))
    assert moved.entity == group and moved.changed == {SESSION}


def test_a_subscription_has_no_fallback():
    subscription = Entity.of("client-metrics", "producers")
    view = BrokerView(1, {}, {subscription.path: {"interval.ms": " 1000 ", "metrics": " a. , b. "}})
    values = handlers.CLIENT_METRICS.effective(subscription, view)
    assert {k: (v.value, v.source) for k, v in values.items()} == {
        "interval.ms": ("1000", "DYNAMIC_CLIENT_METRICS_CONFIG"),
        "match": ("", DEFAULT_CONFIG),
        "metrics": ("a.,b.", "DYNAMIC_CLIENT_METRICS_CONFIG"),  # as a 4.4 broker reports ' a. , b. '
    }


@pytest.mark.parametrize(
    "args",
    [
        ["describe", "--group", "payments"],
        ["alter", "--client-metrics", "producers", "--add-config", "interval.ms=1000"],
        ["alter", "--entity-type", "groups", "--entity-name", "g", "--add-config", f"{SESSION}=50000"],
        ["history", "--entity-type", "client-metrics", "--entity-name", "s"],
    ],
)
def test_without_bootstrap_server_they_are_refused_in_one_line(args):
    """No store is opened: ZooKeeper names no reachable server here, and none is asked."""
    done = run_cli("--zookeeper", "127.0.0.1:1", *args, timeout=60)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"error: {args[2] if args[1] == '--entity-type' else ('groups' if 'group' in args[1] else 'client-metrics')} "
        "configs need Kafka 4 (a KRaft cluster, --bootstrap-server); without --bootstrap-server configctl reads "
        "ZooKeeper (Kafka 3.9); nothing was written"
    ]


def test_a_zookeeper_mode_cluster_refuses_them_through_its_brokers():
    change = Change(Entity.of("groups", "g"), {SESSION: "50000"}, -1)
    with pytest.raises(InvalidInput, match="groups configs need Kafka 4"):
        goes_through(change, {1})
    with pytest.raises(InvalidInput, match="nothing was written"):
        refuse_kraft_only(EntityType.CLIENT_METRICS)
    refuse_kraft_only(EntityType.TOPICS)  # the five pass
