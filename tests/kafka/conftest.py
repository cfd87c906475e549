"""Real Apache Kafka 3.9 brokers (ZooKeeper mode) for the tests that claim Kafka behaviour.

The jars come from ``make kafka`` (``build/kafka/libs``; ``make test`` depends on it). Brokers
are shared per test session where they can be, because each is a JVM and CI has two cores:

- ``kafka_one`` (session): broker 1 on the shared ZooKeeper (its own chroot), with a second
  listener that takes SCRAM logins, and a configctl listener beside it reading the same
  ``server.properties`` (so ``describe --effective --broker 1`` has its static layer).
- ``kafka_ensemble`` (module): brokers 1-3 on a 3-node ZooKeeper ensemble, each with its
  configctl listener.
- ``kafka_secure`` (session): broker 1 on the TLS + SASL ZooKeeper (Kafka's ``zookeeper.ssl.*``
  and a JAAS ``Client`` login), with its configctl listener on the same credentials.

Tests share the brokers, so each names its own topics and principals (``unique``) and puts back
any broker-level config it changes (``broker_configs_restored``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, CliResult, child_env, create_topics, run_cli, wait_for
from helpers import unique as unique  # the fixture, one home for every suite

from configctl import fleet
from configctl.adminapi.client import KafkaAdmin
from configctl.localkafka import KafkaCluster
from configctl.localzk import LocalZooKeeper
from configctl.localzk.client import ClientSettings
from configctl.secrets import MASK
from configctl.zk.configstore import ZooKeeperStore as ConfigStore

KAFKA_HOME = REPO_ROOT / "build" / "kafka"

# What every test broker runs with besides the harness's own settings: a static synonym, so the
# static layer takes part in the comparisons.
STATIC = {"log.retention.hours": "100", "log.cleaner.threads": "1"}


@dataclass
class KafkaFleet:
    """Real brokers, the ZooKeeper they use, and a configctl listener beside each broker."""

    cluster: KafkaCluster
    connect: str
    env: dict[str, str] = field(default_factory=dict)
    listeners: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    zk_server: LocalZooKeeper | None = None  # the fleet's own ZooKeeper, when a test may kill its nodes

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def cli(self, *args: str, timeout: float = 120.0) -> CliResult:
        """``configctl --zookeeper <this cluster> ARGS`` as a user runs it."""
        return run_cli("--zookeeper", self.connect, *args, env=self.env, timeout=timeout)

    def admin(self) -> KafkaAdmin:
        return KafkaAdmin(self.bootstrap)

    def store(self) -> ConfigStore:
        return ConfigStore.connect(self.connect) if not self.env else _secure_store(self)

    def create_topics(self, *names: str, configs: dict[str, str] | None = None) -> None:
        """Create topics in Kafka (1 partition, RF 1) and wait until the brokers know them."""
        create_topics(self.bootstrap, *names, configs=configs)

    def start_listener(self, broker_id: int, log: Path) -> None:
        broker = self.cluster.brokers[broker_id]
        command = [
            sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", self.connect,
            "--broker-id", str(broker_id), "--server-properties", str(broker.properties_file),
        ]  # fmt: skip
        self.listeners[broker_id] = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=open(log, "w"),  # noqa: SIM115 - closed with the process
            env=child_env(self.env),
        )

    def wait_listeners(self) -> None:
        with self.store() as store:
            wait_for(
                lambda: len(fleet.broker_states(store)) >= len(self.listeners),
                timeout=90,
                message="configctl listeners beside the brokers",
            )

    def stop(self) -> None:
        for process in self.listeners.values():
            if process.poll() is None:
                process.terminate()
        for process in self.listeners.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        self.cluster.stop()


def _secure_store(fleet_: KafkaFleet) -> ConfigStore:
    """A store on the secured ZooKeeper, from the same ``CONFIGCTL_*`` variables the CLI gets."""
    from configctl.settings import resolve

    return ConfigStore.connect(resolve({}, fleet_.env).connection())


def _start_fleet(
    work: Path, zk: ClientSettings, brokers: int, env: dict[str, str] | None = None, *, scram: bool = False
) -> KafkaFleet:
    cluster = KafkaCluster(KAFKA_HOME, work, zk, brokers, properties=STATIC, scram=scram)
    fleet_ = KafkaFleet(cluster, zk.connect, env or {})
    try:
        cluster.start()
        for broker_id in cluster.brokers:
            fleet_.start_listener(broker_id, work / f"configctl-listener-{broker_id}.log")
        fleet_.wait_listeners()
    except BaseException:
        fleet_.stop()
        raise
    return fleet_


@pytest.fixture(scope="session")
def kafka_one(zk_server: LocalZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaFleet]:
    """Broker 1 on the shared ZooKeeper (chroot ``/kafka-one``), SCRAM listener, configctl listener."""
    work = tmp_path_factory.mktemp("kafka-one")
    fleet_ = _start_fleet(work, ClientSettings(f"{zk_server.connect_string}/kafka-one"), 1, scram=True)
    try:
        yield fleet_
    finally:
        fleet_.stop()


@pytest.fixture(scope="module")
def kafka_ensemble(
    _zk_ensemble_servers: LocalZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaFleet]:
    """Brokers 1-3 on the module's 3-node ZooKeeper ensemble, each with its configctl listener.

    The ensemble is tests/conftest.py's (``from conftest import`` here would find this file).
    """
    servers = _zk_ensemble_servers
    work = tmp_path_factory.mktemp("kafka-ensemble")
    fleet_ = _start_fleet(work, ClientSettings(f"{servers.connect_string}/kafka"), 3)
    fleet_.zk_server = servers
    try:
        yield fleet_
    finally:
        fleet_.stop()


@pytest.fixture(scope="session")
def kafka_secure(secure_zk: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaFleet]:
    """Broker 1 on the TLS + SASL ZooKeeper (chroot ``/kafka-secure``), with its configctl listener."""
    settings = secure_zk.server.client_settings()
    zk = dataclasses.replace(settings, connect=f"{settings.connect}/kafka-secure")
    env = {**secure_zk.env(), "CONFIGCTL_ZOOKEEPER": zk.connect}
    fleet_ = _start_fleet(tmp_path_factory.mktemp("kafka-secure"), zk, 1, env)
    try:
        yield fleet_
    finally:
        fleet_.stop()


@contextlib.contextmanager
def broker_configs_restored(fleet_: KafkaFleet) -> Iterator[None]:
    """Put ``brokers/<default>`` and every ``brokers/<id>`` back as they were after the block."""
    paths = ["<default>", *[str(i) for i in fleet_.cluster.brokers]]
    before = {
        p: describe_stored(fleet_, "--broker-defaults" if p == "<default>" else "--broker", p) for p in paths
    }
    try:
        yield
    finally:
        for path, config in before.items():
            now = describe_stored(fleet_, "--broker-defaults" if path == "<default>" else "--broker", path)
            target = ["--broker-defaults"] if path == "<default>" else ["--broker", path]
            extra = sorted(set(now) - set(config))
            if extra:
                fleet_.cli("alter", *target, "--delete-config", ",".join(extra), "--allow-running-brokers")
            changed = {k: v for k, v in config.items() if now.get(k) != v}
            if changed:
                pairs = ",".join(f"{k}=[{v}]" if "," in v else f"{k}={v}" for k, v in changed.items())
                fleet_.cli("alter", *target, "--add-config", pairs, "--allow-running-brokers")


def describe_stored(fleet_: KafkaFleet, *selector: str) -> dict[str, str]:
    """What configctl's ``describe`` reads for one entity (``{}`` when it has no node)."""
    if selector[0] == "--broker-defaults":
        selector = selector[:1]
    result = fleet_.cli("describe", *selector, "-o", "json")
    assert result.returncode == 0, result.stderr
    documents = json.loads(result.stdout)
    return documents[0]["config"] if documents else {}


def effective(fleet_: KafkaFleet, broker_id: int, *selector: str) -> dict[str, dict[str, Any]]:
    """``describe --effective --broker ID <selector>`` as ``{name: {name, value, source, synonyms}}``."""
    result = fleet_.cli("describe", "--effective", "--broker", str(broker_id), *selector, "-o", "json")
    assert result.returncode == 0, result.stderr
    return {entry["name"]: _as_kafka_reports(entry) for entry in json.loads(result.stdout)["configs"]}


def _as_kafka_reports(entry: dict[str, Any]) -> dict[str, Any]:
    """One ``describe --effective`` entry, with a masked secret as Kafka sends it: null.

    configctl shows ``******`` where a secret is set (docs/kafka-compatibility.md), Kafka sends
    no value at all; every other field is compared as it is.
    """
    unmask = lambda v: None if v == MASK else v  # noqa: E731
    return {
        "name": entry["name"],
        "value": unmask(entry["value"]),
        "source": entry["source"],
        "synonyms": [{**s, "value": unmask(s["value"])} for s in entry["synonyms"]],
    }


def until_agree(
    ours: Callable[[], dict[str, Any]], theirs: Callable[[], dict[str, Any]], timeout: float = 30.0
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides, once they agree or the time is up (the broker applies a change asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        left, right = ours(), theirs()
        if left == right or time.monotonic() >= deadline:
            return left, right
        time.sleep(0.2)


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """Readable lines for each key where configctl and the broker disagree."""
    lines = []
    for name in sorted(set(ours) | set(theirs)):
        if ours.get(name) != theirs.get(name):
            lines.append(f"{name}:\n  configctl {ours.get(name)}\n  broker    {theirs.get(name)}")
    return lines
