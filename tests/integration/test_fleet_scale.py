"""At fleet size: one purger at a time (the purge lease), against a real ZooKeeper.

Kafka's brokers all purge expired notifications; with N listeners that is N searches after every
change and every delete waking the whole fleet. configctl's listeners take turns through an
ephemeral lease node: these tests fail if two purge at once, if nobody purges, or if the lease
is not taken over when its holder stops.
"""

from __future__ import annotations

import time

import pytest
from helpers import set_config, wait_for

from configctl.listener import ConfigListener
from configctl.zk import purge
from configctl.zk.configstore import ZooKeeperStore as ConfigStore

STATIC = {"log.retention.hours": "72"}


@pytest.fixture
def store(zk_connect: str):
    with ConfigStore.connect(zk_connect) as opened:
        yield opened


@pytest.fixture
def fleet_of(zk_connect: str):
    started: list[ConfigListener] = []

    def start(count: int, **kwargs) -> list[ConfigListener]:
        for broker_id in range(1, count + 1):
            listener = ConfigListener(
                zk_connect, broker_id, {**STATIC, "broker.id": str(broker_id)}, **kwargs
            )
            started.append(listener.start(timeout=30))
        return list(started)

    yield start
    for listener in started:
        listener.stop()


def purgers(listeners: list[ConfigListener]) -> list[int]:
    return [lst.broker_id for lst in listeners if lst.notifications.stats["purge_searches"] > 0]


def test_one_listener_purges_for_the_whole_fleet(store, fleet_of):
    listeners = fleet_of(5, change_expiration_ms=1000, purge_jitter_ms=0)
    for i in range(30):
        set_config(store, f"topics/e{i}", **{"retention.ms": str(1000 + i)})
    time.sleep(1.2)
    last = set_config(store, "topics/trigger", **{"retention.ms": "7"})
    for listener in listeners:
        assert listener.wait_for_change(last, timeout=10)
    wait_for(lambda: [n.number for n in store.notifications()] == [last], timeout=15, message="purge")
    assert sum(lst.notifications.stats["purged_notifications"] for lst in listeners) == 30
    assert len(purgers(listeners)) == 1  # the others never even looked up a node
    holder = purgers(listeners)[0]
    assert store.session.exists(purge.LEASE_PATH).ephemeralOwner == listeners[holder - 1].session.session_id
    assert all(lst.notifications.stats["errors"] == 0 for lst in listeners)


def test_the_lease_passes_on_when_its_holder_stops(store, fleet_of, monkeypatch):
    monkeypatch.setattr(purge, "LEASE_CHECK_S", 0.5)
    listeners = fleet_of(3, change_expiration_ms=1000, purge_jitter_ms=0)
    first = set_config(store, "topics/a", **{"retention.ms": "1"})
    time.sleep(1.2)
    second = set_config(store, "topics/b", **{"retention.ms": "2"})
    wait_for(lambda: [n.number for n in store.notifications()] == [second], timeout=15, message="purge")
    assert first < second
    (holder,) = [lst for lst in listeners if lst.broker_id in purgers(listeners)]
    holder.stop()  # its session ends: the lease node goes with it
    rest = [lst for lst in listeners if lst is not holder]
    time.sleep(1.2)
    third = set_config(store, "topics/c", **{"retention.ms": "3"})
    wait_for(
        lambda: [n.number for n in store.notifications()] == [third],
        timeout=15,
        message="purge by the next holder",
    )
    assert len(purgers(rest)) == 1
    owner = store.session.exists(purge.LEASE_PATH).ephemeralOwner
    assert owner in {lst.session.session_id for lst in rest}


def test_without_a_lease_every_listener_purges_as_kafka_does(store, fleet_of, monkeypatch):
    monkeypatch.setattr(purge, "LEASE_PATH", None)
    listeners = fleet_of(3, change_expiration_ms=1000, purge_jitter_ms=0)
    for i in range(10):
        set_config(store, f"topics/k{i}", **{"retention.ms": str(i + 1)})
    time.sleep(1.2)
    last = set_config(store, "topics/trigger", **{"retention.ms": "7"})
    for listener in listeners:
        assert listener.wait_for_change(last, timeout=10)
    wait_for(lambda: [n.number for n in store.notifications()] == [last], timeout=15, message="purge")
    wait_for(lambda: len(purgers(listeners)) == 3, timeout=10, message="every listener searching")
    assert store.session.exists("/configctl/purge-lease") is None


def test_a_holder_that_may_not_delete_gives_the_lease_up(zk_connect, fleet_of, monkeypatch):
    """Kafka's ACL layout: /config/changes is the admin's. An anonymous listener that took the
    lease first must not keep the fleet from purging: it lets the admin-authenticated one purge."""
    from configctl.zkconnection import ConnectionSettings

    monkeypatch.setattr(purge, "LEASE_CHECK_S", 0.5)
    with ConfigStore.connect(ConnectionSettings.of(zk_connect, auth="digest:admin:s3cret")) as admin:
        (anonymous,) = fleet_of(1, change_expiration_ms=500, purge_jitter_ms=0)  # /configctl: open
        first = set_config(admin, "topics/a", **{"retention.ms": "1000"})  # /config/changes: admin's
        assert anonymous.wait_for_change(first, timeout=10)
        time.sleep(0.7)
        second = set_config(admin, "topics/b", **{"retention.ms": "2000"})
        assert anonymous.wait_for_change(second, timeout=10)
        wait_for(
            lambda: anonymous.notifications.stats["purge_errors"] >= 1, timeout=10, message="a denied purge"
        )
        wait_for(
            lambda: admin.session.exists(purge.LEASE_PATH) is None, timeout=10, message="the lease given up"
        )
        entitled = ConfigListener(
            zk_connect, 2, {**STATIC, "broker.id": "2"}, zk_auth="digest:admin:s3cret",
            change_expiration_ms=500, purge_jitter_ms=0,
        ).start(timeout=30)  # fmt: skip
        try:
            time.sleep(0.7)
            third = set_config(admin, "topics/c", **{"retention.ms": "3000"})
            assert entitled.wait_for_change(third, timeout=10)
            wait_for(
                lambda: [n.number for n in admin.notifications()] == [third], timeout=15, message="purge"
            )
            assert entitled.notifications.stats["purged_notifications"] >= 2
            assert anonymous.notifications.stats["errors"] == 0 and anonymous.health()[0]
        finally:
            entitled.stop()
