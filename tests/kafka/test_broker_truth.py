"""The broker is the truth (issue 32): every Kafka broker asked, and every output says what it rests on.

A fleet of this module's own (chroot ``/broker-truth``: a broker is killed at the end), two real
Kafka brokers, each with a configctl listener started as the README's tour starts one: no
``--bootstrap-server``. Kafka registers both ids, so both listeners are sidecars by themselves and
ask their broker. Broker 1's listener also runs the example quota enforcer, whose veto is
configctl's, not Kafka's.

- a change broker 2 refuses (``log.cleaner.threads=9``: more than twice its one thread) is a
  ``mismatch``: ``--wait`` exits 9, ``status`` lists the problem, ``describe --effective`` and
  ``diff`` show the 1 it runs, not the 9 stored;
- a plugin's veto is worded as the plugin's (broker 1 runs the quota all the same, Kafka says);
- ``describe --effective --topic`` of a topic Kafka does not have fails as ``alter`` does;
- a killed Kafka broker whose configctl listener runs on is ``down (not registered)`` in
  ``--wait`` (exit 10), ``status``, the console's fleet rows and ``describe --effective``; and
  still is once its listener restarts while the broker is down (its fleet record says sidecar).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import KAFKA_HOME, STATIC, KafkaFleet, broker_configs_restored
from helpers import child_env, wait_for

from configctl import fleet
from configctl.console.views import fleet_rows
from configctl.entities import Entity
from configctl.localkafka import KafkaCluster
from configctl.localzk import LocalZooKeeper
from configctl.localzk.client import ClientSettings

pytestmark = pytest.mark.kafka

ENFORCER = "examples.plugins.quota_enforcer:ClientQuotaEnforcer"


def states(fleet_: KafkaFleet) -> dict[int, dict[str, Any]]:
    with fleet_.store() as store:
        return fleet.broker_states(store)


def status(fleet_: KafkaFleet) -> dict[int, dict[str, Any]]:
    result = fleet_.cli("status", "-o", "json")
    assert result.returncode == 0, result.stderr
    return {b["broker_id"]: b for b in json.loads(result.stdout)["brokers"]}


def rollout(result: Any) -> dict[int, dict[str, Any]]:
    return {b["broker_id"]: b for b in json.loads(result.stdout)["rollout"]["brokers"]}


def observing(fleet_: KafkaFleet) -> bool:
    found = states(fleet_)
    return len(found) == 2 and all(s.get("observed_change") is not None for s in found.values())


def start_listener(fleet_: KafkaFleet, broker_id: int, log: Any) -> None:
    """Broker ``broker_id``'s listener as the tour starts it: no broker address given."""
    broker = fleet_.cluster.brokers[broker_id]
    plugins = ["--plugin", ENFORCER] if broker_id == 1 else []
    command = [
        sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", fleet_.connect,
        "--broker-id", str(broker_id), "--server-properties", str(broker.properties_file), *plugins,
    ]  # fmt: skip
    fleet_.listeners[broker_id] = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),  # noqa: SIM115 - closed with the process
        env=child_env(),
    )


@pytest.fixture(scope="module")
def pair(zk_server: LocalZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaFleet]:
    """Kafka brokers 1 and 2 (chroot ``/broker-truth``), each with a listener given no broker address."""
    work = tmp_path_factory.mktemp("broker-truth")
    zk = ClientSettings(f"{zk_server.connect_string}/broker-truth")
    cluster = KafkaCluster(KAFKA_HOME, work, zk, 2, properties=STATIC)
    fleet_ = KafkaFleet(cluster, zk.connect)
    try:
        cluster.start()
        for broker_id in cluster.brokers:
            start_listener(fleet_, broker_id, work / f"listener-{broker_id}.log")
        wait_for(lambda: observing(fleet_), timeout=120, message="two listeners asking their brokers")
        yield fleet_
    finally:
        fleet_.stop()


def test_a_listener_beside_a_registered_broker_asks_it_with_no_flag(pair):
    for broker_id, state in states(pair).items():
        assert (state["kind"], state["kafka_registered"], state["observed"]) == ("sidecar", True, True), (
            broker_id
        )
    found = status(pair)
    assert {b: (s["truth"], s["kafka_registered"], s["live"]) for b, s in found.items()} == {
        1: ("observed", True, True),
        2: ("observed", True, True),
    }
    table = pair.cli("status")
    assert table.returncode == 0 and "kafka" in table.stdout and "registered" in table.stdout
    assert "observed from the broker" in table.stdout


def test_a_change_the_broker_refuses_is_a_refusal_everywhere(pair):
    with broker_configs_restored(pair):
        result = pair.cli(
            "alter", "--broker", "2", "--add-config", "log.cleaner.threads=9", "--allow-running-brokers",
            "--wait", "60", "-o", "json",
        )  # fmt: skip
        assert result.returncode == 9, result.stderr
        assert rollout(result)[2]["status"] == "mismatch"
        assert "broker 2 refused it (mismatch: log.cleaner.threads" in result.stderr
        # the broker's log says why (Kafka's own words), and it runs one thread
        log = pair.cluster.brokers[2].log_file.read_text(errors="replace")
        assert "log.cleaner.threads" in log
        with pair.admin() as admin:
            assert admin.describe_broker(2, ["log.cleaner.threads"])["log.cleaner.threads"].value == "1"

        problems = status(pair)[2]["problems"]
        assert [(p["kind"], p.get("key"), p.get("expected"), p.get("reported")) for p in problems] == [
            ("mismatch", "log.cleaner.threads", "9", "1")
        ]
        assert "mismatch" in pair.cli("status").stdout

        effective = json.loads(pair.cli("describe", "--effective", "--broker", "2", "-o", "json").stdout)
        entry = next(c for c in effective["configs"] if c["name"] == "log.cleaner.threads")
        assert (entry["value"], entry.get("stored"), effective["truth"]) == ("1", "9", "observed")

        result = pair.cli("diff", "--broker", "1", "--broker", "2", "-o", "json")
        assert result.returncode in (0, 2), result.stderr  # they differ in listeners, not in threads
        assert "log.cleaner.threads" not in [d["key"] for d in json.loads(result.stdout)["differences"]]
        assert json.loads(result.stdout)["right"]["truth"] == "observed"

        # the console's fleet rows: broker 2 has a mismatch
        rows = {r["broker_id"]: r for r in fleet_rows(json.loads(pair.cli("status", "-o", "json").stdout))}
        assert rows[2]["mismatch"] and rows[2]["kafka"] == "registered"
        assert rows[2]["figures"].startswith("observed from the broker")


def test_a_plugin_veto_is_the_plugins_not_the_brokers(pair, unique):
    user = unique("vetoed")
    result = pair.cli(
        "alter", "--entity-type", "users", "--entity-name", user, "--add-config", "producer_byte_rate=100",
        "--wait", "60", "-o", "json",
    )  # fmt: skip
    assert result.returncode == 9, result.stderr
    statuses = rollout(result)
    assert (statuses[1]["status"], statuses[2]["status"]) == ("rejected", "applied")
    assert (
        "configctl's plugin client-quota-enforcer rejected it on broker 1 (the broker runs it)"
        in result.stderr
    )
    assert "broker 1 refused it" not in result.stderr
    assert statuses[1]["refusal"].startswith(
        "configctl's plugin client-quota-enforcer rejected it on broker 1"
    )
    with pair.admin() as admin:  # Kafka runs it: configctl's plugin vetoed only its own model
        quotas = wait_for(lambda: admin.client_quotas(Entity.from_path(f"users/{user}")), timeout=30)
    assert float(quotas["producer_byte_rate"]) == 100.0


def test_describe_effective_of_a_topic_kafka_does_not_have_fails_as_alter_does(pair, unique):
    typo = unique("no-such-topic")
    described = pair.cli("describe", "--effective", "--broker", "1", "--topic", typo)
    altered = pair.cli("alter", "--topic", typo, "--add-config", "retention.ms=100000")
    assert altered.returncode != 0 and described.returncode == altered.returncode, described.stderr
    assert f"topic '{typo}' does not exist in this Kafka cluster" in described.stderr
    assert described.stdout == ""


def test_a_killed_broker_whose_listener_runs_is_down_not_registered(pair, tmp_path):
    pair.cluster.brokers[2].kill()
    wait_for(lambda: states(pair)[2].get("kafka_registered") is False, timeout=90, message="deregistered")
    assert pair.listeners[2].poll() is None  # its configctl listener still runs

    broker = status(pair)[2]
    assert (broker["live"], broker["listener_live"], broker["kafka_registered"], broker["truth"]) == (
        False,
        True,
        False,
        "down (not registered)",
    )
    table = pair.cli("status")
    assert table.returncode == 0 and "down (not registered)" in table.stdout
    one = pair.cli("status", "--broker", "2")
    assert "down (not registered" in one.stdout and "live;" not in one.stdout

    result = pair.cli(
        "alter", "--broker-defaults", "--add-config", "log.cleaner.backoff.ms=16000", "--allow-running-brokers",
        "--wait", "5",
    )  # fmt: skip
    try:
        assert result.returncode == 10, result.stderr
        assert "broker 2: down (not registered)" in result.stdout + result.stderr
        assert "2 (down (not registered))" in result.stderr
        assert "broker 2: applied" not in result.stdout
    finally:
        pair.cli(
            "alter",
            "--broker-defaults",
            "--delete-config",
            "log.cleaner.backoff.ms",
            "--allow-running-brokers",
        )

    effective = pair.cli("describe", "--effective", "--broker", "2", "-o", "json")
    assert json.loads(effective.stdout)["truth"] == "down (not registered)"
    assert "down (not registered)" in pair.cli("describe", "--effective", "--broker", "2").stdout

    rows = {r["broker_id"]: r for r in fleet_rows(json.loads(pair.cli("status", "-o", "json").stdout))}
    assert (rows[2]["live"], rows[2]["down_not_registered"], rows[2]["kafka"]) == (
        False,
        True,
        "not registered",
    )

    # its listener restarted while the Kafka broker is still down: its fleet record says it was a
    # sidecar, so it is one again (never the broker's own config manager) and the broker stays down
    listener = pair.listeners[2]
    listener.terminate()
    listener.wait(timeout=30)
    wait_for(lambda: 2 not in states(pair), timeout=30, message="broker 2's listener gone")
    start_listener(pair, 2, tmp_path / "listener-2-again.log")
    wait_for(lambda: 2 in states(pair), timeout=60, message="broker 2's listener back")
    assert (states(pair)[2]["kind"], states(pair)[2]["kafka_registered"]) == ("sidecar", False)
    assert (status(pair)[2]["live"], status(pair)[2]["truth"]) == (False, "down (not registered)")
