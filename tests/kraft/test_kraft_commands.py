"""configctl's commands on a real Kafka 4.4 KRaft cluster, with no ZooKeeper anywhere.

Every family is written by configctl and read back by Kafka 4's own kafka-configs.sh, and the
other way round; history lives in the cluster (a second process reads it); a write that raced
configctl's is reported, never lost; what KRaft cannot do is refused in one line.
"""

from __future__ import annotations

import json

import pytest
from helpers import run_cli

from configctl.entities import Entity, EntityType
from configctl.errors import Conflict
from configctl.kraft import historytopic
from configctl.kraft.store import KRaftStore
from configctl.kraft.writes import KRaftWrites
from configctl.store import Change


def cli(kraft, *args: str):
    """``configctl --bootstrap-server <the cluster> ARGS``, as an operator types it."""
    return run_cli("--bootstrap-server", kraft.bootstrap, *args)


def described(kraft, *selector: str) -> str:
    """Kafka 4's kafka-configs.sh --describe output for ``selector``."""
    done = kraft.config_command("--describe", *selector)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_family_written_by_configctl_is_what_kafkas_tool_reads(kraft_combined, unique):
    kraft = kraft_combined
    topic, user, client = unique("orders"), unique("alice"), unique("app")
    kraft.create_topics(topic)
    writes = [
        (["--topic", topic], "retention.ms=86400000,cleanup.policy=[compact,delete]"),
        (
            ["--user", user],
            f"consumer_byte_rate=2048,SCRAM-SHA-256=[iterations=8192,password={unique('pw')}]",
        ),
        (["--client", client], "producer_byte_rate=1024"),
        (["--user", user, "--client", client], "request_percentage=50"),
        # a limit no client of the shared cluster comes near (4096 B/s would throttle every later
        # test's reads of configctl's history, configctl's own consumer included)
        (["--client-defaults"], "consumer_byte_rate=1073741824"),
        (["--ip", "10.1.2.3"], "connection_creation_rate=10"),
    ]
    for selector, config in writes:
        done = cli(kraft, "alter", *selector, "--add-config", config, "--reason", "kraft test")
        assert done.returncode == 0, done.stderr
        assert "change None" not in done.stdout
    assert "retention.ms=86400000" in described(kraft, "--entity-type", "topics", "--entity-name", topic)
    assert "cleanup.policy=compact,delete" in described(
        kraft, "--entity-type", "topics", "--entity-name", topic
    )
    shown = described(kraft, "--entity-type", "users", "--entity-name", user)
    assert "consumer_byte_rate=2048.0" in shown
    assert "SCRAM-SHA-256=iterations=8192" in shown
    assert "producer_byte_rate=1024.0" in described(
        kraft, "--entity-type", "clients", "--entity-name", client
    )
    assert "request_percentage=50.0" in described(
        kraft,
        "--entity-type",
        "users",
        "--entity-name",
        user,
        "--entity-type",
        "clients",
        "--entity-name",
        client,
    )
    assert "consumer_byte_rate=1.073741824E9" in described(
        kraft, "--entity-type", "clients", "--entity-default"
    )
    assert "connection_creation_rate=10.0" in described(
        kraft, "--entity-type", "ips", "--entity-name", "10.1.2.3"
    )
    # and configctl reads them back as it wrote them, the credential masked
    done = cli(kraft, "describe", "--user", user, "-o", "json")
    assert done.returncode == 0, done.stderr
    (doc,) = json.loads(done.stdout)
    assert doc["config"] == {"SCRAM-SHA-256": "******", "consumer_byte_rate": "2048"}
    assert unique("pw")[:3] not in done.stdout or "password" not in done.stdout


def test_broker_configs_go_to_the_broker_and_its_refusal_is_one_line(kraft_cluster):
    kraft = kraft_cluster
    broker = str(kraft.broker_ids[-1])
    refused = cli(kraft, "alter", "--broker", broker, "--add-config", "log.cleaner.threads=9")
    assert refused.returncode == 1
    assert "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    try:
        done = cli(kraft, "alter", "--broker", broker, "--add-config", "log.cleaner.threads=2")
        assert done.returncode == 0, done.stderr
        shown = described(kraft, "--entity-type", "brokers", "--entity-name", broker)
        assert "log.cleaner.threads=2" in shown
        other = described(kraft, "--entity-type", "brokers", "--entity-name", str(kraft.broker_ids[0]))
        assert "log.cleaner.threads=2" not in other
    finally:
        cli(kraft, "alter", "--broker", broker, "--delete-config", "log.cleaner.threads")


def test_kafkas_tool_writes_are_what_configctl_reads(kraft_combined, unique):
    """Every family written by Kafka 4's own kafka-configs.sh reads the same through configctl
    (quotas as numbers, a SCRAM credential as its iterations, never its secret)."""
    kraft = kraft_combined
    topic, user, client, group = unique("kafka-written"), unique("bob"), unique("app"), unique("grp")
    kraft.create_topics(topic)
    writes = [
        (["--entity-type", "topics", "--entity-name", topic], "retention.ms=3600000", ["--topic", topic],
         {"retention.ms": "3600000"}),
        (["--entity-type", "brokers", "--entity-name", "1"], "log.cleaner.backoff.ms=15500", ["--broker", "1"],
         {"log.cleaner.backoff.ms": "15500"}),
        (["--entity-type", "users", "--entity-name", user], "producer_byte_rate=1024", ["--user", user],
         {"producer_byte_rate": "1024"}),
        # Kafka's tool takes a user's quota and credential in two commands (it refuses both at once)
        (["--entity-type", "users", "--entity-name", user], "SCRAM-SHA-512=[iterations=4096,password=kafka-tool-pw]",
         ["--user", user], {"producer_byte_rate": "1024", "SCRAM-SHA-512": "******"}),
        (["--entity-type", "clients", "--entity-name", client], "consumer_byte_rate=2048", ["--client", client],
         {"consumer_byte_rate": "2048"}),
        (["--entity-type", "users", "--entity-name", user, "--entity-type", "clients", "--entity-name", client],
         "request_percentage=25", ["--user", user, "--client", client], {"request_percentage": "25"}),
        (["--entity-type", "ips", "--entity-name", "10.9.8.7"], "connection_creation_rate=7", ["--ip", "10.9.8.7"],
         {"connection_creation_rate": "7"}),
        (["--entity-type", "groups", "--entity-name", group], "consumer.session.timeout.ms=50000",
         ["--group", group], {"consumer.session.timeout.ms": "50000"}),
    ]  # fmt: skip
    try:
        for selector, config, ours, expected in writes:
            done = kraft.config_command("--alter", *selector, "--add-config", config)
            assert done.returncode == 0, (selector, done.stderr)
            shown = cli(kraft, "describe", *ours, "-o", "json")
            assert shown.returncode == 0, shown.stderr
            assert json.loads(shown.stdout)[0]["config"] == expected, selector
            assert "kafka-tool-pw" not in shown.stdout
    finally:
        kraft.config_command(
            "--alter",
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--delete-config",
            "log.cleaner.backoff.ms",
        )


def test_history_lives_in_the_cluster_and_a_second_process_reads_it(kraft_combined, unique):
    kraft = kraft_combined
    topic = unique("history")
    kraft.create_topics(topic)
    for value, reason in (("1000000", "first"), ("2000000", "ticket 7")):
        done = cli(
            kraft, "alter", "--topic", topic, "--add-config", f"retention.ms={value}", "--reason", reason
        )
        assert done.returncode == 0, done.stderr
    history = cli(kraft, "history", "--topic", topic, "-o", "json")  # another process than the writers
    assert history.returncode == 0, history.stderr
    records = (
        json.loads(history.stdout)["records"] if "records" in history.stdout else json.loads(history.stdout)
    )
    reasons = [r["reason"] for r in records if r.get("identity") != "outside configctl"]
    assert reasons[-2:] == ["first", "ticket 7"] or reasons[:2] == ["ticket 7", "first"]
    rolled = cli(kraft, "rollback", "--topic", topic, "--to", "0", "--yes")
    assert rolled.returncode == 0, rolled.stderr
    assert "retention.ms=1000000" in described(kraft, "--entity-type", "topics", "--entity-name", topic)
    with kraft.admin() as admin:
        assert historytopic.TOPIC in admin.topic_names()
        configs = admin.describe_topic(historytopic.TOPIC)
    assert configs["cleanup.policy"].value == "compact"


def test_a_write_outside_configctl_moves_the_version(kraft_combined, unique):
    kraft = kraft_combined
    topic = unique("raced")
    kraft.create_topics(topic)
    assert cli(kraft, "alter", "--topic", topic, "--add-config", "retention.ms=1000000").returncode == 0
    outside = kraft.config_command(
        "--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", "retention.ms=7777777"
    )
    assert outside.returncode == 0, outside.stderr
    done = cli(kraft, "alter", "--topic", topic, "--add-config", "retention.ms=5", "--if-version", "0")
    assert done.returncode == 5, done.stderr  # a conflict: the cluster moved past configctl's version 0
    assert "retention.ms=7777777" in described(kraft, "--entity-type", "topics", "--entity-name", topic)


def test_a_write_that_races_configctls_request_is_reported_and_recorded(kraft_combined, unique):
    """Another admin's request lands between configctl's version check and its own request: the
    read-back finds a config other than the one asked, which is recorded and reported."""
    kraft = kraft_combined
    topic = unique("race")
    kraft.create_topics(topic)
    entity = Entity.of(EntityType.TOPICS, topic)
    with KRaftStore(kraft.bootstrap, timeout=20) as store:
        writes = KRaftWrites(store)
        current = store.read(entity)
        real_alter = store.admin.alter_topic

        def raced_alter(*args, **kwargs):  # the other admin's write lands first, for real
            other = kraft.config_command(
                "--alter",
                "--entity-type",
                "topics",
                "--entity-name",
                topic,
                "--add-config",
                "segment.ms=7200000",
            )
            assert other.returncode == 0, other.stderr
            return real_alter(*args, **kwargs)

        store.admin.alter_topic = raced_alter  # type: ignore[method-assign]
        change = Change(entity, {"retention.ms": "600000"}, current.version, previous=current.config)
        with pytest.raises(Conflict, match="another writer"):
            writes.commit([change], reason="raced")
        recorded = store.history(entity)
    assert recorded[-1].config == {"retention.ms": "600000", "segment.ms": "7200000"}
    assert recorded[-1].reason == "raced"


def test_a_zookeeper_given_with_a_kraft_cluster_is_refused(kraft_combined):
    done = run_cli(
        "--zookeeper",
        "127.0.0.1:2181",
        "--bootstrap-server",
        kraft_combined.bootstrap,
        "describe",
        "--topic",
        "orders",
    )
    assert done.returncode == 1
    assert "runs in KRaft mode" in done.stderr and "drop --zookeeper" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_what_kraft_cannot_do_is_refused_in_one_line(kraft_combined):
    """``status`` and canaries work on KRaft (each broker is asked; rollout records live in the
    cluster); retiring a broker is refused, in one line: the controllers unregister a broker themselves."""
    done = cli(kraft_combined, "retire", "7")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and "controllers unregister" in done.stderr, done.stderr


def test_a_desired_state_file_is_judged_by_the_clusters_release_as_alter_is(kraft_combined, unique, tmp_path):
    """A key Kafka 4 removed passes the file's own checks (made before any cluster is asked) and
    is refused by ``plan`` and ``apply`` on a 4.x cluster in the words ``alter`` uses; nothing written."""
    kraft = kraft_combined
    topic = unique("old-format")
    kraft.create_topics(topic)
    alter = cli(kraft, "alter", "--topic", topic, "--add-config", "message.format.version=3.0-IV1")
    assert alter.returncode == 1 and len(alter.stderr.strip().splitlines()) == 1, alter.stderr
    assert "message.format.version was removed in Kafka 4" in alter.stderr
    file = tmp_path / "desired.yaml"
    file.write_text(f"topics:\n  {topic}: {{retention.ms: 3600000, message.format.version: 3.0-IV1}}\n")
    for command in (["plan"], ["apply", "--yes"]):
        done = cli(kraft, *command, "-f", str(file))
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, (command, done.stderr)
        assert "message.format.version was removed in Kafka 4" in done.stderr, (command, done.stderr)
    shown = described(kraft, "--entity-type", "topics", "--entity-name", topic)
    assert "retention.ms" not in shown and "message.format.version" not in shown
