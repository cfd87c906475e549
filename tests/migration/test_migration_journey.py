"""A real ZooKeeper-to-KRaft migration, run by the runbook (docs/migration.md), witnessed by configctl.

One module-scoped journey: Kafka 3.9.2 brokers 1 and 2 on a chroot of the session's ZooKeeper,
configs of every family written by configctl and by Kafka's own tool, then Kafka's procedure
(:mod:`configctl.localmigration`): a 3.9.2 KRaft controller in migration mode, the brokers
restarted into migration mode, dual-write, the brokers restarted as KRaft brokers, finalized.
Each step of the runbook is one step of the journey (``RUNBOOK``), and what configctl says at each
step is kept for the tests below. Nothing is modelled: every phase, every value and every
difference is what the real nodes report.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import REPO_ROOT, CliResult, child_env, create_topics, run_cli, wait_for
from kazoo.client import KazooClient

from configctl.localkafka import KafkaCluster
from configctl.localmigration import KRaftMigration
from configctl.localzk import LocalZooKeeper
from configctl.localzk.client import ClientSettings
from configctl.timeref import iso
from configctl.zk.configstore import ZooKeeperStore

KAFKA_HOME = REPO_ROOT / "build" / "kafka"
RUNBOOK_PATH = REPO_ROOT / "docs" / "migration.md"
RUNBOOK = (
    "Step 1: look before you start",
    "Step 2: provision the KRaft controllers",
    "Step 3: restart the brokers into migration mode",
    "Step 4: carry configctl's history",
    "Step 5: work through the KRaft side",
    "Step 6: restart the brokers as KRaft brokers",
    "Step 7: prove it, then finalize",
    "Step 8: after the migration",
)
"""The runbook's steps, in order: docs/migration.md's ``##`` headings are exactly these."""


@dataclass
class Journey:
    """What configctl said at each step, by step and name."""

    zookeeper: str
    bootstrap: str = ""
    said: dict[str, CliResult] = field(default_factory=dict)
    kafka: dict[str, str] = field(default_factory=dict)
    before_ms: int = 0
    """A moment after every write before the migration, before its first step."""

    def json(self, name: str) -> dict:
        result = self.said[name]
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)


def _phase(journey: Journey, name: str) -> str:
    return journey.json(name)["phase"]


@pytest.fixture(scope="module")
def journey(zk_server: LocalZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Journey]:
    work: Path = tmp_path_factory.mktemp("migration")
    zookeeper = f"{zk_server.connect_string}/migration-journey"
    cluster = KafkaCluster(KAFKA_HOME, work, ClientSettings(zookeeper), 2)
    migration = KRaftMigration(cluster)
    trip = Journey(zookeeper)
    recorder: subprocess.Popen[bytes] | None = None
    listener: subprocess.Popen[bytes] | None = None
    state_dir = work / "state-1"

    def zk(name: str, *args: str) -> None:  # configctl against ZooKeeper (and the brokers when given)
        trip.said[name] = run_cli("--zookeeper", zookeeper, *args, timeout=180)

    def both(name: str, *args: str) -> None:
        trip.said[name] = run_cli(
            "--zookeeper", zookeeper, "--bootstrap-server", cluster.bootstrap, *args, timeout=180
        )

    def kafka(name: str, *args: str) -> None:
        trip.said[name] = run_cli("--bootstrap-server", cluster.bootstrap, *args, timeout=180)

    def zookeeper_default(name: str, config: str) -> None:  # Kafka's own tool, straight into ZooKeeper
        done = cluster.config_command(
            "--alter", "--entity-type", "brokers", "--entity-default", "--add-config", config, zookeeper=True
        )  # fmt: skip
        trip.kafka[name] = done.stdout + done.stderr
        assert done.returncode == 0, trip.kafka[name]

    try:
        cluster.start()
        trip.bootstrap = cluster.bootstrap
        create_topics(cluster.bootstrap, "orders", "payments")
        # Beside ZooKeeper-mode broker 1, its listener, keeping an applied log in its state directory.
        listener = subprocess.Popen(
            [sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", zookeeper, "--broker-id", "1",
             "--server-properties", str(cluster.brokers[1].properties_file), "--state-dir", str(state_dir)],
            stdout=subprocess.DEVNULL, stderr=open(work / "listener.log", "w"), env=child_env(),  # noqa: SIM115
        )  # fmt: skip
        with ZooKeeperStore.connect(zookeeper) as store:
            wait_for(lambda: 1 in store.broker_states(), timeout=90, message="the listener beside broker 1")
        # Configs of every family, before: configctl on ZooKeeper, and Kafka's own tool.
        zk(
            "w-topic",
            "alter",
            "--topic",
            "orders",
            "--add-config",
            "retention.ms=86400000",
            "--reason",
            "before",
        )
        both("w-default", "alter", "--broker-defaults", "--add-config", "log.retention.ms=3600000")
        both("w-broker", "alter", "--broker", "2", "--add-config", "log.cleaner.threads=2")
        zk(
            "w-pair",
            "alter",
            "--user",
            "alice",
            "--client",
            "app1",
            "--add-config",
            "consumer_byte_rate=2048",
        )
        zk(
            "w-scram",
            "alter",
            "--user",
            "alice",
            "--add-config",
            "SCRAM-SHA-256=[iterations=8192,password=alice-pw]",
        )
        zk("w-ip", "alter", "--ip", "10.0.0.1", "--add-config", "connection_creation_rate=10")
        zk("w-user-default", "alter", "--user-defaults", "--add-config", "producer_byte_rate=1048576")
        for name, args in {
            "k-topic": (
                "--entity-type",
                "topics",
                "--entity-name",
                "payments",
                "--add-config",
                "retention.ms=600000",
            ),
            "k-client-default": (
                "--entity-type",
                "clients",
                "--entity-default",
                "--add-config",
                "request_percentage=50",
            ),
        }.items():
            done = cluster.config_command("--alter", *args)
            trip.kafka[name] = done.stdout + done.stderr
            assert done.returncode == 0, done.stderr
        # A canary rollout, finished before the migration: its record is carried across.
        both(
            "w-rollout", "-o", "json", "alter", "--broker-defaults", "--add-config", "log.cleaner.backoff.ms=20000",
            "--canary", "1", "--soak", "1s", "--wait", "60", "--reason", "canary before",
        )  # fmt: skip
        # What Kafka 4 will not take, valid on 3.9: written now, found by the lint.
        zk("w-lint-topic", "alter", "--topic", "orders", "--add-config", "segment.bytes=100000")
        both("w-lint-broker", "alter", "--broker", "1", "--add-config", "min.insync.replicas=1")
        zk(
            "w-lint-renamed",
            "alter",
            "--topic",
            "payments",
            "--add-config",
            "message.timestamp.difference.max.ms=3600000",
        )
        # Step 1: look before you start.
        both("1-status", "-o", "json", "migration", "status")
        zk("1-lint", "migration", "lint", "--to", "4.1")
        zk("1-lint-json", "-o", "json", "migration", "lint")
        desired = work / "desired.yaml"
        desired.write_text("topics:\n  orders:\n    segment.bytes: '100000'\n", encoding="utf-8")
        zk("1-plan", "plan", "-f", str(desired), "--to-kafka", "4.4")
        before = work / "before.yaml"
        zk("1-export", "export", "--no-secrets", "--file", str(before))
        both("1-check", "migration", "check")
        trip.before_ms = int(time.time() * 1000)
        # Step 2: provision the KRaft controllers.
        migration.start_controllers()
        both("2-status", "-o", "json", "migration", "status")
        # Step 3: restart the brokers into migration mode.
        migration.brokers_into_migration()
        migration.wait_migrated()
        both("3-status", "-o", "json", "migration", "status")
        both("3-check", "migration", "check")
        # Step 4: carry configctl's history.
        both("4-carry", "-o", "json", "migration", "carry")
        both("4-carry-again", "-o", "json", "migration", "carry")
        kafka("4-rollouts", "-o", "json", "rollout", "list")
        # Step 5: work through the KRaft side.
        kafka(
            "5-write",
            "alter",
            "--topic",
            "orders",
            "--add-config",
            "retention.ms=7200000",
            "--reason",
            "dual-write",
        )
        zk("5-zk-write", "alter", "--topic", "orders", "--add-config", "retention.ms=1")
        zk("5-zk-describe", "-o", "json", "describe", "--topic", "orders")
        both("5-with-zk", "alter", "--topic", "orders", "--add-config", "retention.ms=2")
        during = cluster.config_command(
            "--alter", "--entity-type", "topics", "--entity-name", "payments", "--add-config", "retention.ms=900000"
        )  # fmt: skip
        trip.kafka["5-outside"] = during.stdout + during.stderr
        assert during.returncode == 0, trip.kafka["5-outside"]
        # The gate during dual-write: the brokers still answer from ZooKeeper, the controllers do not.
        both("5-check", "-o", "json", "migration", "check")
        with _node_changed(
            zookeeper, "/config/topics/payments", {"retention.ms": "1"}
        ):  # a stray hand-made write
            both("5-check-stray", "migration", "check")
        # Step 6: restart the brokers as KRaft brokers, each listener as its flight recorder.
        listener.terminate()
        listener.wait(timeout=30)
        both("6-carry-applied", "-o", "json", "migration", "carry", "--applied-log", str(state_dir))
        migration.brokers_to_kraft()
        both("6-status", "-o", "json", "migration", "status")
        # Beside KRaft broker 1, its flight recorder: the same command as the listener's.
        recorder = subprocess.Popen(
            [sys.executable, "-m", "configctl", "listener", "run", "--broker-id", "1",
             "--server-properties", str(cluster.brokers[1].properties_file)],
            stdout=subprocess.DEVNULL, stderr=open(work / "recorder.log", "w"), env=child_env(),  # noqa: SIM115
        )  # fmt: skip
        wait_for(
            lambda: "recorded " in (work / "recorder.log").read_text(encoding="utf-8"),
            timeout=60,
            message="the flight recorder beside the migrated broker 1",
        )
        kafka("6-lint", "-o", "json", "migration", "lint")
        # Step 7: prove it (a stray write into ZooKeeper fails the gate), then finalize.
        # Kafka 3.9's kafka-configs.sh --zookeeper writes a broker default while no broker is
        # registered in ZooKeeper (KRaft brokers are not): the KRaft controller never reads it.
        zookeeper_default("7-stray", "log.retention.ms=1")
        both("7-check-stray", "migration", "check")
        both("7-check-stray-json", "-o", "json", "migration", "check")
        zookeeper_default("7-undo", "log.retention.ms=3600000")
        both("7-check", "migration", "check")
        migration.finalize()
        both("7-status", "-o", "json", "migration", "status")
        both("7-check-final", "migration", "check")
        zk("7-zk-describe", "describe", "--topic", "orders")
        # Step 8: after the migration.
        done = cluster.config_command(
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "orders",
            "--add-config",
            "retention.ms=5000",
        )
        trip.kafka["8-outside"] = done.stdout + done.stderr
        assert done.returncode == 0, trip.kafka["8-outside"]
        wait_for(
            lambda: _recorded(cluster.bootstrap, "topics/orders", "5000"),
            timeout=60,
            message="the recorder's record of Kafka's tool's write after finalizing",
        )
        kafka(
            "8-write",
            "alter",
            "--topic",
            "orders",
            "--add-config",
            "retention.ms=3600000",
            "--reason",
            "after",
        )
        kafka("8-history", "-o", "json", "history", "--topic", "orders")
        kafka("8-blame", "-o", "json", "blame", "--broker", "1", "--topic", "orders", "--key", "retention.ms")
        kafka("8-status", "-o", "json", "migration", "status")
        kafka("8-payments", "-o", "json", "history", "--topic", "payments")
        kafka("8-since", "-o", "json", "history", "--since", "-1h")
        kafka("8-rollouts", "-o", "json", "rollout", "list")
        moment = iso(trip.before_ms)
        kafka("8-at", "-o", "json", "describe", "--effective", "--broker", "1", "--topic", "orders",
              "--at", moment, "--applied-log", str(state_dir))  # fmt: skip
        kafka("8-at-carried", "-o", "json", "describe", "--effective", "--broker", "1", "--topic", "orders",
              "--at", moment)  # fmt: skip
        both("8-check", "migration", "check")
        # A desired-state file written before the migration applies after it.
        kafka("8-plan", "-o", "json", "plan", "-f", str(before))
        kafka("8-apply", "apply", "-f", str(before), "--yes", "--reason", "back to before")
        kafka("8-plan-again", "plan", "-f", str(before))
        yield trip
    finally:
        for process in (listener, recorder):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(timeout=30)
        migration.stop()


@contextmanager
def _node_changed(zookeeper: str, path: str, changes: dict[str, str]) -> Iterator[None]:
    """A write straight into ZooKeeper's ``path`` (as a hand-made tool would make it, no notification),
    undone after: Kafka's own tool writes no topic config to ZooKeeper in 3.9."""
    client = KazooClient(hosts=zookeeper, timeout=10.0)
    client.start(timeout=30)
    try:
        before, _ = client.get(path)
        document = json.loads(before)
        document["config"] = {**document["config"], **changes}
        client.set(path, json.dumps(document).encode())
        try:
            yield
        finally:
            client.set(path, before)
    finally:
        client.stop()
        client.close()


def _recorded(bootstrap: str, path: str, value: str) -> bool:
    """Whether the recorder's record of an outside write leaving ``value`` is in history yet."""
    entity = {"topics": "--topic"}[path.split("/")[0]]
    result = run_cli("--bootstrap-server", bootstrap, "-o", "json", "history", entity, path.split("/", 1)[1])
    if result.returncode != 0:
        return False
    return any(
        r.get("written_outside_configctl") and r.get("change_number") is not None
        and (r.get("config") or {}).get("retention.ms") == value
        for r in json.loads(result.stdout)
    )  # fmt: skip


def test_the_runbook_steps_are_the_suites_steps() -> None:
    headings = re.findall(r"^## (Step [0-9]+: .+)$", RUNBOOK_PATH.read_text(encoding="utf-8"), re.M)
    assert tuple(headings) == RUNBOOK


def test_every_family_was_written_before(journey: Journey) -> None:
    for name in [name for name in journey.said if name.startswith("w-")]:
        assert journey.said[name].returncode == 0, (name, journey.said[name].stderr)


def test_status_names_each_phase_as_the_nodes_report_it(journey: Journey) -> None:
    assert _phase(journey, "1-status") == "zookeeper"
    assert _phase(journey, "2-status") == "migrating"
    assert _phase(journey, "3-status") == "dual-write"
    assert _phase(journey, "6-status") == "dual-write"
    assert _phase(journey, "7-status") == "kraft"
    # Without ZooKeeper the controllers still tell: the brokers name them in their own config.
    assert _phase(journey, "8-status") == "kraft"
    third = journey.json("3-status")
    assert {b["mode"] for b in third["brokers"]} == {"zookeeper, migration mode"}
    assert [c["mode"] for c in third["controllers"]] == ["kraft, migration mode"]
    assert third["zookeeper"]["migration"]["phase"] == "migrated"
    sixth = journey.json("6-status")
    assert {b["mode"] for b in sixth["brokers"]} == {"kraft"}
    assert [c["mode"] for c in sixth["controllers"]] == ["kraft, migration mode"]
    final = journey.json("7-status")
    assert [c["mode"] for c in final["controllers"]] == ["kraft"]
    assert final["next_step"] is None
    assert journey.json("8-status")["zookeeper"] is None


def test_lint_names_what_kafka_4_will_not_take(journey: Journey) -> None:
    lint = journey.said["1-lint"]
    assert lint.returncode == 2, lint.stdout + lint.stderr
    lines = [line for line in lint.stdout.splitlines() if ": " in line and not line.startswith("Kafka ")]
    assert sorted(line.split(":")[0] for line in lines) == ["broker-min-isr", "refused-value", "removed"], (
        lines
    )
    assert any("topic 'payments': message.timestamp.difference.max.ms" in line for line in lines)
    assert any("segment.bytes: 100000 is less than Kafka 4.4's minimum 1048576" in line for line in lines)
    assert any(line.startswith("broker-min-isr: broker '1': min.insync.replicas") for line in lines)
    # Kafka 4.0 has no eligible leader replicas: the default target (4.4) has them.
    doc = (
        journey.json("1-lint-json")
        if journey.said["1-lint-json"].returncode == 0
        else json.loads(journey.said["1-lint-json"].stdout)
    )
    assert doc["target"] == "4.4" and doc["clean"] is False and len(doc["findings"]) == 3
    # After the migration the same configs are the KRaft cluster's, and the lint reads them there.
    after = json.loads(journey.said["6-lint"].stdout)
    assert sorted(f["kind"] for f in after["findings"]) == sorted(f["kind"] for f in doc["findings"])
    plan = journey.said["1-plan"]
    assert "Kafka 4.4: refused-value: topic 'orders': segment.bytes: 100000" in plan.stdout + plan.stderr


def test_check_needs_a_kraft_side(journey: Journey) -> None:
    before = journey.said["1-check"]
    assert before.returncode == 1
    assert "run in ZooKeeper mode" in before.stderr and len(before.stderr.strip().splitlines()) == 1


def test_check_passes_on_the_migrated_cluster(journey: Journey) -> None:
    for name in ("7-check", "7-check-final"):
        result = journey.said[name]
        assert result.returncode == 0, result.stdout + result.stderr
        assert "equal (topics 2, brokers 2, default 1, quotas 4, scram 1)" in result.stdout


def test_check_fails_naming_the_entity_that_differs(journey: Journey) -> None:
    result = journey.said["7-check-stray"]
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("different:")]
    assert lines == [
        "different: default broker: log.retention.ms: ZooKeeper holds '1', the KRaft side '3600000'"
    ]
    doc = json.loads(journey.said["7-check-stray-json"].stdout)
    assert doc["equal"] is False
    assert doc["families"]["default"] == {"entities": 1, "differences": 1}
    assert doc["differences"][0]["entity"] == "brokers/<default>"
    # After finalizing nothing writes ZooKeeper: Kafka's tool's write shows ZooKeeper stale.
    after = journey.said["8-check"]
    assert after.returncode == 2
    assert (
        "different: topic 'orders': retention.ms: ZooKeeper holds '7200000', the KRaft side '3600000'"
        in after.stdout
    )


def test_the_scram_secret_is_compared_never_printed(journey: Journey) -> None:
    for result in journey.said.values():
        assert "alice-pw" not in result.stdout + result.stderr


def test_history_is_carried_once(journey: Journey) -> None:
    first, again = journey.json("4-carry"), journey.json("4-carry-again")
    assert first["sent"] == first["records"] > 0
    assert again["sent"] == 0 and again["records"] == first["records"]


def test_writes_in_dual_write_go_through_kraft_and_reach_zookeeper(journey: Journey) -> None:
    assert journey.said["5-write"].returncode == 0, journey.said["5-write"].stderr
    # Kafka's dual-write put it into ZooKeeper.
    (described,) = journey.json("5-zk-describe")
    assert described["config"]["retention.ms"] == "7200000"
    # A read of ZooKeeper says what it is, then and after finalizing.
    for name in ("5-zk-describe", "7-zk-describe"):
        said = journey.said[name]
        assert said.returncode == 0 and "ZooKeeper no longer owns this cluster's configs" in said.stderr
        assert "may be stale" in said.stderr and len(said.stderr.strip().splitlines()) == 1
    # A direct ZooKeeper write is still refused (exit 14), and so is a ZooKeeper beside the brokers.
    refused = journey.said["5-zk-write"]
    assert refused.returncode == 14 and "nothing was written" in refused.stderr
    mixed = journey.said["5-with-zk"]
    assert mixed.returncode == 1 and "being migrated to KRaft" in mixed.stderr


def test_one_history_across_the_migration(journey: Journey) -> None:
    history = journey.json("8-history")
    reasons = [r["reason"] for r in history if r.get("reason")]
    assert reasons == ["after", "dual-write", "before"], history
    outside = [r for r in history if r.get("written_outside_configctl")]
    assert [r["config"]["retention.ms"] for r in outside] == ["5000"], history
    versions = [r["version"] for r in history]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions), versions
    blame = journey.json("8-blame")
    values = [w["value"] for w in blame["chain"]]
    assert values[:2] == ["3600000", "5000"] and "7200000" in values and "86400000" in values, values


def test_every_writer_during_dual_write_is_recorded(journey: Journey) -> None:
    """Kafka's own tool wrote during dual-write, before any broker ran KRaft: the recorder started
    beside the migrated broker reads the metadata log from the migration on, and dates it."""
    newest = journey.json("8-payments")[0]
    assert newest["written_outside_configctl"] is True, newest
    assert newest["config"]["retention.ms"] == "900000" and newest["change_number"] > 0, newest
    assert newest["time_ms"] is not None  # dated: the controllers' commit time
    feed = journey.json("8-since")
    paths = {row["entity_path"] for row in feed}
    assert {"topics/orders", "topics/payments"} <= paths


def test_a_desired_state_file_from_before_applies_after(journey: Journey) -> None:
    assert journey.said["1-export"].returncode == 0, journey.said["1-export"].stderr
    plan = journey.said["8-plan"]
    assert plan.returncode == 2, plan.stderr
    changed = {(e["entity_path"], k["name"]) for e in json.loads(plan.stdout)["entities"] for k in e["keys"]}
    assert changed == {("topics/orders", "retention.ms"), ("topics/payments", "retention.ms")}, changed
    assert journey.said["8-apply"].returncode == 0, journey.said["8-apply"].stderr
    again = journey.said["8-plan-again"]
    assert again.returncode == 0, again.stdout + again.stderr


def test_check_during_dual_write_asks_the_controllers(journey: Journey) -> None:
    # Right after Kafka's copy, and after writes during dual-write: the brokers still run ZooKeeper
    # mode, so the KRaft side is what the controllers hold (topics and the default), the rest named.
    copied = journey.said["3-check"]
    assert copied.returncode == 0, copied.stdout + copied.stderr
    assert "(its controllers): equal (topics 2, default 1)" in copied.stdout
    for line in (
        "not checked: brokers: 2 entities",
        "not checked: quotas: 4 entities",
        "not checked: scram: 1 entity",
    ):
        assert line in copied.stdout, copied.stdout
    during = journey.json("5-check")
    assert during["equal"] is True and during["kraft_read_from"] == "controllers"
    assert during["families"]["topics"]["entities"] == 2 and during["families"]["quotas"]["entities"] == 0
    assert all("still answer from ZooKeeper" in line for line in during["unchecked"]), during["unchecked"]
    stray = journey.said["5-check-stray"]
    assert stray.returncode == 2, stray.stdout + stray.stderr
    assert (
        "different: topic 'payments': retention.ms: ZooKeeper holds '1', the KRaft side '900000'"
        in stray.stdout
    )
    # Once the brokers run KRaft the brokers answer, for every family.
    assert "(its controllers)" not in journey.said["7-check"].stdout


def test_rollout_records_are_carried_once(journey: Journey) -> None:
    canary = journey.json("w-rollout")
    first, again = journey.json("4-carry"), journey.json("4-carry-again")
    assert (first["rollouts"], first["rollouts_sent"]) == (1, 1), first
    assert (again["rollouts"], again["rollouts_sent"]) == (1, 0), again
    for name in ("4-rollouts", "8-rollouts"):  # in dual-write, and after ZooKeeper is finalized away
        listed = journey.json(name)
        assert [(r["id"], r["state"]) for r in listed] == [(canary["id"], "promoted")], listed


def test_the_applied_log_answers_across_the_migration(journey: Journey) -> None:
    # After finalizing, on the KRaft side: broker 1 before the migration, from history and from what
    # its ZooKeeper-mode listener logged it applied: read from its state directory, and as carried
    # into the cluster (no directory given).
    carried = journey.json("6-carry-applied")
    assert carried["applied"] > 0 and carried["applied_sent"] == carried["applied"], carried
    assert (carried["sent"], carried["rollouts_sent"]) == (0, 0), carried  # the rest was carried at step 4
    for name in ("8-at", "8-at-carried"):
        doc = journey.json(name)
        configs = {c["name"]: c for c in doc["configs"]}
        assert (
            configs["retention.ms"]["value"] == "86400000" and configs["segment.bytes"]["value"] == "100000"
        )
        log = doc["applied_log"]
        assert log["covered"] is True and log["differences"] == [], (name, log)
        assert log["last_applied_change"] is not None
    assert journey.json("8-at-carried")["applied_log"] == journey.json("8-at")["applied_log"]
