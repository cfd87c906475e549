"""Kafka 3.9 compatibility of the write path, against a real ZooKeeper.

Each case follows a Kafka rule and names where Kafka has it (tag 3.9.0-rc3 of apache/kafka).
"""

from __future__ import annotations

import json

import pytest
from helpers import REPO_ROOT, run_cli

from configctl.entities import Entity

pytestmark = pytest.mark.zk


def cli(connect: str, *args: str, env: dict | None = None):
    return run_cli("--zookeeper", connect, *args, env=env)


def tree(zk, path: str = "/") -> dict[str, bytes]:
    found = {}
    for child in zk.get_children(path):
        full = f"{path.rstrip('/')}/{child}"
        found[full] = zk.get(full)[0]
        found.update(tree(zk, full))
    return found


def config(zk, path: str) -> dict[str, str]:
    return json.loads(zk.get(f"/config/{path}")[0])["config"]


# -- AdminZkClient.validateTopicConfig: "Topic '...' does not exist" ----------------------------


def test_config_for_a_topic_kafka_does_not_know_is_refused(zk_connect, zk):
    zk.create("/brokers/topics/orders", b"{}", makepath=True)
    before = tree(zk)
    result = cli(zk_connect, "alter", "--topic", "ghost", "--add-config", "retention.ms=1000")
    assert result.returncode == 1 and "does not exist" in result.stderr and result.stderr.count("\n") == 1
    assert tree(zk) == before
    assert cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000").returncode == 0


def test_without_kafka_registrations_any_topic_may_be_configured(zk_connect, zk):
    assert cli(zk_connect, "alter", "--topic", "free", "--add-config", "retention.ms=1000").returncode == 0


# -- ConfigCommand.validateBrokersNotRunning ---------------------------------------------------------


def test_broker_configs_are_refused_while_kafka_brokers_run_unless_allowed(zk_connect, zk):
    zk.create("/brokers/ids/1", b"{}", makepath=True, ephemeral=True)
    before = tree(zk)
    for target in (["--broker", "1"], ["--broker-defaults"]):
        result = cli(zk_connect, "alter", *target, "--add-config", "log.cleaner.threads=2")
        assert result.returncode == 1 and "--allow-running-brokers" in result.stderr
    assert tree(zk) == before
    # a broker that is not running may be configured (Kafka: "broker 2 is running" only for 2)
    assert cli(zk_connect, "alter", "--broker", "2", "--add-config", "log.cleaner.threads=2").returncode == 0
    allowed = cli(
        zk_connect,
        "alter",
        "--broker-defaults",
        "--add-config",
        "log.cleaner.threads=3",
        "--allow-running-brokers",
    )
    assert allowed.returncode == 0, allowed.stderr
    assert config(zk, "brokers/<default>") == {"log.cleaner.threads": "3"}


# -- AdminZkClient.tryCleanQuotaNodes (Kafka 3.5+, KAFKA-14496) ------------------------------------


def test_deleting_the_last_quota_key_deletes_the_empty_node_and_its_empty_parents(zk_connect, zk):
    assert (
        cli(
            zk_connect, "alter", "--user", "alice", "--client", "app", "--add-config", "consumer_byte_rate=1"
        ).returncode
        == 0
    )
    assert cli(zk_connect, "alter", "--client", "app", "--add-config", "producer_byte_rate=2").returncode == 0
    assert (
        cli(zk_connect, "alter", "--ip", "10.0.0.1", "--add-config", "connection_creation_rate=3").returncode
        == 0
    )
    for args in (
        ["--user", "alice", "--client", "app", "--delete-config", "consumer_byte_rate"],
        ["--client", "app", "--delete-config", "producer_byte_rate"],
        ["--ip", "10.0.0.1", "--delete-config", "connection_creation_rate"],
    ):
        result = cli(zk_connect, "alter", *args)
        assert result.returncode == 0, result.stderr
    # the user node held nothing but the clients directory: gone with it, as Kafka 3.9 does
    assert zk.exists("/config/users/alice") is None
    assert zk.exists("/config/clients/app") is None and zk.exists("/config/ips/10.0.0.1") is None
    # each deletion still notified the brokers (who read a missing node as an empty config)
    notes = [
        json.loads(zk.get(f"/config/changes/{n}")[0]) for n in sorted(zk.get_children("/config/changes"))
    ]
    assert [n["entity_path"] for n in notes[-3:]] == [
        "users/alice/clients/app",
        "clients/app",
        "ips/10.0.0.1",
    ]
    # topics and brokers keep their empty node, as Kafka does
    assert cli(zk_connect, "alter", "--topic", "t", "--add-config", "retention.ms=1").returncode == 0
    assert cli(zk_connect, "alter", "--topic", "t", "--delete-config", "retention.ms").returncode == 0
    assert zk.get("/config/topics/t")[0] == b'{"version":1,"config":{}}'


def test_a_user_node_with_its_own_config_or_other_clients_stays(zk_connect, zk):
    assert cli(zk_connect, "alter", "--user", "bob", "--add-config", "producer_byte_rate=5").returncode == 0
    for client in ("a", "b"):
        assert (
            cli(
                zk_connect,
                "alter",
                "--user",
                "bob",
                "--client",
                client,
                "--add-config",
                "consumer_byte_rate=1",
            ).returncode
            == 0
        )
    assert (
        cli(
            zk_connect, "alter", "--user", "bob", "--client", "a", "--delete-config", "consumer_byte_rate"
        ).returncode
        == 0
    )
    assert zk.exists("/config/users/bob/clients/a") is None
    assert zk.get_children("/config/users/bob/clients") == ["b"]
    assert config(zk, "users/bob") == {"producer_byte_rate": "5"}


# -- ConfigCommand.parseQuotaEntity / sanitizeName: "" is the default, a name is sanitized ----------


def test_a_user_named_default_is_a_principal_and_an_empty_name_the_default(zk_connect, zk):
    literal = cli(
        zk_connect,
        "alter",
        "--entity-type",
        "users",
        "--entity-name",
        "<default>",
        "--add-config",
        "producer_byte_rate=1",
    )
    assert literal.returncode == 0, literal.stderr
    assert config(zk, "users/%3Cdefault%3E") == {"producer_byte_rate": "1"}
    default = cli(
        zk_connect,
        "alter",
        "--entity-type",
        "users",
        "--entity-name",
        "",
        "--add-config",
        "producer_byte_rate=2",
    )
    assert default.returncode == 0, default.stderr
    assert config(zk, "users/<default>") == {"producer_byte_rate": "2"}
    described = json.loads(cli(zk_connect, "describe", "--entity-type", "users", "-o", "json").stdout)
    assert {d["entity_path"]: d["config"] for d in described} == {
        "users/<default>": {"producer_byte_rate": "2"},
        "users/%3Cdefault%3E": {"producer_byte_rate": "1"},
    }
    assert Entity.from_path("users/%3Cdefault%3E").literal


# -- DynamicConfig.Ip.isValidIpEntity: an IP or a resolvable host ----------------------------------


def test_ip_entities_may_be_host_names_that_resolve(zk_connect, zk):
    assert (
        cli(zk_connect, "alter", "--ip", "localhost", "--add-config", "connection_creation_rate=4").returncode
        == 0
    )
    assert config(zk, "ips/localhost") == {"connection_creation_rate": "4"}
    bad = cli(
        zk_connect, "alter", "--ip", "host_with_underscore", "--add-config", "connection_creation_rate=4"
    )
    assert bad.returncode == 1
    # a well-formed name that does not resolve: refused as Kafka refuses it (tests/kafka/test_vectors.py)
    before = zk.get_children("/config/ips")
    unresolved = cli(
        zk_connect, "alter", "--ip", "no-such-host.invalid", "--add-config", "connection_creation_rate=4"
    )
    assert unresolved.returncode == 1 and "does not resolve" in unresolved.stderr
    assert unresolved.stderr.count("\n") == 1 and zk.get_children("/config/ips") == before


# -- KafkaConfig.validateValues: cross-key rules on the merged config ------------------------------


def test_max_connections_per_ip_zero_needs_overrides_in_the_effective_config(zk_connect, zk):
    before = tree(zk)
    refused = cli(zk_connect, "alter", "--broker-defaults", "--add-config", "max.connections.per.ip=0")
    assert refused.returncode == 1 and "only if max.connections.per.ip.overrides" in refused.stderr
    assert tree(zk) == before
    # with the overrides already set in another write, the same change is accepted
    assert (
        cli(
            zk_connect,
            "alter",
            "--broker-defaults",
            "--add-config",
            "max.connections.per.ip.overrides=[10.0.0.1:5]",
        ).returncode
        == 0
    )
    assert (
        cli(zk_connect, "alter", "--broker-defaults", "--add-config", "max.connections.per.ip=0").returncode
        == 0
    )
    # and deleting the overrides now would break the rule
    gone = cli(
        zk_connect, "alter", "--broker-defaults", "--delete-config", "max.connections.per.ip.overrides"
    )
    assert gone.returncode == 1 and "only if max.connections.per.ip.overrides" in gone.stderr
    bad_host = cli(
        zk_connect, "alter", "--broker", "3", "--add-config", "max.connections.per.ip.overrides=[bad/host:1]"
    )
    assert bad_host.returncode == 1 and "invalid addresses" in bad_host.stderr


def test_topic_cross_key_rules_see_the_whole_resulting_config(zk_connect, zk):
    assert (
        cli(zk_connect, "alter", "--topic", "c", "--add-config", "max.compaction.lag.ms=1000").returncode == 0
    )
    refused = cli(zk_connect, "alter", "--topic", "c", "--add-config", "min.compaction.lag.ms=5000")
    assert refused.returncode == 1 and "must not be greater than max.compaction.lag.ms" in refused.stderr


# -- the policy hook: effective config before and after, for alter and rollback --------------------


POLICY_PATH = f"{REPO_ROOT}:{REPO_ROOT / 'tests'}"


def test_policies_see_the_effective_result_and_refuse_in_one_line(zk_connect, zk):
    env = {"CONFIGCTL_POLICIES": "policy_examples:no_short_retention", "PYTHONPATH": POLICY_PATH}
    assert (
        cli(zk_connect, "alter", "--topic", "p", "--add-config", "retention.ms=7200000", env=env).returncode
        == 0
    )
    before = tree(zk)
    refused = cli(zk_connect, "alter", "--topic", "p", "--add-config", "retention.ms=60000", env=env)
    assert refused.returncode == 1 and "policy" in refused.stderr and "under one hour" in refused.stderr
    assert refused.stderr.count("\n") == 1 and tree(zk) == before
    # the effective value counts, wherever it comes from: a cluster-wide default below an hour makes
    # every topic that does not set retention.ms itself effectively short
    short_default = cli(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=1000", env=env
    )
    assert short_default.returncode == 0  # the broker entity itself has no retention.ms
    judged = cli(zk_connect, "alter", "--topic", "q", "--add-config", "cleanup.policy=delete", env=env)
    assert judged.returncode == 1 and "under one hour" in judged.stderr


def test_rollback_goes_through_the_same_policies(zk_connect, zk):
    env = {"CONFIGCTL_POLICIES": "policy_examples:no_short_retention", "PYTHONPATH": POLICY_PATH}
    assert cli(zk_connect, "alter", "--topic", "r", "--add-config", "retention.ms=60000").returncode == 0
    assert cli(zk_connect, "alter", "--topic", "r", "--add-config", "retention.ms=7200000").returncode == 0
    before = tree(zk)
    rolled = cli(zk_connect, "rollback", "--topic", "r", "--to", "0", "--yes", env=env)
    assert rolled.returncode == 1 and "under one hour" in rolled.stderr
    assert tree(zk) == before
    required = {"CONFIGCTL_POLICIES": "policy_examples:ReasonRequired", "PYTHONPATH": POLICY_PATH}
    refused = cli(zk_connect, "alter", "--topic", "r", "--add-config", "segment.ms=1000", env=required)
    assert (
        refused.returncode == 1
        and "policy reason-required refuses: every change needs --reason" in refused.stderr
    )
    accepted = cli(
        zk_connect, "alter", "--topic", "r", "--add-config", "segment.ms=1000", "--reason", "x", env=required
    )
    assert accepted.returncode == 0
