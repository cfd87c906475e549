"""Kafka 4's group configs and client-metrics subscriptions, on a real Kafka 4.4 KRaft cluster.

configctl writes each family and Kafka 4's own kafka-configs.sh reads it back, and the other way
round; history records them; what Kafka 4.4 refuses is refused (by configctl first where it knows
the rule, by the broker where only the broker does), nothing written. A group's configs can be set
before the group exists (nobody joins one here). Kafka 4.4's rule that a group's session timeout
exceeds its heartbeat interval can only be broken where the brokers' bounds overlap (by default
heartbeats stop at 15 s and sessions start at 45 s), so that one test starts a node of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import run_cli

from configctl import handlers
from configctl.adminapi.client import KafkaAdmin
from configctl.entities import Entity, EntityType
from configctl.errors import BrokerRefused
from configctl.handlers.base import BrokerView
from configctl.kraft.store import KRaftStore
from configctl.localkraft import KRaftCluster

KAFKA4_HOME = Path(__file__).resolve().parents[2] / "build" / "kafka4"


def cli(bootstrap: str, *args: str):
    """``configctl --bootstrap-server <the cluster> ARGS``, as an operator types it."""
    return run_cli("--bootstrap-server", bootstrap, *args)


def described(kraft, *selector: str) -> str:
    done = kraft.config_command("--describe", *selector)
    assert done.returncode == 0, done.stderr
    return done.stdout


def configctl_config(bootstrap: str, *selector: str) -> dict[str, str]:
    done = cli(bootstrap, "describe", *selector, "-o", "json")
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)
    return entry["config"]


def test_a_group_written_by_configctl_is_what_kafkas_tool_reads(kraft_combined, unique):
    kraft = kraft_combined
    group = unique("payments")  # no member ever joins: Kafka 4.4 takes a group's configs before it exists
    done = cli(
        kraft.bootstrap,
        "alter",
        "--group",
        group,
        "--add-config",
        "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000,share.auto.offset.reset=earliest",
        "--reason",
        "slow consumers",
    )
    assert done.returncode == 0, done.stderr
    shown = described(kraft, "--entity-type", "groups", "--entity-name", group)
    assert "consumer.session.timeout.ms=50000" in shown
    assert "consumer.heartbeat.interval.ms=6000" in shown
    assert "share.auto.offset.reset=earliest" in shown
    # a key the group does not set falls back to the brokers' group.* key, as Kafka reports it
    with KafkaAdmin(kraft.bootstrap) as admin:
        reported = admin.describe_resource(Entity.of(EntityType.GROUPS, group))
    assert (reported["consumer.session.timeout.ms"].source, reported["share.session.timeout.ms"].source) == (
        "DYNAMIC_GROUP_CONFIG",
        "DEFAULT_CONFIG",
    )
    assert [s.name for s in reported["share.session.timeout.ms"].synonyms] == [
        "group.share.session.timeout.ms"
    ]

    # the listing (ListConfigResources) names it; history records the write with its reason
    listing = cli(kraft.bootstrap, "describe", "--entity-type", "groups", "-o", "json")
    assert listing.returncode == 0, listing.stderr
    assert group in [e["entity_name"] for e in json.loads(listing.stdout)]
    history = cli(kraft.bootstrap, "history", "--group", group, "-o", "json")
    assert history.returncode == 0, history.stderr
    assert "slow consumers" in history.stdout and "consumer.session.timeout.ms" in history.stdout

    # a key removed by configctl is gone for Kafka's tool too
    done = cli(kraft.bootstrap, "alter", "--group", group, "--delete-config", "share.auto.offset.reset")
    assert done.returncode == 0, done.stderr
    assert "share.auto.offset.reset" not in described(
        kraft, "--entity-type", "groups", "--entity-name", group
    )


def test_a_group_written_by_kafkas_tool_is_what_configctl_reads(kraft_combined, unique):
    kraft = kraft_combined
    group = unique("orders")
    done = kraft.config_command(
        "--alter",
        "--entity-type",
        "groups",
        "--entity-name",
        group,
        "--add-config",
        "consumer.session.timeout.ms=55000,share.record.lock.duration.ms=20000",
    )
    assert done.returncode == 0, done.stderr
    assert configctl_config(kraft.bootstrap, "--entity-type", "groups", "--entity-name", group) == {
        "consumer.session.timeout.ms": "55000",
        "share.record.lock.duration.ms": "20000",
    }
    # configctl changes what Kafka's tool wrote; history has configctl's write
    done = cli(
        kraft.bootstrap, "alter", "--group", group, "--add-config", "consumer.session.timeout.ms=58000"
    )
    assert done.returncode == 0, done.stderr
    assert "consumer.session.timeout.ms=58000" in described(
        kraft, "--entity-type", "groups", "--entity-name", group
    )
    with KRaftStore(kraft.bootstrap) as store:
        (record,) = store.history(Entity.of(EntityType.GROUPS, group))[-1:]
    assert record.config == {"consumer.session.timeout.ms": "58000", "share.record.lock.duration.ms": "20000"}


def test_a_subscription_written_by_configctl_is_what_kafkas_tool_reads_and_back(kraft_combined, unique):
    kraft = kraft_combined
    ours, theirs = unique("producers"), unique("consumers")
    done = cli(
        kraft.bootstrap,
        "alter",
        "--client-metrics",
        ours,
        "--add-config",
        "interval.ms=60000,metrics=[org.apache.kafka.producer.,org.apache.kafka.consumer.],match=[client_id=app-.*]",
    )
    assert done.returncode == 0, done.stderr
    shown = described(kraft, "--entity-type", "client-metrics", "--entity-name", ours)
    assert "interval.ms=60000" in shown
    assert "metrics=org.apache.kafka.producer.,org.apache.kafka.consumer." in shown
    assert "match=client_id=app-.*" in shown

    done = kraft.config_command(
        "--alter",
        "--entity-type",
        "client-metrics",
        "--entity-name",
        theirs,
        "--add-config",
        "interval.ms=1000,metrics=org.apache.kafka.consumer.fetch",
    )
    assert done.returncode == 0, done.stderr
    assert configctl_config(kraft.bootstrap, "--client-metrics", theirs) == {
        "interval.ms": "1000",
        "metrics": "org.apache.kafka.consumer.fetch",
    }
    listing = cli(kraft.bootstrap, "describe", "--entity-type", "client-metrics", "-o", "json")
    assert listing.returncode == 0, listing.stderr
    assert {ours, theirs} <= {e["entity_name"] for e in json.loads(listing.stdout)}
    history = cli(kraft.bootstrap, "history", "--entity-type", "client-metrics", "--entity-name", ours)
    assert history.returncode == 0, history.stderr
    assert "interval.ms" in history.stdout


def test_what_kafka_refuses_is_refused_and_nothing_is_written(kraft_combined, unique):
    kraft = kraft_combined
    group, subscription = unique("refused"), unique("refused")
    refused = [
        # outside the brokers' bounds (group.consumer.min.session.timeout.ms = 45000): the broker's
        # own refusal, in its words (configctl cannot read its server.properties on KRaft)
        (["--group", group], "consumer.session.timeout.ms=30000", "must be in the range 45000 to 60000"),
        (["--group", group], "share.auto.offset.reset=first", "share.auto.offset.reset"),
        (["--group", group], "errors.deadletterqueue.topic.name=__dlq", "must not start with '__'"),
        (
            ["--group", group],
            "group.consumer.session.timeout.ms=50000",
            "did you mean 'consumer.session.timeout.ms'",
        ),
        (["--client-metrics", subscription], "interval.ms=50", "less than the minimum 100"),
        (["--client-metrics", subscription], "match=[foo=bar]", "not a client field"),
    ]
    for selector, config, reason in refused:
        done = cli(kraft.bootstrap, "alter", *selector, "--add-config", config)
        assert done.returncode != 0 and reason in done.stderr, (config, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    for flags in (
        ("--entity-type", "groups", "--entity-name", group),
        ("--entity-type", "client-metrics", "--entity-name", subscription),
    ):
        assert "=" not in described(kraft, *flags).split("are:", 1)[-1]
    # Kafka 4.4 itself refuses the same values: configctl's rules are the broker's
    with KafkaAdmin(kraft.bootstrap) as admin:
        for entity, config, reason in [
            (
                Entity.of(EntityType.GROUPS, group),
                {"consumer.session.timeout.ms": "30000"},
                "range 45000 to 60000",
            ),
            (
                Entity.of(EntityType.GROUPS, group),
                {"consumer.heartbeat.interval.ms": "50000"},
                "5000 to 15000",
            ),
            (Entity.of(EntityType.GROUPS, group), {"share.auto.offset.reset": "first"}, "by_duration"),
            (Entity.of(EntityType.GROUPS, group), {"errors.deadletterqueue.topic.name": "__dlq"}, "'__'"),
            (
                Entity.of(EntityType.CLIENT_METRICS, subscription),
                {"interval.ms": "50"},
                "between 100 and 3600000",
            ),
            (
                Entity.of(EntityType.CLIENT_METRICS, subscription),
                {"match": "foo=bar"},
                "Illegal client matching",
            ),
        ]:
            with pytest.raises(BrokerRefused, match=reason):
                admin.alter_resource(entity, config, validate_only=True)
    # no <default> group: a group's keys fall back to the brokers' group.* keys instead
    done = cli(
        kraft.bootstrap,
        "alter",
        "--entity-type",
        "groups",
        "--entity-default",
        "--add-config",
        "consumer.session.timeout.ms=50000",
    )
    assert done.returncode != 0 and "groups have no <default> entity" in done.stderr


@pytest.fixture(scope="module")
def overlapping_bounds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A node whose brokers let a consumer group's heartbeat reach its session timeout (those
    bounds are read-only broker keys, so the shared cluster cannot be set so)."""
    properties = {
        "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.max.heartbeat.interval.ms": "60000",
    }
    work = tmp_path_factory.mktemp("kraft-bounds")
    cluster = KRaftCluster(KAFKA4_HOME, work, combined=True, properties=properties)
    cluster.start()
    try:
        yield cluster.bootstrap
    finally:
        cluster.stop()


def test_a_heartbeat_must_stay_below_the_session_timeout(overlapping_bounds, unique):
    bootstrap = overlapping_bounds
    group = unique("heartbeat")
    # both keys set on the group: configctl's rule, before anything is sent
    done = cli(
        bootstrap,
        "alter",
        "--group",
        group,
        "--add-config",
        "consumer.session.timeout.ms=7000,consumer.heartbeat.interval.ms=7000",
    )
    assert done.returncode != 0
    assert (
        "consumer.session.timeout.ms (7000) must be greater than consumer.heartbeat.interval.ms (7000)"
        in done.stderr
    )
    # the heartbeat alone, above the brokers' session timeout (45000) it falls back to: the
    # broker's own refusal (configctl cannot read the brokers' server.properties on KRaft)
    done = cli(bootstrap, "alter", "--group", group, "--add-config", "consumer.heartbeat.interval.ms=50000")
    assert done.returncode != 0
    assert "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms" in done.stderr
    # and Kafka 4.4 refuses both for the same reason
    with KafkaAdmin(bootstrap) as admin:
        entity = Entity.of(EntityType.GROUPS, group)
        for config in (
            {"consumer.session.timeout.ms": "7000", "consumer.heartbeat.interval.ms": "7000"},
            {"consumer.heartbeat.interval.ms": "50000"},
        ):
            with pytest.raises(
                BrokerRefused, match=r"must be greater than consumer\.heartbeat\.interval\.ms"
            ):
                admin.alter_resource(entity, config, validate_only=True)
        assert "consumer.heartbeat.interval.ms" not in {
            k for k, v in admin.describe_resource(entity).items() if v.source == "DYNAMIC_GROUP_CONFIG"
        }
    # below it, both take it
    done = cli(
        bootstrap,
        "alter",
        "--group",
        group,
        "--add-config",
        "consumer.session.timeout.ms=8000,consumer.heartbeat.interval.ms=7000",
    )
    assert done.returncode == 0, done.stderr


def test_kafka_reports_a_value_parsed_and_written_back_as_the_handlers_do(kraft_combined, unique):
    """What ``describe --effective``'s handlers compute for a value is what a 4.4 broker reports."""
    written = {
        Entity.of(EntityType.GROUPS, unique("spaces")): {
            "consumer.session.timeout.ms": " 50000 ",
            "streams.rack.aware.assignment.tags": " zone , rack ",
        },
        Entity.of(EntityType.CLIENT_METRICS, unique("spaces")): {
            "interval.ms": " 1000 ",
            "metrics": " a. , b. ",
        },
    }
    with KafkaAdmin(kraft_combined.bootstrap) as admin:
        for entity, config in written.items():
            admin.alter_resource(entity, config)
            reported = admin.describe_resource(entity, list(config))
            computed = handlers.handler_for(entity).effective(
                entity, BrokerView(1, {}, {entity.path: config})
            )
            assert {k: (v.value, v.source) for k, v in reported.items()} == {
                k: (computed[k].value, computed[k].source) for k in config
            }
