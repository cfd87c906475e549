"""Real Kafka 4.4 KRaft clusters start, Kafka 4's own kafka-configs.sh changes configs on them, and
configctl's Admin API client (kafka-python's protocol classes) reads what they report.

Each test runs on both shapes (``kraft``): the combined node and the brokers with their own
controller.
"""

from __future__ import annotations

from helpers import wait_for

from configctl.entities import Entity, EntityType
from configctl.reported import ReportedSynonym


def test_the_nodes_start_as_one_kraft_cluster(kraft):
    with kraft.admin() as admin:
        assert admin.broker_ids() == kraft.broker_ids
        assert admin.cluster_id() == kraft.cluster.cluster_id
        defaults = admin.describe_broker(kraft.broker_ids[0], default=True)
    # A fresh 4.4 cluster is not empty at the cluster-wide layer: formatting writes
    # min.insync.replicas=1 there (eligible leader replicas, KIP-966), and both the brokers and
    # the controller quorum say so.
    assert {name: c.value for name, c in defaults.items()} == {"min.insync.replicas": "1"}
    assert defaults["min.insync.replicas"].source == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    for controller in (False, True):
        described = kraft.config_command(
            "--describe", "--entity-type", "brokers", "--entity-default", controller=controller
        )
        assert described.returncode == 0, described.stderr
        assert "min.insync.replicas=1 sensitive=false" in described.stdout


def test_kafka4_config_command_alters_a_topic_config_and_configctl_reads_it(kraft, unique):
    topic = unique("kraft-topic")
    kraft.create_topics(topic)
    altered = kraft.config_command(
        "--alter", "--entity-type", "topics", "--entity-name", topic,
        "--add-config", "retention.ms=123456789,cleanup.policy=[compact,delete]",
    )  # fmt: skip
    assert altered.returncode == 0, altered.stderr
    described = kraft.config_command("--describe", "--entity-type", "topics", "--entity-name", topic)
    assert described.returncode == 0, described.stderr
    assert "retention.ms=123456789 sensitive=false" in described.stdout
    assert "cleanup.policy=compact,delete sensitive=false" in described.stdout
    with kraft.admin() as admin:
        reported = admin.describe_topic(topic, ["retention.ms", "cleanup.policy"])
    assert reported["retention.ms"].value == "123456789"
    assert reported["retention.ms"].source == "DYNAMIC_TOPIC_CONFIG"
    assert reported["cleanup.policy"].value == "compact,delete"


def test_kafka4_config_command_alters_a_broker_config_and_configctl_reads_it(kraft):
    broker = kraft.broker_ids[-1]
    target = ("--entity-type", "brokers", "--entity-name", str(broker))
    altered = kraft.config_command("--alter", *target, "--add-config", "log.cleaner.threads=2")
    assert altered.returncode == 0, altered.stderr
    try:
        with kraft.admin() as admin:
            # The controller commits the change, the broker applies it from the metadata log.
            wait_for(
                lambda: (
                    admin.describe_broker(broker, ["log.cleaner.threads"])["log.cleaner.threads"].value == "2"
                ),
                timeout=30,
                message="the broker applies log.cleaner.threads=2",
            )
            reported = admin.describe_broker(broker, ["log.cleaner.threads"])["log.cleaner.threads"]
        assert reported.source == "DYNAMIC_BROKER_CONFIG"
        assert reported.synonyms == (
            ReportedSynonym("log.cleaner.threads", "2", "DYNAMIC_BROKER_CONFIG"),
            ReportedSynonym("log.cleaner.threads", "1", "DEFAULT_CONFIG"),
        )
        described = kraft.config_command("--describe", *target)
        assert described.returncode == 0, described.stderr
        assert "log.cleaner.threads=2 sensitive=false" in described.stdout
    finally:
        restored = kraft.config_command("--alter", *target, "--delete-config", "log.cleaner.threads")
        assert restored.returncode == 0, restored.stderr


def test_a_scram_login_on_the_sasl_listener_reads_configs_and_credentials(kraft):
    with kraft.admin(scram=True) as admin:  # the user formatting bootstrapped, logged in
        assert admin.scram_credentials(kraft.scram_user) == {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096}
        assert admin.describe_broker(kraft.broker_ids[0], ["log.retention.hours"])[
            "log.retention.hours"
        ].value
    described = kraft.config_command(
        "--describe", "--entity-type", "users", "--entity-name", kraft.scram_user, scram=True
    )
    assert described.returncode == 0, described.stderr
    assert "SCRAM-SHA-512=iterations=4096" in described.stdout


def test_kafka4_config_command_sets_a_quota_and_configctl_reads_it(kraft, unique):
    user = unique("kraft-user")
    target = ("--entity-type", "users", "--entity-name", user)
    altered = kraft.config_command("--alter", *target, "--add-config", "producer_byte_rate=1048576")
    assert altered.returncode == 0, altered.stderr
    with kraft.admin() as admin:
        wait_for(
            lambda: (
                admin.client_quotas(Entity.named(EntityType.USERS, user)) == {"producer_byte_rate": "1048576"}
            ),
            timeout=30,
            message="the quota reported",
        )
