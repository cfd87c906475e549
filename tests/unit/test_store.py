"""The store interface: ZooKeeper's store has every member the features may use, and says what it can do."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

from configctl import store
from configctl.zk.activerollout import ZooKeeperActiveRollout as Active
from configctl.zk.configstore import ZooKeeperStore
from configctl.zk.rollouts import ZooKeeperRollouts as Rollouts
from configctl.zk.session import ZkSession

pytestmark = pytest.mark.unit


def _members(protocol: type) -> set[str]:
    """What a protocol declares: its methods and properties, and its annotated attributes."""
    declared = {name for name in vars(protocol) if not name.startswith("_")}
    return (
        declared
        | set(getattr(protocol, "__annotations__", {}))
        | {"__enter__", "__exit__"} & set(vars(protocol))
    )


def _assigned_in_init(cls: type) -> set[str]:
    return set(re.findall(r"self\.(\w+)\b[^=\n]*=", inspect.getsource(cls.__init__)))


def test_the_zookeeper_store_has_every_member_of_the_interface() -> None:
    zk_store = ZooKeeperStore(ZkSession("127.0.0.1:1"))  # never opened: no connection is made
    missing = {name for name in _members(store.ConfigStore) if not hasattr(zk_store, name)}
    assert not missing
    assert zk_store.kind == "zookeeper"
    assert zk_store.location == "127.0.0.1:1"
    assert isinstance(zk_store.rollouts, Rollouts)


def test_zookeeper_rollouts_have_every_member_of_the_interfaces() -> None:
    assert not {name for name in _members(store.Rollouts) if not hasattr(Rollouts, name)}
    active = set(dir(Active)) | _assigned_in_init(Active)
    assert not _members(store.ActiveRollout) - active


def test_a_store_declares_every_capability_and_zookeeper_has_them_all_but_the_brokers_own() -> None:
    names = store.Capabilities.names()
    assert set(names) == {f.name for f in dataclasses.fields(store.Capabilities)}
    zk_store = ZooKeeperStore(ZkSession("127.0.0.1:1"))
    # every one, but that its writes go through the brokers (configctl.adminapi.store's) and that
    # each broker is asked what it reports (the KRaft store's: a ZooKeeper fleet's listeners publish)
    brokers_own = ["brokers_validate", "broker_reports"]
    assert [name for name in names if not getattr(zk_store.capabilities, name)] == brokers_own
    zk_store.capabilities.require(*(n for n in names if n not in brokers_own), what="everything")


def test_a_missing_capability_refuses_the_feature_in_one_line() -> None:
    without = dataclasses.replace(ZooKeeperStore(ZkSession("127.0.0.1:1")).capabilities, watches=False)
    without.require("history", what="history")
    with pytest.raises(store.Unsupported) as refused:
        without.require("history", "watches", what="--wait")
    assert (
        str(refused.value)
        == "--wait needs watches, which the store in use does not offer; nothing was written"
    )
    assert refused.value.exit_code == 1
    with pytest.raises(ValueError):
        without.require("telepathy", what="a guess")


@pytest.mark.parametrize(("expected", "after"), [(-1, 0), (0, 1), (41, 42)])
def test_the_version_after_a_write(expected: int, after: int) -> None:
    assert store.version_after(expected) == after


def test_a_backoff_stays_at_its_maximum_however_long_it_fails() -> None:
    from configctl.retrying import Backoff

    backoff = Backoff(0.1, 2.0)
    delays = [backoff.next_delay() for _ in range(5000)]  # 2**1024 would overflow a float
    assert delays[:3] == [0.1, 0.2, 0.4] and set(delays[5:]) == {2.0}
    assert backoff.reset() == 5000
