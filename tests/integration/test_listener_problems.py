"""Problems (docs/reference/state-and-fleet-nodes.md) against a real ZooKeeper: the listener never stalls, whatever it cannot apply.

Each loop that can fail is made to fail here: a config node the listener may not read (a user
written by an authenticated client, owner-only as Kafka's ACL layout makes it) and a directory it
may not list; poison JSON in a notification and in a config; a notification node it may not read;
a plugin rejection; notifications it may not purge; a state node it may not write. Every time:
later changes still apply, the problem is in the state node with a one-line reason, it is logged
once at WARNING (no traceback) and counted, and it clears when its entity next applies cleanly.
"""

from __future__ import annotations

import json
import logging
import time

import pytest
from helpers import run_cli, set_config, wait_for
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

from configctl import fleet
from configctl.errors import PermissionDenied
from configctl.listener import ConfigListener
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.zkconnection import ConnectionSettings
from configctl.znodes import CHANGES_PATH, NOTIFICATION_PATH_PREFIX, FleetRecordZNode

ADMIN = "digest:admin:s3cret"
STATIC = {"log.retention.hours": "72"}


@pytest.fixture
def admin(zk_connect: str):
    """A store authenticated as ``admin``: what it creates under users/brokers is owner-only."""
    with ConfigStore.connect(ConnectionSettings.of(zk_connect, auth=ADMIN)) as store:
        yield store


@pytest.fixture
def admin_zk(zk_connect: str):
    client = KazooClient(hosts=zk_connect, timeout=10.0, auth_data=[("digest", "admin:s3cret")])
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def listeners(embedded_listeners):
    return embedded_listeners


def published(store, broker_id: int, change: int) -> dict:
    return wait_for(
        lambda: (s := fleet.broker_state(store, broker_id)) and s["last_applied_change"] >= change and s,
        timeout=10,
        message=f"broker {broker_id} to publish change {change}",
    )


def problems_of(state: dict, kind: str) -> dict[str, dict]:
    return {p["entity_path"] or p.get("notification"): p for p in state["problems"] if p["kind"] == kind}


def warnings(caplog, needle: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and needle in r.getMessage()]


def assert_one_line_warnings(caplog) -> None:
    for record in caplog.records:
        if record.name.startswith("configctl") and record.levelno >= logging.WARNING:
            assert record.exc_info is None, record.getMessage()
            assert "\n" not in record.getMessage()


# ----------------------------------------------------------------------------------------------
# a node the listener may not read
# ----------------------------------------------------------------------------------------------


def test_an_owner_only_node_never_stalls_a_listener_and_is_retried(
    zk_connect, admin, admin_zk, listeners, caplog
):
    caplog.set_level(logging.INFO, logger="configctl")
    first = listeners(1)  # no credentials (it creates /configctl/... open, as a first start does)
    # The observed case: a SCRAM user written by an authenticated client (owner-only node).
    written = run_cli(
        "--zookeeper", zk_connect, "--zk-auth", ADMIN,
        "alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=[password=alice-secret]",
    )  # fmt: skip
    assert written.returncode == 0, written
    later = set_config(admin, "topics/orders", **{"retention.ms": "1000"})
    assert first.wait_for_change(later, timeout=10), "one unreadable node stalled the listener"
    assert first.topic_config("orders")["retention.ms"].value == "1000"

    state = published(admin, 1, later)
    unreadable = problems_of(state, "unreadable")
    assert set(unreadable) == {"users/alice"}
    reason = unreadable["users/alice"]["reason"]
    assert "no permission" in reason and "\n" not in reason
    assert unreadable["users/alice"]["change_number"] == later - 1
    assert state["counters"]["unreadable_problems"] == 1
    assert [p.entity_path for p in first.problems()] == ["users/alice"]  # the library sees the same list

    # The entity changes again: retried (still unreadable: listed once, logged once, counted once).
    again = set_config(admin, "users/alice", producer_byte_rate="4096")
    last = set_config(admin, "topics/orders", **{"retention.ms": "2000"})
    assert first.wait_for_change(last, timeout=10)
    state = published(admin, 1, last)
    assert problems_of(state, "unreadable")["users/alice"]["change_number"] == again
    assert len(warnings(caplog, "users/alice")) == 1
    assert state["counters"]["unreadable_problems"] == 1
    assert state["counters"]["listener_errors"] == 0

    # A listener started now, with an unreadable /config/users listing, still starts.
    second = listeners(2)
    assert second.last_applied_change == last
    assert second.topic_config("orders")["retention.ms"].value == "2000"
    state2 = published(admin, 2, last)
    assert set(problems_of(state2, "unreadable")) == {"users"}
    assert "cannot list /config/users" in problems_of(state2, "unreadable")["users"]["reason"]

    # The node becomes readable (the directory stays unlisted): a full reload retries the entity
    # it knows about, and its problem clears (the listing's own problem takes its place).
    owner = make_digest_acl("admin", "s3cret", all=True)
    admin_zk.set_acls("/config/users/alice", [owner, *OPEN_ACL_UNSAFE])
    first.notifications.request_reload()
    wait_for(lambda: first.quota_config("alice")["producer_byte_rate"].value == "4096", timeout=10)
    wait_for(
        lambda: [(p.kind, p.entity_path) for p in first.problems()] == [("unreadable", "users")],
        timeout=10,
        message="the node's problem to clear",
    )
    # Broker 2 never heard of alice: its change is retried when it changes again.
    fixed = set_config(admin, "users/alice", producer_byte_rate="8192")
    assert second.wait_for_change(fixed, timeout=10)
    assert second.quota_config("alice")["producer_byte_rate"].value == "8192"
    assert set(problems_of(published(admin, 2, fixed), "unreadable")) == {"users"}
    # ... and the listing problem clears on a full reload once the directory is readable.
    admin_zk.set_acls("/config/users", [owner, *OPEN_ACL_UNSAFE])
    for listener in (first, second):
        listener.notifications.request_reload()
        wait_for(
            lambda listener=listener: not listener.problems(),
            timeout=10,
            message="the listing problem to clear",
        )
    assert first.configs() == second.configs()
    assert_one_line_warnings(caplog)
    assert "Traceback" not in caplog.text


def test_a_listener_that_may_not_write_its_state_exits_4_at_start(zk_connect, admin, tmp_path):
    set_config(admin, "topics/orders", **{"retention.ms": "1000"})  # /configctl is now admin's
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\n")
    started = time.monotonic()
    result = run_cli(
        "--zookeeper", zk_connect, "listener", "run", "--broker-id", "1", "--server-properties", str(props),
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 4, result
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "/configctl/brokers" in result.stderr and "no permission" in result.stderr
    assert time.monotonic() - started < 30
    # wrong credentials: the same
    wrong = run_cli(
        "--zookeeper", zk_connect, "--zk-auth", "digest:mallory:x", "listener", "run",
        "--broker-id", "1", "--server-properties", str(props), timeout=60,
    )  # fmt: skip
    assert wrong.returncode == 4 and wrong.stderr.count("\n") == 1, wrong
    # the right credentials: it runs (embedded, to keep the test short)
    with pytest.raises(PermissionDenied):
        ConfigListener(zk_connect, 1, STATIC).start(timeout=30)
    listener = ConfigListener(zk_connect, 1, STATIC, zk_auth=ADMIN).start(timeout=30)
    try:
        assert listener.topic_config("orders")["retention.ms"].value == "1000"
    finally:
        listener.stop()


# ----------------------------------------------------------------------------------------------
# poison, unreadable notifications, rejections, purges
# ----------------------------------------------------------------------------------------------


def test_poison_and_unreadable_notifications_are_listed_logged_once_and_counted(
    zk, zk_connect, listeners, caplog
):
    caplog.set_level(logging.INFO, logger="configctl")
    listener = listeners(1)
    with ConfigStore.connect(zk_connect) as store:
        good = set_config(store, "topics/orders", **{"retention.ms": "1000"})
        assert listener.wait_for_change(good, timeout=10)
        zk.set("/config/topics/orders", b'{"version":1,"config":{"retention.ms":1000}}')  # a number
        zk.create(NOTIFICATION_PATH_PREFIX, b'{"version":2,"entity_path":"topics/orders"}', sequence=True)
        zk.create(NOTIFICATION_PATH_PREFIX, b"\x00not json", sequence=True)
        secret = make_digest_acl("someone", "else", all=True)
        locked = zk.create(NOTIFICATION_PATH_PREFIX, b"{}", sequence=True, acl=[secret])
        last = set_config(store, "topics/after", **{"retention.ms": "3000"})
        assert listener.wait_for_change(last, timeout=10)
        assert listener.topic_config("after")["retention.ms"].value == "3000"
        assert listener.topic_config("orders")["retention.ms"].value == "1000"
        state = published(store, 1, last)
        poison = problems_of(state, "poison")
        assert (
            "topics/orders" in poison
            and "Kafka stores every value as a string" in poison["topics/orders"]["reason"]
        )
        assert len([p for p in poison.values() if p.get("notification")]) == 1
        unreadable = problems_of(state, "unreadable")
        assert list(unreadable) == [locked.rsplit("/", 1)[1]]
        assert state["counters"]["poison_problems"] == 2 and state["counters"]["unreadable_problems"] == 1
        # each logged once, on one line
        assert len(warnings(caplog, "poison: topics/orders")) == 1
        assert len(warnings(caplog, "unreadable: config_change_")) == 1
        # the entity is fixed: applied, and its entry leaves the list
        zk.set("/config/topics/orders", b'{"version":1,"config":{"retention.ms":"5000"}}')
        created = zk.create(
            NOTIFICATION_PATH_PREFIX, b'{"version":2,"entity_path":"topics/orders"}', sequence=True
        )
        fixed = int(created.rsplit("_", 1)[1])
        assert listener.wait_for_change(fixed, timeout=10)
        assert "topics/orders" not in problems_of(published(store, 1, fixed), "poison")
    assert_one_line_warnings(caplog)


def test_a_plugin_rejection_is_listed_once_and_cleared_by_an_accepted_change(zk_connect, listeners, caplog):
    caplog.set_level(logging.INFO, logger="configctl")
    listener = listeners(1, plugins=["examples.plugins.log_retention:LogRetentionApplier"])
    with ConfigStore.connect(zk_connect) as store:
        bad = set_config(store, "topics/orders", **{"retention.ms": "10"})  # below the applier's minimum
        later = set_config(store, "topics/other", **{"retention.ms": "600000"})
        assert listener.wait_for_change(later, timeout=10)
        assert listener.topic_config("other")["retention.ms"].value == "600000"
        rejected = problems_of(published(store, 1, later), "rejected")["topics/orders"]
        assert rejected["change_number"] == bad and rejected["plugin"] == "log-retention-applier"
        assert len(warnings(caplog, "rejected: topics/orders")) == 1
        accepted = set_config(store, "topics/orders", **{"retention.ms": "600000"})
        assert listener.wait_for_change(accepted, timeout=10)
        state = published(store, 1, accepted)
        assert state["problems"] == [] and state["counters"]["rejected_problems"] == 1


def test_notifications_it_may_not_purge_never_hold_up_applying(zk_connect, admin, listeners, caplog):
    caplog.set_level(logging.INFO, logger="configctl")
    listener = listeners(1, change_expiration_ms=500, purge_jitter_ms=0)
    first = set_config(admin, "topics/a", **{"retention.ms": "1000"})  # /config/changes: admin's
    assert listener.wait_for_change(first, timeout=10)
    time.sleep(0.7)
    numbers = [set_config(admin, f"topics/t{i}", **{"retention.ms": str(2000 + i)}) for i in range(3)]
    assert listener.wait_for_change(numbers[-1], timeout=10)
    wait_for(lambda: listener.notifications.stats["purge_errors"] >= 1, timeout=10, message="a failed purge")
    assert listener.topic_config("t2")["retention.ms"].value == "2002"
    assert len(warnings(caplog, "cannot purge expired notifications")) == 1
    assert listener.notifications.stats["errors"] == 0
    assert admin.session.children(CHANGES_PATH)  # nothing was deleted
    assert listener.health()[0]


# ----------------------------------------------------------------------------------------------
# the fleet record
# ----------------------------------------------------------------------------------------------


def test_the_fleet_record_is_kept_throttled_and_outlives_the_listener(zk, zk_connect, listeners):
    with ConfigStore.connect(zk_connect) as store:
        before = set_config(store, "topics/a", **{"retention.ms": "1"})
        listener = listeners(7)
        record = json.loads(zk.get(FleetRecordZNode.path(7))[0])
        assert record["broker_id"] == 7 and record["last_applied_change"] == before
        assert record["host"] and record["last_seen_ms"] > 0
        writes = listener.fleet_record.writes
        last = before
        for i in range(30):
            last = set_config(store, f"topics/b{i % 3}", **{"retention.ms": str(10 + i)})
        assert listener.wait_for_change(last, timeout=20)
        wait_for(
            lambda: json.loads(zk.get(FleetRecordZNode.path(7))[0])["last_applied_change"] == last,
            timeout=3,
            message="the fleet record to catch up",
        )
        # 30 changes in well under 30 s: far fewer writes than changes
        assert listener.fleet_record.writes - writes <= 1 + 30 // 5
        listener.stop()
        assert fleet.broker_state(store, 7) is None  # the state node goes with the listener
        data, stat = zk.get(FleetRecordZNode.path(7))  # the fleet record stays
        assert json.loads(data)["last_applied_change"] == last and stat.ephemeralOwner == 0
