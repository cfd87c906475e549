"""The embedded listener against a real ZooKeeper: following changes, poison input, expiry, state."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path

import pytest
from helpers import run_cli, set_config, wait_for, zookeeper_truth

from configctl import fleet
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.listener import ConfigListener
from configctl.store import Change
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.znodes import CHANGES_PATH, NOTIFICATION_PATH_PREFIX, encode_entity_config

STATIC = {"broker.id": "1", "log.retention.hours": "72", "num.io.threads": "16", "log.dirs": "/data/k1"}


@pytest.fixture
def store(zk_connect: str):
    with ConfigStore.connect(zk_connect) as opened:
        yield opened


@pytest.fixture
def start_listener(zk_connect: str):
    started: list[ConfigListener] = []

    def start(broker_id: int = 1, static=None, **kwargs) -> ConfigListener:
        listener = ConfigListener(
            zk_connect, broker_id, static or {**STATIC, "broker.id": str(broker_id)}, **kwargs
        )
        started.append(listener.start(timeout=30))
        return listener

    yield start
    for listener in started:
        listener.stop()


def converged(listener: ConfigListener, store: ConfigStore) -> bool:
    latest = store.latest_change_number()
    return listener.configs() == zookeeper_truth(
        store, listener.broker_id
    ) and listener.last_applied_change == (-1 if latest is None else latest)


def test_follows_changes_and_publishes_state_and_snapshot(store, start_listener, tmp_path):
    listener = start_listener(state_dir=tmp_path)
    first = set_config(
        store, "topics/orders", **{"retention.ms": "86400000", "cleanup.policy": "compact,delete"}
    )
    set_config(store, f"brokers/{DEFAULT}", **{"log.retention.ms": "3600000"})
    last = set_config(store, "users/User%3Aalice/clients/app1", consumer_byte_rate="2048")
    assert listener.wait_for_change(last, timeout=10)
    assert first < last

    retention = listener.topic_config("orders")["retention.ms"]
    assert (retention.value, retention.source) == ("86400000", "DYNAMIC_TOPIC_CONFIG")
    assert listener.topic_config("other")["retention.ms"].source == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    quota = listener.quota_config("User:alice", "app1")["consumer_byte_rate"]
    assert (quota.value, quota.source) == ("2048", "users/User%3Aalice/clients/app1")

    state = wait_for(lambda: (s := fleet.broker_state(store, 1)) and s["last_applied_change"] == last and s)
    assert state["broker_id"] == 1 and isinstance(state["applied_at_ms"], int)
    assert state["static_config"]["num.io.threads"] == "16"
    owner = store.client.exists("/configctl/brokers/1").ephemeralOwner
    assert owner == listener.session.client.client_id[0]

    rows = [json.loads(line) for line in (tmp_path / "broker-1.jsonl").read_text().splitlines()]
    assert {r["change_number"] for r in rows} == {last}
    assert {
        (r["entity_path"], r["name"], r["value"]) for r in rows if r["entity_path"] == "topics/orders"
    } == {
        ("topics/orders", "retention.ms", "86400000"),
        ("topics/orders", "cleanup.policy", "compact,delete"),
    }
    assert any(r["entity_path"] == "brokers/1" and r["name"] == "log.retention.ms" for r in rows)

    listener.stop()
    assert fleet.broker_state(store, 1) is None  # removed on a clean stop


def test_initial_load_sees_everything_written_before_start(store, start_listener):
    for i in range(30):
        set_config(store, f"topics/t{i % 7}", **{"retention.ms": str(1000 + i)})
    set_config(store, "brokers/2", **{"log.cleaner.threads": "9"})  # another broker's: not followed
    listener = start_listener()
    assert converged(listener, store)
    assert listener.topic_config("t6")["retention.ms"].value == "1027"
    assert "brokers/2" not in listener.configs()


@pytest.mark.parametrize("enabled", [True, False])
def test_a_full_load_gives_the_garbage_collector_back_as_it_found_it(store, start_listener, enabled):
    # the load pauses Python's cyclic collector (configctl.gcpause) in the host process
    set_config(store, "topics/t", **{"retention.ms": "1000"})
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        listener = start_listener()
        assert converged(listener, store)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_many_notifications_for_one_entity_coalesce(zk, start_listener):
    listener = start_listener()
    zk.create("/config/topics/hot", encode_entity_config({}), makepath=True)
    zk.ensure_path(CHANGES_PATH)
    transaction = zk.transaction()
    for i in range(100):  # 100 changes to one topic, committed at once as writers racing would
        transaction.set_data("/config/topics/hot", encode_entity_config({"retention.ms": str(1000 + i)}))
        transaction.create(
            NOTIFICATION_PATH_PREFIX, b'{"version":2,"entity_path":"topics/hot"}', sequence=True
        )
    results = transaction.commit()
    last = int(results[-1].rsplit("_", 1)[1])
    assert listener.wait_for_change(last, timeout=10)
    assert listener.topic_config("hot")["retention.ms"].value == "1099"
    wait_for(lambda: listener.notifications.stats["notifications_processed"] == 100, message="the count")
    # 100 notifications became one read and one applied change
    assert listener.manager.counters["applied_changes"] == 1


def test_version_1_notifications_are_applied(zk, zk_connect, store, start_listener):
    listener = start_listener()
    zk.create("/config/topics/legacy", encode_entity_config({"retention.ms": "123456"}), makepath=True)
    zk.ensure_path(CHANGES_PATH)
    path = zk.create(
        NOTIFICATION_PATH_PREFIX,
        b'{"version":1,"entity_type":"topics","entity_name":"legacy"}',
        sequence=True,
    )
    number = int(path.rsplit("_", 1)[1])
    assert listener.wait_for_change(number, timeout=10)
    assert listener.topic_config("legacy")["retention.ms"].value == "123456"


def test_poison_notifications_and_configs_never_block_later_changes(zk, store, start_listener):
    listener = start_listener()
    zk.ensure_path(CHANGES_PATH)
    zk.create(NOTIFICATION_PATH_PREFIX, b"{not json", sequence=True)
    zk.create(NOTIFICATION_PATH_PREFIX, b'{"version":2,"entity_path":"widgets/w1"}', sequence=True)
    zk.create(f"{CHANGES_PATH}/garbage", b"")
    good = set_config(store, "topics/orders", **{"retention.ms": "1000"})
    assert listener.wait_for_change(good, timeout=10)  # the listener has seen the good config
    zk.set("/config/topics/orders", b'{"version":1,"config":{"retention.ms":"not a number"}}')
    zk.create(NOTIFICATION_PATH_PREFIX, b'{"version":2,"entity_path":"topics/orders"}', sequence=True)
    zk.create("/config/topics/broken", b"\xff\xfe", makepath=True)
    zk.create(NOTIFICATION_PATH_PREFIX, b'{"version":2,"entity_path":"topics/broken"}', sequence=True)
    last = set_config(store, "topics/after", **{"retention.ms": "2000"})

    assert listener.wait_for_change(last, timeout=10)
    assert listener.topic_config("after")["retention.ms"].value == "2000"
    assert listener.topic_config("orders")["retention.ms"].value == "1000"  # the last good config
    state = wait_for(lambda: (s := fleet.broker_state(store, 1)) and s["last_applied_change"] == last and s)
    problems = state["problems"]
    assert all(p["kind"] == "poison" for p in problems)
    paths = {p["entity_path"] for p in problems}
    assert {"topics/orders", "topics/broken"} <= paths
    assert sum(1 for p in problems if p.get("notification")) == 3  # two bad bodies, one bad name
    assert {p["notification"] for p in problems if p.get("notification")} >= {"garbage"}
    assert state["counters"]["poison_problems"] == 5

    # the bad topic is fixed later: it takes effect and leaves the report
    fixed = set_config(store, "topics/orders", **{"retention.ms": "5000"})
    assert listener.wait_for_change(fixed, timeout=10)
    assert listener.topic_config("orders")["retention.ms"].value == "5000"
    assert "topics/orders" not in {p.entity_path for p in listener.manager.problems()}


def test_expired_notifications_are_purged_with_few_lookups(store, start_listener):
    listener = start_listener(change_expiration_ms=1000, purge_jitter_ms=0)
    for i in range(40):
        set_config(store, f"topics/p{i}", **{"retention.ms": str(1000 + i)})
    time.sleep(1.2)
    recent = set_config(store, "topics/fresh", **{"retention.ms": "1"})
    assert listener.wait_for_change(recent, timeout=10)
    wait_for(lambda: [n.number for n in store.notifications()] == [recent], message="purge")
    stats = listener.notifications.stats
    wait_for(lambda: stats["purged_notifications"] == 40, message="the purge count")
    # each search is a binary search (at most 2 + log2(41) stats), and most callbacks need none
    assert stats["purge_lookups"] <= stats["purge_searches"] * 8
    assert stats["purge_searches"] <= stats["checks"]
    assert converged(listener, store)


def test_brokers_purging_at_once_do_not_fail_on_each_others_deletes(store, start_listener):
    listeners = [start_listener(broker_id=i, change_expiration_ms=1000, purge_jitter_ms=0) for i in (1, 2, 3)]
    for i in range(60):
        set_config(store, f"topics/q{i}", **{"retention.ms": str(i + 1)})
    time.sleep(1.2)
    last = set_config(store, "topics/trigger", **{"retention.ms": "7"})
    for listener in listeners:
        assert listener.wait_for_change(last, timeout=10)
    wait_for(lambda: [n.number for n in store.notifications()] == [last], message="purge")
    wait_for(
        lambda: sum(lst.notifications.stats["purged_notifications"] for lst in listeners) == 60,
        message="the purge counts",
    )
    assert all(lst.notifications.stats["errors"] == 0 for lst in listeners)


def test_plugins_see_changes_and_a_rejection_is_published(store, start_listener):
    from examples.plugins.quota_enforcer import ClientQuotaEnforcer

    enforcer = ClientQuotaEnforcer()
    listener = start_listener(plugins=[enforcer, "examples.plugins.log_retention:LogRetentionApplier"])
    good = set_config(store, f"users/{DEFAULT}", producer_byte_rate="4096")
    assert listener.wait_for_change(good, timeout=10)
    assert enforcer.rate("User:x", "c", "produce") == 4096
    bad = set_config(store, "topics/orders", **{"retention.ms": "10"})  # below the applier's minimum
    assert listener.wait_for_change(bad, timeout=10)
    assert listener.topic_config("orders")["retention.ms"].source != "DYNAMIC_TOPIC_CONFIG"
    state = wait_for(lambda: (s := fleet.broker_state(store, 1)) and s["last_applied_change"] == bad and s)
    (rejected,) = state["problems"]
    assert (rejected["kind"], rejected["entity_path"], rejected["change_number"]) == (
        "rejected",
        "topics/orders",
        bad,
    )
    assert rejected["plugin"] == "log-retention-applier"
    assert state["plugins"] == ["client-quota-enforcer", "log-retention-applier"]


def test_describe_effective_uses_the_published_static_config(zk_connect, store, start_listener):
    listener = start_listener()
    set_config(store, f"brokers/{DEFAULT}", **{"log.retention.ms": "3600000"})
    set_config(store, "topics/orders", **{"cleanup.policy": "compact"})
    last = set_config(store, f"users/{DEFAULT}/clients/app1", producer_byte_rate="1024")
    assert listener.wait_for_change(last, timeout=10)

    code, out, err = run_cli(
        "--zookeeper", zk_connect, "describe", "--effective", "--broker", "1", "-o", "json"
    )
    assert code == 0, err
    document = json.loads(out)
    assert (document["broker_id"], document["entity_path"]) == (1, "brokers/1")
    rows = {c["name"]: c for c in document["configs"]}
    assert set(rows["num.io.threads"]) == {"name", "value", "source", "synonyms"}
    assert (rows["num.io.threads"]["value"], rows["num.io.threads"]["source"]) == (
        "16",
        "STATIC_BROKER_CONFIG",
    )
    assert rows["log.retention.ms"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert [s["source"] for s in rows["log.retention.ms"]["synonyms"]] == [
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "STATIC_BROKER_CONFIG",
        "DEFAULT_CONFIG",
    ]
    # the same answer the listener gives
    assert rows["log.retention.ms"] == listener.broker_config()["log.retention.ms"].to_json()

    code, out, err = run_cli(
        "--zookeeper",
        zk_connect,
        "describe",
        "--effective",
        "--broker",
        "1",
        "--topic",
        "orders",
        "-o",
        "json",
    )
    assert code == 0, err
    rows = {c["name"]: c for c in json.loads(out)["configs"]}
    assert (rows["cleanup.policy"]["value"], rows["cleanup.policy"]["source"]) == (
        "compact",
        "DYNAMIC_TOPIC_CONFIG",
    )
    assert (rows["retention.ms"]["value"], rows["retention.ms"]["source"]) == (
        "3600000",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    )

    code, out, err = run_cli(
        "--zookeeper", zk_connect, "describe", "--effective", "--broker", "1",
        "--user", "User:bob", "--client", "app1", "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    document = json.loads(out)
    assert document["entity_path"] == "users/User%3Abob/clients/app1"
    rows = {c["name"]: c for c in document["configs"]}
    assert (rows["producer_byte_rate"]["value"], rows["producer_byte_rate"]["source"]) == (
        "1024",
        f"users/{DEFAULT}/clients/app1",
    )

    code, _, err = run_cli("--zookeeper", zk_connect, "describe", "--effective", "--broker", "9")
    assert code == 6 and err.startswith("error: broker 9 has no running listener") and err.count("\n") == 1


def test_snapshot_of_many_topics_is_written_whole(store, start_listener, tmp_path: Path):
    entity_changes = [
        Change(Entity.of(EntityType.TOPICS, f"bulk{i:04d}"), {"retention.ms": str(i + 1)}, -1)
        for i in range(2000)
    ]
    for _ in store.commit_batches(entity_changes):
        pass
    listener = start_listener(state_dir=tmp_path)
    lines = (tmp_path / "broker-1.jsonl").read_text().splitlines()
    topic_rows = [json.loads(line) for line in lines if '"topics/' in line]
    assert len(topic_rows) == 2000
    assert {r["change_number"] for r in topic_rows} == {listener.last_applied_change}


def test_a_notification_purged_before_it_is_read_triggers_a_full_reload(store, start_listener):
    listener = start_listener()
    listener.notifications.speculate = 0  # no guessed reads: the only ones are those the tree watch told of
    real_read, real_read_later = listener.session.get_many, listener.session.read_later
    raced: list[str] = []

    def race(paths):
        # Another broker purges the notification between our listing and our read (a real delete).
        notifications = [p for p in paths if p.startswith(f"{CHANGES_PATH}/")]
        if not raced and notifications:
            raced.append(notifications[0])
            store.client.delete(notifications[0])

    def racing_read(paths, **kwargs):
        race(paths)
        return real_read(paths, **kwargs)

    def racing_read_later(paths):
        # sent after the listing: once a request of ours behind it is answered, the listing was
        listener.session.client.exists(CHANGES_PATH)
        race(paths)
        return real_read_later(paths)

    loads = listener.notifications.stats["full_loads"]
    before = listener.last_applied_change
    listener.session.get_many = racing_read
    listener.session.read_later = racing_read_later
    set_config(store, "topics/raced", **{"retention.ms": "4242"})
    wait_for(lambda: listener.topic_config("raced")["retention.ms"].value == "4242", message="the change")
    assert raced
    wait_for(lambda: listener.notifications.stats["full_loads"] == loads + 1, message="the reload")
    # the purged notification's number is gone with it; the newest remaining one is applied
    remaining = store.latest_change_number()
    assert listener.last_applied_change == max(before, -1 if remaining is None else remaining)
    assert listener.configs() == zookeeper_truth(store, 1)


def test_changes_path_created_between_listing_and_watch_is_not_missed(zk_connect, store):
    """/config/changes appears after the listener found it missing but before it set the watch
    (Kafka's one-shot child watch; the tree watch is armed before the listing, so has no such gap)."""
    listener = ConfigListener(zk_connect, 1, STATIC, tree_watch=False)
    real_exists = listener.session.client.exists_async
    committed: list[int] = []

    def racing_exists(path, watch=None):
        if path == CHANGES_PATH and not committed:
            committed.append(set_config(store, "topics/first", **{"retention.ms": "31337"}))
        return real_exists(path, watch=watch)

    listener.session.client.exists_async = racing_exists
    listener.start(timeout=30)
    try:
        wait_for(lambda: committed, message="the race to be exercised")
        assert listener.wait_for_change(committed[0], timeout=10)
        assert listener.topic_config("first")["retention.ms"].value == "31337"
        later = set_config(store, "topics/second", **{"retention.ms": "1"})
        assert listener.wait_for_change(later, timeout=10)  # the child watch is armed
    finally:
        listener.stop()
