"""The persistent recursive watch on ``/config``, against a real ZooKeeper.

What it promises: a change costs the listener one read (a multiRead of the notification
directory's stat, the notification and the config node it names), kazoo's own one-shot watches
in the same session still fire, events arrive named below the chroot, and after the connection
drops the watch is armed again (nothing waits for the periodic re-list).
"""

from __future__ import annotations

import threading

import pytest
from helpers import count_requests, set_config, wait_for

from configctl.listener import ConfigListener
from configctl.zk import treewatch
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.zk.session import ZkSession

STATIC = {"log.retention.hours": "72"}
READS = ("GetData", "GetChildren", "GetChildren2", "_MultiRead")
"""The reads a change may cause (the purge's ``exists`` on its lease runs on a clock of its own)."""


@pytest.fixture
def store(zk_connect: str):
    with ConfigStore.connect(zk_connect) as opened:
        yield opened


@pytest.mark.parametrize(
    ("tree_watch", "per_change"),
    [(True, {"_MultiRead": 1}), (False, {"GetChildren2": 1, "_MultiRead": 2})],
)
def test_a_change_costs_one_read(store, embedded_listeners, tree_watch, per_change):
    """With the tree watch a change costs one multiRead: the directory's stat, the notification
    and the entity it names. Kafka's child watch lists, then reads the entity the notification
    names (the notification itself is read ahead, with the listing)."""
    listener = embedded_listeners(1, tree_watch=tree_watch, recheck_s=600)
    set_config(store, "topics/warm", **{"retention.ms": "1"})  # the first check arms what it needs
    wait_for(lambda: listener.last_applied_change == store.latest_change_number(), message="warm-up")
    counts = count_requests(listener)
    changes = 10
    for i in range(changes):
        number = set_config(store, f"topics/t{i % 3}", **{"retention.ms": str(1000 + i)})
        assert listener.wait_for_change(number, timeout=10)
        assert listener.topic_config(f"t{i % 3}")["retention.ms"].value == str(1000 + i)
    reads = {kind: counts[kind] for kind in READS if counts[kind]}
    assert reads == {kind: n * changes for kind, n in per_change.items()}


def test_kazoo_watches_in_the_same_session_still_fire(zk_connect, store):
    session = ZkSession(zk_connect).open()
    events: list[tuple[int, str]] = []
    fired = threading.Event()
    try:
        watch = treewatch.TreeWatch(session, "/config", lambda kind, path: events.append((kind, path)))
        assert watch.arm().result() and watch.armed
        set_config(store, "topics/orders", **{"retention.ms": "7"})
        wait_for(
            lambda: (treewatch.CREATED, "/config/topics/orders") in events,
            message="the tree watch's event, named below the chroot",
        )
        wait_for(
            lambda: any(
                kind == treewatch.CREATED and path.startswith("/config/changes/") for kind, path in events
            ),
            message="the notification's event",
        )
        session.client.get("/config/topics/orders", watch=lambda event: fired.set())  # kazoo's one-shot
        set_config(store, "topics/orders", **{"retention.ms": "8"})
        wait_for(fired.is_set, message="kazoo's own data watch")
        wait_for(lambda: (treewatch.CHANGED, "/config/topics/orders") in events, message="the change event")
        watch.close()
        seen = len(events)
        set_config(store, "topics/orders", **{"retention.ms": "9"})
        session.client.sync("/config")  # any event for that write has arrived by now
        assert len(events) == seen  # closed: told nothing more
    finally:
        session.close()


def test_the_watch_is_armed_again_after_the_connection_drops(restartable_zk):
    """recheck_s=600: only a re-armed watch can tell the listener of the change after the restart."""
    connect = restartable_zk.connect_string
    listener = ConfigListener(connect, 1, STATIC, zk_timeout=15, recheck_s=600).start(timeout=30)
    try:
        with ConfigStore.connect(connect) as store:
            first = set_config(store, "topics/orders", **{"retention.ms": "1"})
            assert listener.wait_for_change(first, timeout=10)
        session = listener.session.session_id
        checks = listener.notifications.stats["checks"]
        restartable_zk.restart(timeout=60)
        wait_for(
            lambda: (
                listener.notifications.stats["checks"] > checks and listener.notifications.watch.tree_armed
            ),
            timeout=30,
            message="the watch armed again",
        )
        assert listener.session.session_id == session  # the session survived: only the connection was new
        with ConfigStore.connect(connect) as store:
            second = set_config(store, "topics/orders", **{"retention.ms": "2"})
            assert listener.wait_for_change(second, timeout=10)
        assert listener.topic_config("orders")["retention.ms"].value == "2"
    finally:
        listener.stop()


def test_an_event_that_never_arrives_is_caught_by_the_directory_stat(store, embedded_listeners):
    """ZooKeeper sends no event for a node the session may not read, and none is ever resent:
    the next check's directory stat counts one child more than the events told, so it lists."""
    listener = embedded_listeners(1, recheck_s=600)
    watch = listener.notifications.watch
    deliver = watch._on_tree_event
    dropped: list[str] = []

    def lossy(kind, path):
        if not dropped and kind == treewatch.CREATED and path.startswith("/config/changes/"):
            dropped.append(path)  # this one never reaches the listener
            return
        deliver(kind, path)

    watch._on_tree_event = lossy
    watch._tree._listener = lossy
    lost = set_config(store, "topics/unseen", **{"retention.ms": "11"})
    wait_for(lambda: dropped, message="the dropped event")
    lists = count_requests(listener)
    told = set_config(store, "topics/seen", **{"retention.ms": "12"})
    assert listener.wait_for_change(told, timeout=10)
    assert lost < told and listener.topic_config("unseen")["retention.ms"].value == "11"
    assert lists["GetChildren2"] >= 1  # found by a listing, not by an event


def test_listeners_sharing_a_session_each_hear_the_watch(zk_connect, store):
    """Two brokers embedded on one session (the caller's): one watch each on the same path, and
    every event reaches both; stopping one leaves the other hearing."""
    session = ZkSession(zk_connect).open()
    first = ConfigListener(session, 1, STATIC, recheck_s=600).start(timeout=30)
    second = ConfigListener(session, 2, STATIC, recheck_s=600).start(timeout=30)
    try:
        number = set_config(store, "topics/shared", **{"retention.ms": "5"})
        assert first.wait_for_change(number, timeout=10) and second.wait_for_change(number, timeout=10)
        first.stop()
        number = set_config(store, "topics/shared", **{"retention.ms": "6"})
        assert second.wait_for_change(number, timeout=10)
        assert second.topic_config("shared")["retention.ms"].value == "6"
    finally:
        first.stop()
        second.stop()
        session.close()
