"""The listener's reads against a real ZooKeeper: multiRead, and the pipelined fallback for a server
without it (forced: the multiRead request goes out with an operation code the server does not
implement, so the real server answers "unimplemented" as a ZooKeeper before 3.6 does)."""

from __future__ import annotations

import logging

import pytest
from helpers import wait_for
from kazoo.security import make_digest_acl

from configctl.entities import Entity, EntityType
from configctl.errors import PermissionDenied
from configctl.listener import ConfigListener
from configctl.writer import alter, prepare_change
from configctl.zk import multiread
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.zk.session import ZkSession
from configctl.znodes import CHANGES_PATH, NOTIFICATION_PATH_PREFIX, encode_entity_config

UNKNOWN_OPERATION = 99


@pytest.fixture
def tree(zk):
    """40 topics, a node only someone else may read, and an absent path."""
    for i in range(40):
        zk.create(
            f"/config/topics/t{i:02d}", encode_entity_config({"retention.ms": str(1000 + i)}), makepath=True
        )
    zk.ensure_path("/config/users")
    zk.create(
        "/config/users/alice",
        b'{"version":1,"config":{}}',
        acl=[make_digest_acl("someone", "else", all=True)],
    )
    zk.ensure_path(CHANGES_PATH)
    paths = [f"/config/topics/t{i:02d}" for i in range(40)] + ["/config/users/alice", "/config/topics/none"]
    return paths


def answers(session: ZkSession, paths, **kwargs):
    return [
        type(found).__name__ if isinstance(found, Exception) else (found and found[0])
        for found in session.get_many(paths, **kwargs)
    ]


def test_get_many_falls_back_to_pipelined_reads_without_multiread(zk_connect, tree, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="configctl")
    with ZkSession(zk_connect) as session:
        expected = answers(session, tree, node_errors=True)
        assert session._multi_read
        bare = [f for c in session.iter_many(tree, node_errors=True, chunk=9, stats=False) for f in c]
        assert [f[1] for f in bare if isinstance(f, tuple)] == [None] * 40  # no stats decoded
        assert [type(f).__name__ if isinstance(f, Exception) else (f and f[0]) for f in bare] == expected
    assert expected[:2] == [
        encode_entity_config({"retention.ms": "1000"}),
        encode_entity_config({"retention.ms": "1001"}),
    ]
    assert expected[-2:] == ["PermissionDenied", None]

    monkeypatch.setattr(multiread._MultiRead, "type", UNKNOWN_OPERATION)
    with ZkSession(zk_connect) as session:
        assert answers(session, tree, node_errors=True) == expected
        assert not session._multi_read
        assert [r.getMessage() for r in caplog.records if "no multiRead" in r.getMessage()] != []
        # later reads go the pipelined way at once, in chunks too, and still fail on a refused node
        chunks = list(session.iter_many(tree, node_errors=True, chunk=7))
        assert [len(c) for c in chunks] == [7] * 6
        with pytest.raises(PermissionDenied):
            session.get_many(tree)
        assert session.read_later(tree[:3]).result() == session.get_many(tree[:3])

    with ZkSession(zk_connect) as session:  # the fallback in the middle of chunked reads
        chunks = list(session.iter_many(tree, node_errors=True, chunk=10))
        flat = [type(f).__name__ if isinstance(f, Exception) else (f and f[0]) for c in chunks for f in c]
        assert flat == expected


def test_a_listener_loads_and_follows_without_multiread(zk_connect, zk, tree, monkeypatch):
    monkeypatch.setattr(multiread._MultiRead, "type", UNKNOWN_OPERATION)
    listener = ConfigListener(zk_connect, 1, {}).start(timeout=30)
    try:
        assert not listener.session._multi_read
        assert listener.topic_config("t07")["retention.ms"].value == "1007"
        assert [(p.kind, p.entity_path) for p in listener.problems()] == [("unreadable", "users/alice")]
        with ConfigStore.connect(zk_connect) as store:
            entity = Entity.from_path("topics/t07")
            number = alter(
                store, entity, prepare_change(entity, {"retention.ms": "77"})
            ).committed.change_number
            assert listener.wait_for_change(number, timeout=10)
            assert listener.topic_config("t07")["retention.ms"].value == "77"
            truth = {s.entity.path: s.config for s in store.read_type(EntityType.TOPICS) if s.config}
        assert listener.configs() == truth and len(truth) == 40
    finally:
        listener.stop()


def test_read_ahead_serves_the_next_notification_with_the_listing(zk_connect, zk):
    listener = ConfigListener(zk_connect, 1, {}).start(timeout=30)
    try:
        with ConfigStore.connect(zk_connect) as store:
            for i in range(5):
                entity = Entity.from_path(f"topics/r{i}")
                number = alter(
                    store, entity, prepare_change(entity, {"retention.ms": str(i + 1)})
                ).committed.change_number
                assert listener.wait_for_change(number, timeout=10)
        stats = listener.notifications.stats
        # after the first change, each one was read in the listing's round trip
        assert stats["prefetched_notifications"] >= 4
        assert stats["notifications_processed"] == 5
        # a notification created between the guess and the listing is read afterwards
        zk.create("/config/topics/late", encode_entity_config({"retention.ms": "9"}))
        created = zk.create(
            NOTIFICATION_PATH_PREFIX, b'{"version":2,"entity_path":"topics/late"}', sequence=True
        )
        late = int(created.rsplit("_", 1)[1])
        assert listener.wait_for_change(late, timeout=10)
        wait_for(lambda: listener.topic_config("late")["retention.ms"].value == "9")
    finally:
        listener.stop()


class _Held:
    """Something a caller's frame holds (weakly referable)."""


def test_a_missing_node_keeps_no_caller_alive(zk_connect, tree):
    """An absent node's answer forms no reference cycle with the frames that asked for it.

    A NoNode error raised out of its request and caught beside it kept every caller's frame alive
    until the cyclic collector ran: after a full load, its 100,000 entities (``/config/ips`` is
    usually absent). With the collector off, what the caller held must go when it returns.
    """
    import gc
    import weakref

    def caller(session: ZkSession) -> weakref.ref:
        held = _Held()
        assert session.children_many(["/config/ips", "/config/topics"])[0] is None
        return weakref.ref(held)

    with ZkSession(zk_connect) as session:
        gc.collect()
        gc.disable()
        try:
            held = caller(session)
            assert held() is None
        finally:
            gc.enable()
