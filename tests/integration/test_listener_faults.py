"""Fault tests: every listener converges to exactly the state in ZooKeeper within 5 s of recovery.

Faults: the ZooKeeper server restarted mid-stream, the listener's session forcibly expired, the
listener process SIGKILLed and restarted with changes made while it was down, and the leader of
a three-node ensemble killed under a write load. "Exactly the state in ZooKeeper" means every
entity config the broker follows equals what ZooKeeper holds, and the last applied change is the
newest notification, so no change was missed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from helpers import REPO_ROOT, set_config, wait_for, zookeeper_truth
from kazoo.client import KazooClient

from configctl import fleet
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import ConfigctlError
from configctl.listener import ConfigListener
from configctl.writer import alter, prepare_change
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.zkconnection import ConnectionSettings

CONVERGENCE_S = 5.0
STATIC = {"log.retention.hours": "72", "num.io.threads": "16"}


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def latest(store: ConfigStore) -> int:
    number = store.latest_change_number()
    return -1 if number is None else number


def converged(listener: ConfigListener, store: ConfigStore) -> bool:
    return listener.configs() == zookeeper_truth(
        store, listener.broker_id
    ) and listener.last_applied_change == latest(store)


def assert_converges(listeners: list[ConfigListener], connect: str, what: str) -> float:
    """Wait (at most 5 s) until every listener holds exactly ZooKeeper's state; returns the time taken."""
    started = time.monotonic()
    with ConfigStore.connect(ConnectionSettings(connect, timeout=10)) as store:
        for listener in listeners:
            wait_for(
                lambda listener=listener: converged(listener, store),
                timeout=max(0.1, CONVERGENCE_S - (time.monotonic() - started)),
                message=f"broker {listener.broker_id} to converge after {what}",
            )
    return time.monotonic() - started


class WriteLoad(threading.Thread):
    """Writes ``count`` changes through the real write path, riding out ZooKeeper outages."""

    def __init__(self, connect: str, count: int, entities: int = 6, pause: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.connect = connect
        self.count = count
        self.entities = entities
        self.pause = pause
        self.done = 0
        self.retries = 0
        self.finished_at: float | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            store = ConfigStore.connect(ConnectionSettings(self.connect, timeout=5))
            wait_for(lambda: store.open(), timeout=60, interval=0.2, message="the writer to connect")
            while self.done < self.count:
                i = self.done
                kind = i % 3
                if kind == 0:
                    entity = Entity.of(EntityType.TOPICS, f"load{i % self.entities}")
                    change = {"retention.ms": str(100_000 + i)}
                elif kind == 1:
                    entity = Entity.of(EntityType.USERS, f"User:u{i % self.entities}", DEFAULT)
                    change = {"producer_byte_rate": str(10_000 + i)}
                else:
                    entity = Entity.of(EntityType.BROKERS, DEFAULT)
                    change = {"log.cleaner.threads": str(1 + i % 8)}
                try:
                    alter(store, entity, prepare_change(entity, change))
                except ConfigctlError:
                    self.retries += 1
                    time.sleep(0.1)
                    continue
                self.done += 1
                time.sleep(self.pause)
            store.close()
        except BaseException as exc:  # surfaced by the test
            self.error = exc
        finally:
            self.finished_at = time.monotonic()

    def finish(self, timeout: float = 180.0) -> None:
        self.join(timeout)
        assert not self.is_alive(), f"the write load did not finish ({self.done}/{self.count})"
        if self.error is not None:
            raise self.error
        assert self.done == self.count


def chroot(connect: str) -> str:
    """A fresh chroot on a server the test owns (so a shared ensemble stays tidy)."""
    name = f"/t-{uuid.uuid4().hex[:10]}"
    client = KazooClient(hosts=connect, timeout=10.0)
    client.start(timeout=60)
    try:
        client.ensure_path(name)
    finally:
        client.stop()
        client.close()
    return connect + name


# ----------------------------------------------------------------------------------------------
# ZooKeeper server restarted mid-stream
# ----------------------------------------------------------------------------------------------


def test_zookeeper_server_restart_mid_stream(restartable_zk):
    connect = chroot(restartable_zk.connect_string)
    listener = ConfigListener(connect, 1, STATIC, zk_timeout=10).start(timeout=30)
    try:
        load = WriteLoad(connect, count=120)
        load.start()
        wait_for(lambda: load.done >= 30, timeout=60, message="the first writes")
        restartable_zk.restart(timeout=60)
        load.finish()
        took = assert_converges([listener], connect, "a server restart")
        assert listener.notifications.stats["checks"] > 1
        print(f"converged {took:.2f}s after the last write; writer retried {load.retries} times")
    finally:
        listener.stop()


# ----------------------------------------------------------------------------------------------
# Forced session expiry
# ----------------------------------------------------------------------------------------------


def expire_session(connect: str, client: KazooClient) -> None:
    """Close another client's session from outside, as ZooKeeper does when a session times out."""
    session_id, password = client.client_id
    intruder = KazooClient(hosts=connect, client_id=(session_id, password), timeout=10.0)
    intruder.start(timeout=30)
    intruder.stop()
    intruder.close()


def test_forced_session_expiry_reloads_and_misses_nothing(zk_connect, tmp_path):
    listener = ConfigListener(zk_connect, 1, STATIC, state_dir=tmp_path).start(timeout=30)
    try:
        with ConfigStore.connect(zk_connect) as store:
            first = set_config(store, "topics/orders", **{"retention.ms": "1000"})
            assert listener.wait_for_change(first, timeout=10)
            old_session = listener.session.client.client_id[0]
            loads = listener.manager.counters["full_loads"]
            expire_session(zk_connect, listener.session.client)
            # changes made while the listener finds out and reconnects
            set_config(store, "topics/orders", **{"retention.ms": "2000"})
            set_config(store, "topics/new", **{"cleanup.policy": "compact"})
            set_config(store, f"brokers/{DEFAULT}", **{"log.cleaner.threads": "3"})
            wait_for(
                lambda: (cid := listener.session.client.client_id) and cid[0] != old_session,
                timeout=30,
                message="a new session",
            )
            assert_converges([listener], zk_connect, "a session expiry")
            # the new session brought a full reload (counted by the manager when it applied it)
            wait_for(lambda: listener.manager.counters["full_loads"] > loads, timeout=CONVERGENCE_S)
            # the ephemeral state node belongs to the new session and reports the newest change
            node = wait_for(lambda: store.client.exists("/configctl/brokers/1"), timeout=CONVERGENCE_S)
            assert node.ephemeralOwner == listener.session.client.client_id[0]
            wait_for(
                lambda: fleet.broker_state(store, 1)["last_applied_change"] == latest(store),
                timeout=CONVERGENCE_S,
            )
            assert listener.topic_config("orders")["retention.ms"].value == "2000"
    finally:
        listener.stop()


# ----------------------------------------------------------------------------------------------
# Listener process SIGKILLed and restarted; changes made while it is down
# ----------------------------------------------------------------------------------------------


def spawn_listener(
    connect: str, broker_id: int, properties: Path, state_dir: Path, log: Path
) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGCTL_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    with open(log, "ab") as handle:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "configctl",
                "--zookeeper",
                connect,
                "listener",
                "run",
                "--broker-id",
                str(broker_id),
                "--server-properties",
                str(properties),
                "--state-dir",
                str(state_dir),
            ],
            stdout=handle,
            stderr=handle,
            env=env,
        )


def snapshot_topics(path: Path) -> tuple[set[tuple[str, str, str]], set[int]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    topics = {
        (r["entity_path"], r["name"], r["value"]) for r in rows if r["entity_path"].startswith("topics/")
    }
    return topics, {r["change_number"] for r in rows}


def zk_topics(store: ConfigStore) -> set[tuple[str, str, str]]:
    return {(s.entity.path, k, v) for s in store.read_type(EntityType.TOPICS) for k, v in s.config.items()}


def test_listener_sigkill_and_restart_with_changes_made_while_down(zk_connect, tmp_path):
    properties = tmp_path / "server.properties"
    properties.write_text("broker.id=1\nlog.retention.hours=72\n")
    state_dir, log = tmp_path / "state", tmp_path / "listener.log"
    snapshot = state_dir / "broker-1.jsonl"
    process = spawn_listener(zk_connect, 1, properties, state_dir, log)
    try:
        with ConfigStore.connect(zk_connect) as store:
            first_state = wait_for(
                lambda: fleet.broker_state(store, 1), timeout=60, message="the listener to start"
            )
            for i in range(10):
                set_config(store, f"topics/t{i % 4}", **{"retention.ms": str(5000 + i)})
            wait_for(
                lambda: fleet.broker_state(store, 1)["last_applied_change"] == latest(store),
                timeout=10,
            )

            process.kill()
            assert process.wait(10) == -signal.SIGKILL
            # changes while it is down: new values, a deleted key, a new entity, other types
            set_config(store, "topics/t0", **{"retention.ms": "777", "cleanup.policy": "compact"})
            alter(
                store,
                Entity.of(EntityType.TOPICS, "t1"),
                prepare_change(Entity.of(EntityType.TOPICS, "t1"), {}, ["retention.ms"]),
            )
            set_config(store, "topics/born-while-down", **{"segment.ms": "600000"})
            set_config(store, "users/User%3Aalice", producer_byte_rate="4096")

            process = spawn_listener(zk_connect, 1, properties, state_dir, log)
            wait_for(
                lambda: log.read_text().count("listening as broker 1") == 2, timeout=60, message="the restart"
            )
            started = time.monotonic()
            wait_for(
                lambda: (
                    (s := fleet.broker_state(store, 1))
                    and s["session_id"] != first_state["session_id"]
                    and s["last_applied_change"] == latest(store)
                    and snapshot_topics(snapshot) == (zk_topics(store), {latest(store)})
                ),
                timeout=CONVERGENCE_S,
                message="the restarted listener to converge",
            )
            print(f"restarted listener converged {time.monotonic() - started:.2f}s after it came up")
            rows = [json.loads(line) for line in snapshot.read_text().splitlines()]
            assert ("users/User%3Aalice", "producer_byte_rate", "4096") in {
                (r["entity_path"], r["name"], r["value"]) for r in rows
            }
            process.send_signal(signal.SIGTERM)
            assert process.wait(20) == 0
            assert fleet.broker_state(store, 1) is None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_embedded_listener_restarted_after_changes_made_while_stopped(zk_connect):
    with ConfigStore.connect(zk_connect) as store:
        listener = ConfigListener(zk_connect, 2, STATIC).start(timeout=30)
        set_config(store, "topics/a", **{"retention.ms": "1"})
        set_config(store, "brokers/2", **{"log.cleaner.threads": "2"})
        assert listener.wait_for_change(latest(store), timeout=10)
        listener.stop()
        set_config(store, "topics/a", **{"retention.ms": "2"})
        alter(
            store,
            Entity.of(EntityType.BROKERS, "2"),
            prepare_change(Entity.of(EntityType.BROKERS, "2"), {}, ["log.cleaner.threads"]),
        )
        set_config(store, "ips/10.1.1.1", connection_creation_rate="5")
        again = ConfigListener(zk_connect, 2, STATIC).start(timeout=30)
        try:
            assert converged(again, store)  # start() returns once the full load is applied
            assert again.broker_config()["log.cleaner.threads"].source == "DEFAULT_CONFIG"
            assert again.ip_config("10.1.1.1")["connection_creation_rate"].value == "5"
        finally:
            again.stop()


# ----------------------------------------------------------------------------------------------
# The leader of a three-node ensemble killed under a write load
# ----------------------------------------------------------------------------------------------


def test_ensemble_leader_killed_under_write_load(zk_ensemble):
    connect = chroot(zk_ensemble.connect_string)
    listeners = [ConfigListener(connect, i, STATIC, zk_timeout=10).start(timeout=60) for i in (1, 2, 3)]
    try:
        load = WriteLoad(connect, count=150)
        load.start()
        wait_for(lambda: load.done >= 30, timeout=60, message="the first writes")
        leader = next(node for node in zk_ensemble.status().nodes if node.mode == "leader")
        zk_ensemble.kill_node(leader.id)
        load.finish()
        took = assert_converges(listeners, connect, "the leader was killed")
        with ConfigStore.connect(connect) as store:
            states = fleet.broker_states(store)
            assert sorted(states) == [1, 2, 3]
        print(f"3 listeners converged {took:.2f}s after the last write; writer retried {load.retries} times")
    finally:
        for listener in listeners:
            listener.stop()


@pytest.fixture(autouse=True)
def _quiet_kazoo():
    import logging

    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
