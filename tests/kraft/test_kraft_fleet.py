"""``--wait``, ``status`` and ``describe --effective --broker N`` on real Kafka 4.4 KRaft clusters.

No configctl listener runs on KRaft: the truth is what each broker reports when asked itself.
A write's ``--wait`` asks every registered broker until each reports the written value; a broker
that is stopped does not answer and the wait says so (exit 10, ``unreachable``); ``status`` shows
the brokers, the controller quorum and what each broker answers; ``describe --effective --broker
2`` is what broker 2 reports, compared with Kafka 4's own kafka-configs.sh. A canary on a combined
node is judged by that node (tests/kraft/test_kraft_rollouts.py has the rest of rollouts on KRaft).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from conftest import KAFKA4_HOME, KRaftFleet
from helpers import run_cli, wait_for

from configctl.localkraft import KRaftCluster


def cli(kraft: KRaftFleet, *args: str):
    """``configctl --bootstrap-server <the cluster> ARGS``, as an operator types it."""
    return run_cli("--bootstrap-server", kraft.bootstrap, *args)


def rollout_of(done) -> dict[int, str]:
    """Each broker's wait status in ``-o json`` output."""
    document = json.loads(done.stdout)
    return {b["broker_id"]: b["status"] for b in document["rollout"]["brokers"]}


def test_wait_ends_when_every_broker_reports_the_topic_config(kraft, unique):
    topic = unique("waited")
    kraft.create_topics(topic)
    done = cli(
        kraft, "alter", "--topic", topic, "--add-config", "retention.ms=7200000", "--wait", "60", "-o", "json"
    )
    assert done.returncode == 0, done.stderr
    assert rollout_of(done) == dict.fromkeys(kraft.broker_ids, "applied")
    assert json.loads(done.stdout)["rollout"]["change_number"] is None  # KRaft writes get no change number
    again = cli(
        kraft, "alter", "--topic", topic, "--add-config", "retention.ms=7200000", "--wait", "60", "-o", "json"
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["changed"] is False  # nothing written: where the brokers stand with it
    assert rollout_of(again) == dict.fromkeys(kraft.broker_ids, "applied")


def test_wait_asks_the_default_from_every_broker_and_a_broker_only_for_itself(kraft_cluster, unique):
    kraft = kraft_cluster
    client = unique("waited-app")
    try:
        done = cli(
            kraft,
            "alter",
            "--broker-defaults",
            "--add-config",
            "log.cleaner.threads=2",
            "--wait",
            "60",
            "-o",
            "json",
        )
        assert done.returncode == 0, done.stderr
        assert rollout_of(done) == {1: "applied", 2: "applied"}
        done = cli(
            kraft,
            "alter",
            "--broker",
            "2",
            "--add-config",
            "log.cleaner.threads=3",
            "--wait",
            "60",
            "-o",
            "json",
        )
        assert done.returncode == 0, done.stderr
        assert rollout_of(done) == {2: "applied"}  # broker 1 does not take broker 2's own config
    finally:
        cli(kraft, "alter", "--broker", "2", "--delete-config", "log.cleaner.threads")
        cli(kraft, "alter", "--broker-defaults", "--delete-config", "log.cleaner.threads")
    done = cli(
        kraft,
        "alter",
        "--client",
        client,
        "--add-config",
        "producer_byte_rate=4096",
        "--wait",
        "60",
        "-o",
        "json",
    )
    assert done.returncode == 0, done.stderr
    assert rollout_of(done) == {1: "applied", 2: "applied"}
    piped = cli(kraft, "alter", "--client", client, "--add-config", "producer_byte_rate=8192", "--wait", "60")
    assert piped.returncode == 0, piped.stderr
    assert "broker 1: applied" in piped.stderr + piped.stdout
    assert "broker 2: applied" in piped.stderr + piped.stdout


def test_wait_asks_every_broker_for_a_group_config(kraft_cluster, unique):
    group = unique("waited-group")  # Kafka 4.4 takes a group's configs before any member joins
    done = cli(
        kraft_cluster,
        "alter",
        "--group",
        group,
        "--add-config",
        "consumer.session.timeout.ms=50000",
        "--wait",
        "60",
        "-o",
        "json",
    )
    assert done.returncode == 0, done.stderr
    assert rollout_of(done) == {1: "applied", 2: "applied"}


def test_status_shows_brokers_quorum_and_what_each_broker_answers(kraft_cluster):
    kraft = kraft_cluster
    done = cli(kraft, "status", "-o", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["mode"] == "kraft"
    assert document["metadata_version"].startswith("4.4")
    assert document["kafka_release"] == "4.4"
    brokers = {b["broker_id"]: b for b in document["brokers"]}
    assert sorted(brokers) == [1, 2]
    for broker in brokers.values():
        assert broker["fenced"] is False
        assert broker["answers"] is True and broker["reason"] is None
        assert f"{broker['host']}:{broker['port']}" in kraft.bootstrap.split(",")
        assert broker["config_digest"].startswith("sha256:")
        assert broker["not_applied"] == []  # every broker runs what its metadata holds
    quorum = document["quorum"]
    assert quorum["leader_id"] == 100
    assert [v["node_id"] for v in quorum["voters"]] == [100]
    assert {o["node_id"] for o in quorum["observers"]} >= {1, 2}
    assert all(isinstance(n["log_end_offset"], int) for n in quorum["voters"] + quorum["observers"])
    table = cli(kraft, "status")
    assert table.returncode == 0, table.stderr
    assert "Controller quorum (leader 100" in table.stdout
    assert "KRaft cluster" in table.stdout and "4.4" in table.stdout
    one = cli(kraft, "status", "--broker", "2", "-o", "json")
    assert [b["broker_id"] for b in json.loads(one.stdout)["brokers"]] == [2]
    missing = cli(kraft, "status", "--broker", "7")
    assert missing.returncode == 6 and len(missing.stderr.strip().splitlines()) == 1


_ALL_LINE = re.compile(r"^\s+([^=\s]+)=(.*?) sensitive=(true|false) synonyms=\{(.*)\}$")


def kafka_all(kraft: KRaftFleet, *selector: str) -> dict[str, tuple[str | None, str]]:
    """Kafka 4's ``kafka-configs.sh --describe --all``: key -> (value, source of the value)."""
    done = kraft.config_command("--describe", "--all", *selector)
    assert done.returncode == 0, done.stderr
    found = {}
    for line in done.stdout.splitlines():
        match = _ALL_LINE.match(line)
        if match:
            name, value, _, synonyms = match.groups()
            source = synonyms.split(":", 1)[0] if synonyms else ""
            found[name] = (None if value == "null" else value, source)
    return found


def test_describe_effective_on_broker_2_is_what_kafkas_tool_reports(kraft_cluster, unique):
    kraft = kraft_cluster
    try:
        done = cli(kraft, "alter", "--broker", "2", "--add-config", "log.cleaner.threads=2")
        assert done.returncode == 0, done.stderr
        ours = cli(kraft, "describe", "--effective", "--broker", "2", "-o", "json")
        assert ours.returncode == 0, ours.stderr
        document = json.loads(ours.stdout)
        assert document["truth"] == "reported"
        reported = {c["name"]: (c["value"], c["source"]) for c in document["configs"]}
        theirs = kafka_all(kraft, "--entity-type", "brokers", "--entity-name", "2")
        keys = [
            "log.cleaner.threads",
            "num.network.threads",
            "log.retention.hours",
            "node.id",
            "process.roles",
        ]
        for key in keys:
            assert reported[key] == theirs[key], key
        assert reported["log.cleaner.threads"] == ("2", "DYNAMIC_BROKER_CONFIG")
        synonyms = next(c["synonyms"] for c in document["configs"] if c["name"] == "log.cleaner.threads")
        assert synonyms[0]["source"] == "DYNAMIC_BROKER_CONFIG"
        table = cli(kraft, "describe", "--effective", "--broker", "2")
        assert "reported by the broker itself" in table.stdout
    finally:
        cli(kraft, "alter", "--broker", "2", "--delete-config", "log.cleaner.threads")
    topic = unique("effective")
    kraft.create_topics(topic, configs={"retention.ms": "3600000"})
    ours = cli(kraft, "describe", "--effective", "--broker", "2", "--topic", topic, "-o", "json")
    assert ours.returncode == 0, ours.stderr
    reported = {c["name"]: (c["value"], c["source"]) for c in json.loads(ours.stdout)["configs"]}
    theirs = kafka_all(kraft, "--entity-type", "topics", "--entity-name", topic)
    for key in ("retention.ms", "cleanup.policy", "segment.bytes"):
        assert reported[key] == theirs[key], key
    assert reported["retention.ms"] == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    quota = cli(kraft, "describe", "--effective", "--broker", "2", "--client", "app")
    assert quota.returncode == 1 and len(quota.stderr.strip().splitlines()) == 1


def test_a_canary_on_a_combined_node_is_judged_by_that_node_and_promoted(kraft_combined):
    """The canary broker is also the cluster's controller: it is asked as any broker is."""
    try:
        done = cli(
            kraft_combined,
            "alter",
            "--broker-defaults",
            "--add-config",
            "log.cleaner.threads=2",
            "--canary",
            "1",
        )
        assert done.returncode == 0, done.stdout + done.stderr
        shown = kraft_combined.config_command("--describe", "--entity-type", "brokers", "--entity-default")
        assert "log.cleaner.threads=2" in shown.stdout
    finally:
        cli(kraft_combined, "alter", "--broker-defaults", "--delete-config", "log.cleaner.threads")


@pytest.fixture(scope="module")
def stoppable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftFleet]:
    """A KRaft cluster of this module's own (brokers 1, 2 and controller 100): its broker 2 is stopped."""
    work = tmp_path_factory.mktemp("kraft-stoppable")
    cluster = KRaftCluster(KAFKA4_HOME, work, brokers=2, combined=False)
    fleet = KRaftFleet(cluster, work / "unused.properties")
    cluster.start()
    try:
        with fleet.admin() as admin:
            wait_for(lambda: admin.broker_ids() == [1, 2], timeout=60, message="every broker registered")
        yield fleet
    finally:
        cluster.stop()


def test_a_stopped_broker_is_unreachable_and_the_wait_fails(stoppable, unique):
    kraft = stoppable
    topic = unique("stopped")
    kraft.create_topics(topic)
    first = cli(kraft, "alter", "--topic", topic, "--add-config", "retention.ms=600000", "--wait", "60")
    assert first.returncode == 0, first.stderr  # both brokers answer (and configctl's history topic exists)
    kraft.cluster.stop(ids=[2])

    def fenced() -> bool:
        listed = cli(kraft, "status", "-o", "json")
        return listed.returncode == 0 and any(
            b["broker_id"] == 2 and b["fenced"] for b in json.loads(listed.stdout)["brokers"]
        )

    wait_for(fenced, timeout=60, message="broker 2 fenced")
    done = cli(
        kraft, "alter", "--topic", topic, "--add-config", "retention.ms=900000", "--wait", "3", "-o", "json"
    )
    assert done.returncode == 10, done.stderr
    assert rollout_of(done) == {1: "applied", 2: "unreachable"}
    assert "broker(s) 2 (unreachable) had not applied it after 3s" in done.stderr
    assert "(change None)" not in done.stderr
    status = json.loads(cli(kraft, "status", "-o", "json").stdout)
    down = next(b for b in status["brokers"] if b["broker_id"] == 2)
    assert down["fenced"] is True and down["answers"] is False and down["reason"]
    up = next(b for b in status["brokers"] if b["broker_id"] == 1)
    assert up["answers"] is True
