"""Three real brokers, each with its sidecar: ``--wait``, ``status``, canaries and the audit read
what the brokers themselves report.

Brokers 1 and 2 run four log cleaner threads, broker 3 one. Kafka refuses to more than double the
cleaner threads at runtime, so a broker default of six is taken by brokers 1 and 2 and vetoed by
broker 3, which logs it and keeps its one thread. configctl's model computes six on every
broker; only broker 3's sidecar, asking its broker, sees the difference (a ``mismatch``).

The cases: a topic change every broker applies (``--wait`` exit 0); the broker default broker 3
refuses (``--wait`` exit 9 naming broker 3 and its reason; ``status`` lists the mismatch); a
canary on broker 3 with that change (aborted, its exact previous bytes back); broker 2 stopped
(its sidecar lists it ``unreachable``; ``--wait`` says ``down (not registered)``, since Kafka no
longer registers it; applied once it is back); drift between the brokers found by the audit from
``configctl snapshot`` alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import KAFKA_HOME, STATIC, KafkaFleet
from helpers import child_env, wait_for
from kazoo.client import KazooClient

from configctl import fleet
from configctl.localkafka import KafkaCluster
from configctl.localzk import LocalZooKeeper
from configctl.localzk.client import ClientSettings

pytestmark = pytest.mark.kafka

THREADS = {1: "4", 2: "4", 3: "1"}
REFUSED = "log.cleaner.threads=6"  # above twice broker 3's one thread: Kafka vetoes it there


def states(fleet_: KafkaFleet) -> dict[int, dict[str, Any]]:
    with fleet_.store() as store:
        return fleet.broker_states(store)


def observed_everywhere(fleet_: KafkaFleet) -> bool:
    found = states(fleet_)
    return len(found) == 3 and all(s.get("observed_change") is not None for s in found.values())


def rollout(result: Any) -> dict[int, dict[str, Any]]:
    return {b["broker_id"]: b for b in json.loads(result.stdout)["rollout"]["brokers"]}


@pytest.fixture(scope="module")
def three(zk_server: LocalZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaFleet]:
    """Brokers 1-3 (chroot ``/sidecar-three``), each with a sidecar asking its own broker."""
    work = tmp_path_factory.mktemp("sidecar-three")
    zk = ClientSettings(f"{zk_server.connect_string}/sidecar-three")
    per_broker = {b: {"log.cleaner.threads": n} for b, n in THREADS.items()}
    cluster = KafkaCluster(KAFKA_HOME, work, zk, 3, properties=STATIC, per_broker=per_broker)
    fleet_ = KafkaFleet(cluster, zk.connect)
    try:
        cluster.start()
        for broker_id, broker in cluster.brokers.items():
            command = [
                sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", zk.connect,
                "--broker-id", str(broker_id), "--server-properties", str(broker.properties_file),
                "--bootstrap-server", broker.bootstrap,
            ]  # fmt: skip
            fleet_.listeners[broker_id] = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=open(work / f"sidecar-{broker_id}.log", "w"),  # noqa: SIM115 - closed with the process
                env=child_env(),
            )
        wait_for(lambda: observed_everywhere(fleet_), timeout=120, message="three sidecars observing")
        yield fleet_
    finally:
        fleet_.stop()


def test_a_topic_change_every_broker_runs_is_applied_by_all(three, unique):
    topic = unique("fleet")
    three.create_topics(topic)
    started = time.monotonic()
    result = three.cli(
        "alter", "--topic", topic, "--add-config", "retention.ms=7200000", "--wait", "60", "-o", "json"
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert {b: s["status"] for b, s in rollout(result).items()} == {1: "applied", 2: "applied", 3: "applied"}
    # applied means asked: every sidecar's broker has answered for the change
    number = json.loads(result.stdout)["change_number"]
    assert all(s["observed_change"] >= number for s in states(three).values())
    print(f"alter --wait on three sidecars: {took:.2f}s")


def test_a_broker_default_one_broker_vetoes_is_exit_9_naming_it(three):
    try:
        result = three.cli(
            "alter", "--broker-defaults", "--add-config", REFUSED, "--allow-running-brokers",
            "--wait", "60", "-o", "json",
        )  # fmt: skip
        assert result.returncode == 9, result.stderr
        statuses = rollout(result)
        assert (statuses[1]["status"], statuses[2]["status"]) == ("applied", "applied")
        assert statuses[3]["status"] == "mismatch"
        assert "configctl computes '6', the broker reports '1'" in statuses[3]["reason"]
        assert "broker 3 refused it (mismatch: " in result.stderr and result.stderr.count("\n") == 1

        status = json.loads(three.cli("status", "-o", "json").stdout)
        by_id = {b["broker_id"]: b for b in status["brokers"]}
        assert [(p["kind"], p["key"]) for p in by_id[3]["problems"]] == [("mismatch", "log.cleaner.threads")]
        assert by_id[3]["observed"] is True and by_id[1]["problems"] == []

        # describe --effective: what broker 3 runs, and what is stored beside it
        effective = json.loads(three.cli("describe", "--effective", "--broker", "3", "-o", "json").stdout)
        (threads,) = [c for c in effective["configs"] if c["name"] == "log.cleaner.threads"]
        assert (threads["value"], threads["stored"]) == ("1", "6")

        # asked again, nothing written: the fleet's state for what was asked, still exit 9
        again = three.cli(
            "alter", "--broker-defaults", "--add-config", REFUSED, "--allow-running-brokers", "--wait", "30"
        )
        assert again.returncode == 9, again.stderr
        assert "No change" in again.stdout
    finally:
        undo = three.cli(
            "alter", "--broker-defaults", "--delete-config", "log.cleaner.threads", "--allow-running-brokers",
            "--wait", "60",
        )  # fmt: skip
        assert undo.returncode == 0, undo.stderr


def test_a_canary_its_broker_refuses_is_aborted_with_the_exact_bytes_back(three):
    client = KazooClient(hosts=three.connect)
    client.start(timeout=30)
    try:
        assert three.cli(
            "alter", "--broker", "3", "--add-config", "log.cleaner.backoff.ms=15001", "--allow-running-brokers",
            "--wait", "60",
        ).returncode == 0  # fmt: skip
        before = client.get("/config/brokers/3")[0]
        defaults = client.exists("/config/brokers/<default>")
        result = three.cli(
            "alter", "--broker-defaults", "--add-config", REFUSED, "--allow-running-brokers",
            "--canary", "3", "--soak", "1s", "--wait", "60", "-o", "json",
        )  # fmt: skip
        assert result.returncode == 11, result.stderr  # aborted
        assert "mismatch" in result.stderr and "broker 3" in result.stderr
        assert client.get("/config/brokers/3")[0] == before
        after = client.exists("/config/brokers/<default>")
        assert (after is None) == (defaults is None) and (after is None or after.version == defaults.version)
        wait_for(
            lambda: not [p for p in states(three)[3].get("problems", ()) if p["kind"] == "mismatch"],
            timeout=60,
            message="broker 3 agreeing again once the canary override is gone",
        )
    finally:
        three.cli(
            "alter", "--broker", "3", "--delete-config", "log.cleaner.backoff.ms", "--allow-running-brokers"
        )
        client.stop()
        client.close()


def test_a_stopped_broker_is_down_not_registered_then_applied_once_it_is_back(three, unique):
    topic = unique("gone")
    three.create_topics(topic)
    three.cluster.stop([2])
    try:
        change = three.cli("alter", "--topic", topic, "--add-config", "retention.ms=3600000")
        assert change.returncode == 0, change.stderr
        started = time.monotonic()
        wait_for(
            lambda: any(p["kind"] == "unreachable" for p in states(three)[2].get("problems", ())),
            timeout=60,
            message="broker 2's sidecar reporting its broker unreachable",
        )
        print(f"unreachable reported {time.monotonic() - started:.2f}s after the change")
        # the same alter changes nothing; --wait reports where the fleet stands with it
        result = three.cli(
            "alter", "--topic", topic, "--add-config", "retention.ms=3600000", "--wait", "3", "-o", "json"
        )
        assert result.returncode == 10, result.stderr
        statuses = rollout(result)
        # Kafka no longer registers broker 2: it is down, whatever its listener (still running) says
        assert (statuses[2]["status"], statuses[2]["kafka_registered"]) == ("down", False), statuses
        assert "no longer registers broker 2" in statuses[2]["reason"]
        assert statuses[1]["status"] == statuses[3]["status"] == "applied"
        assert "broker(s) 2 (down (not registered)) had not applied it" in result.stderr
    finally:
        three.cluster.start(ids=[2])
    # once it is back, its sidecar's question is answered: the same wait now ends with exit 0
    again = three.cli(
        "alter", "--topic", topic, "--add-config", "retention.ms=3600000", "--wait", "90", "-o", "json"
    )
    assert again.returncode == 0, again.stderr
    assert {b: s["status"] for b, s in rollout(again).items()} == {1: "applied", 2: "applied", 3: "applied"}


def test_drift_between_brokers_is_found_by_the_audit_from_snapshots_alone(three, tmp_path):
    out = tmp_path / "snapshots"
    result = three.cli("--bootstrap-server", three.bootstrap, "snapshot", "--out", str(out), "-o", "json")
    assert result.returncode == 0, result.stderr
    assert [b["broker_id"] for b in json.loads(result.stdout)["brokers"]] == [1, 2, 3]
    audit = three.cli("audit", "--snapshots", str(out), "-o", "json", timeout=300)
    assert audit.returncode == 0, audit.stderr
    report = json.loads(audit.stdout)
    assert report["brokers"] == 3
    skew = json.dumps(report["static_skew"])
    assert "log.cleaner.threads" in skew  # 4, 4 and 1 in server.properties: found from what they report
