"""The sidecar beside a real broker: ``listener run --bootstrap-server`` asks broker 1 what it runs.

``kafka_one``'s listener for broker 1 is replaced, for this module, by one started with
``--bootstrap-server`` (two listeners cannot both be broker 1), and put back afterwards.

A change the broker accepts leaves no problem; a reconfiguration the broker vetoes (nine cleaner
threads written to ZooKeeper with ``--allow-running-brokers``: the broker keeps one) is a
``mismatch`` problem naming the key, in the state node and in ``configctl status``; deleting the
key makes it go away. Topic, quota and SCRAM changes the broker takes leave no problem. With a
broker of the module's own, stopping it is one ``unreachable`` problem, gone once it is back.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import KAFKA_HOME, STATIC, KafkaFleet, broker_configs_restored
from helpers import child_env, wait_for

from configctl import fleet
from configctl.localkafka import KafkaCluster
from configctl.localzk import LocalZooKeeper
from configctl.localzk.client import ClientSettings

pytestmark = pytest.mark.kafka


def _start(fleet_: KafkaFleet, log: Any, *extra: str) -> subprocess.Popen[bytes]:
    """Broker 1's configctl listener as a process, with ``extra`` arguments."""
    broker = fleet_.cluster.brokers[1]
    command = [
        sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", fleet_.connect,
        "--broker-id", "1", "--server-properties", str(broker.properties_file), *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
        env=child_env(fleet_.env),
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def state(fleet_: KafkaFleet) -> dict[str, Any]:
    with fleet_.store() as store:
        return fleet.broker_states(store).get(1) or {}


@pytest.fixture(scope="module")
def sidecar(kafka_one: KafkaFleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaFleet]:
    """kafka_one with broker 1's listener restarted as a sidecar (``--bootstrap-server``)."""
    work = tmp_path_factory.mktemp("sidecar")
    _stop(kafka_one.listeners[1])
    wait_for(lambda: state(kafka_one) == {}, timeout=30, message="the plain listener gone")
    process = _start(kafka_one, work / "sidecar.log", "--bootstrap-server", kafka_one.bootstrap)
    try:
        wait_for(lambda: state(kafka_one).get("observed_at_ms"), timeout=90, message="the sidecar observing")
        yield kafka_one
    finally:
        _stop(process)
        wait_for(lambda: state(kafka_one) == {}, timeout=30, message="the sidecar gone")
        kafka_one.start_listener(1, work / "listener-again.log")
        kafka_one.wait_listeners()


def mismatches(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in document.get("problems", ()) if p["kind"] in ("mismatch", "unreachable")]


def test_without_bootstrap_server_a_listener_beside_a_registered_broker_asks_it(kafka_one):
    """Kafka registers broker 1 (/brokers/ids/1): its plain listener is a sidecar by itself."""
    kafka_one.wait_listeners()
    document = wait_for(lambda: state(kafka_one).get("observed_at_ms") and state(kafka_one), timeout=60)
    assert (document["kind"], document["kafka_registered"], document["observed"]) == ("sidecar", True, True)


def test_a_change_the_broker_accepts_is_observed_without_a_problem(sidecar):
    before = state(sidecar)
    assert before["observed"] is True
    with broker_configs_restored(sidecar):
        result = sidecar.cli(
            "alter", "--broker", "1", "--add-config", "log.cleaner.threads=2", "--allow-running-brokers"
        )
        assert result.returncode == 0, result.stderr
        number = json.loads(sidecar.cli("status", "-o", "json").stdout)["latest_change_number"]
        wait_for(
            lambda: (
                state(sidecar)["last_applied_change"] >= number
                and state(sidecar)["observed_at_ms"] > before["observed_at_ms"]
                and state(sidecar)["observing"] == 0
            ),
            timeout=30,
            message="the change observed",
        )
        assert mismatches(state(sidecar)) == []


def test_a_vetoed_reconfiguration_is_a_mismatch_until_the_key_is_deleted(sidecar):
    with broker_configs_restored(sidecar):
        started = time.monotonic()
        result = sidecar.cli(
            "alter", "--broker", "1", "--add-config", "log.cleaner.threads=9", "--allow-running-brokers"
        )
        assert result.returncode == 0, result.stderr
        found = wait_for(lambda: mismatches(state(sidecar)), timeout=30, message="the mismatch")
        appeared = time.monotonic() - started
        assert [(p["kind"], p["entity_path"], p["key"], p["expected"], p["reported"]) for p in found] == [
            ("mismatch", "brokers/1", "log.cleaner.threads", "9", "1")
        ]
        assert found[0]["reason"] == "log.cleaner.threads: configctl computes '9', the broker reports '1'"
        assert isinstance(found[0]["change_number"], int)

        status = json.loads(sidecar.cli("status", "-o", "json").stdout)
        (broker,) = [b for b in status["brokers"] if b["broker_id"] == 1]
        listed = [p for p in broker["problems"] if p["kind"] == "mismatch"]
        assert [(p["key"], p["expected"], p["reported"]) for p in listed] == [
            ("log.cleaner.threads", "9", "1")
        ]

        started = time.monotonic()
        result = sidecar.cli(
            "alter", "--broker", "1", "--delete-config", "log.cleaner.threads", "--allow-running-brokers"
        )
        assert result.returncode == 0, result.stderr
        wait_for(lambda: mismatches(state(sidecar)) == [], timeout=30, message="the mismatch cleared")
        cleared = time.monotonic() - started
        print(f"mismatch appeared after {appeared:.2f}s, cleared {cleared:.2f}s after the delete")


def test_topic_quota_and_credential_changes_the_broker_takes_leave_no_problem(sidecar, unique):
    topic, user, client = unique("side-topic"), unique("side-user"), unique("side-client")
    sidecar.create_topics(topic)
    before = state(sidecar)["counters"]["observations"]
    writes = [
        ("--topic", topic, "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]"),
        (
            "--user",
            user,
            "--add-config",
            "producer_byte_rate=1000,SCRAM-SHA-512=[iterations=4096,password=pw]",
        ),
        ("--user", user, "--client", client, "--add-config", "consumer_byte_rate=2048"),
        ("--client", client, "--add-config", "request_percentage=12.5"),
        ("--ip", "10.9.8.7", "--add-config", "connection_creation_rate=10"),
    ]
    for args in writes:
        result = sidecar.cli("alter", *args)
        assert result.returncode == 0, result.stderr
    number = json.loads(sidecar.cli("status", "-o", "json").stdout)["latest_change_number"]
    wait_for(
        lambda: (
            state(sidecar)["last_applied_change"] >= number
            and state(sidecar)["observing"] == 0
            and state(sidecar)["counters"]["observations"] >= before + len(writes)
        ),
        timeout=30,
        message="every change observed",
    )
    assert mismatches(state(sidecar)) == []
    assert (
        sidecar.cli("alter", "--ip", "10.9.8.7", "--delete-config", "connection_creation_rate").returncode
        == 0
    )


# -- a broker of this module's own: stopping it ------------------------------------------------


@pytest.fixture(scope="module")
def own_broker(zk_server: LocalZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaFleet]:
    """Broker 1 of a cluster of its own (chroot ``/sidecar-own``), with a sidecar beside it."""
    work = tmp_path_factory.mktemp("sidecar-own")
    zk = ClientSettings(f"{zk_server.connect_string}/sidecar-own")
    cluster = KafkaCluster(KAFKA_HOME, work, zk, 1, properties=STATIC)
    fleet_ = KafkaFleet(cluster, zk.connect)
    try:
        cluster.start()
        bootstrap = cluster.brokers[1].bootstrap  # the same address once it is restarted
        fleet_.listeners[1] = _start(fleet_, work / "sidecar.log", "--bootstrap-server", bootstrap)
        wait_for(lambda: state(fleet_).get("observed_at_ms"), timeout=90, message="the sidecar observing")
        yield fleet_
    finally:
        fleet_.stop()


def test_a_stopped_broker_is_unreachable_until_it_is_back(own_broker):
    own_broker.cluster.stop()
    started = time.monotonic()
    # no broker runs: broker defaults go to ZooKeeper, and the sidecar asks its (absent) broker
    result = own_broker.cli("alter", "--broker-defaults", "--add-config", "log.cleaner.backoff.ms=16000")
    assert result.returncode == 0, result.stderr
    found = wait_for(lambda: mismatches(state(own_broker)), timeout=60, message="unreachable")
    reported = time.monotonic() - started
    assert [(p["kind"], p.get("entity_path")) for p in found] == [("unreachable", None)]
    assert "does not answer" in found[0]["reason"]
    assert state(own_broker)["observing"] == 1  # not taken as applied

    # the absent broker never holds up applying: the next change is applied at once, still one problem
    result = own_broker.cli("alter", "--broker-defaults", "--add-config", "log.cleaner.backoff.ms=17000")
    assert result.returncode == 0, result.stderr
    number = json.loads(own_broker.cli("status", "-o", "json").stdout)["latest_change_number"]
    wait_for(lambda: state(own_broker)["last_applied_change"] >= number, timeout=5, message="applied")
    assert [p["kind"] for p in mismatches(state(own_broker))] == ["unreachable"]

    own_broker.cluster.start()
    started = time.monotonic()
    wait_for(
        lambda: mismatches(state(own_broker)) == [] and state(own_broker)["observing"] == 0,
        timeout=60,
        message="the broker answering again, agreeing",
    )
    print(
        f"unreachable after {reported:.2f}s; cleared {time.monotonic() - started:.2f}s after the broker started"
    )
