"""Loading Reconfigurable plugins: module:Class, entry points, and one-line errors for the rest."""

from __future__ import annotations

import importlib.metadata
import math
import sys
import types

import pytest

from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.listener import plugins as plugin_module
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.plugins import ENTRY_POINT_GROUP, load_plugin, load_plugins, wrap
from configctl.listener.records import EntityRead
from configctl.znodes import encode_entity_config

pytestmark = pytest.mark.unit


def test_load_module_class_spec():
    plugin = load_plugin("examples.plugins.quota_enforcer:ClientQuotaEnforcer")
    assert plugin.name == "client-quota-enforcer"
    assert "producer_byte_rate" in plugin.configs


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no.such.module:Thing", "cannot load plugin 'no.such.module:Thing'"),
        ("examples.plugins.quota_enforcer:Nope", "has no Nope"),
        ("json:dumps", "is not a Reconfigurable"),
        (":Thing", "must look like module:Class"),
        ("not-an-entry-point", "no plugin 'not-an-entry-point'"),
        ("  ", "empty plugin name"),
    ],
)
def test_bad_specs_are_one_line_errors(spec, message):
    with pytest.raises(InvalidInput) as caught:
        load_plugin(spec)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_plugin_whose_constructor_fails_is_reported(monkeypatch):
    module = types.ModuleType("configctl_test_failing_plugin")

    class Failing:
        def __init__(self):
            raise RuntimeError("no config file")

    module.Failing = Failing
    monkeypatch.setitem(sys.modules, module.__name__, module)
    with pytest.raises(InvalidInput, match="cannot create Failing\\(\\): no config file"):
        load_plugin(f"{module.__name__}:Failing")


def test_a_structural_plugin_without_the_base_class_is_accepted():
    class Duck:
        def reconfigurable_configs(self):
            return {"retention.ms"}

        def reconfigure(self, update):
            pass

    loaded = wrap(Duck())
    assert loaded.name == "Duck" and loaded.configs == frozenset({"retention.ms"})


def test_entry_points_are_found_by_name_and_by_discovery(monkeypatch):
    entry = importlib.metadata.EntryPoint(
        name="retention", value="examples.plugins.log_retention:LogRetentionApplier", group=ENTRY_POINT_GROUP
    )
    monkeypatch.setattr(plugin_module, "_entry_points", lambda: [entry])
    assert load_plugin("retention").name == "log-retention-applier"
    discovered = load_plugins([], discover=True)
    assert [p.name for p in discovered] == ["log-retention-applier"]
    with pytest.raises(InvalidInput, match="loaded twice"):
        load_plugins(["examples.plugins.log_retention:LogRetentionApplier"], discover=True)


# ----------------------------------------------------------------------------------------------
# The example plugins, driven through the manager (no ZooKeeper needed)
# ----------------------------------------------------------------------------------------------


def _read(path, config, number):
    return EntityRead(Entity.from_path(path), encode_entity_config(config), number)


def test_quota_enforcer_throttles_with_the_effective_quota_and_rejects_stalling_rates():
    from examples.plugins.quota_enforcer import ClientQuotaEnforcer

    now = [0.0]
    enforcer = ClientQuotaEnforcer(burst_seconds=1.0, clock=lambda: now[0])
    manager = DynamicConfigManager(1, {}, [wrap(enforcer)])
    manager.configure_plugins()
    assert enforcer.record("User:alice", "app1", "produce", 10**9) == 0.0  # unlimited by default
    manager.apply([_read("users/<default>", {"producer_byte_rate": "2048"}, 1)], 1)
    assert enforcer.rate("User:alice", "app1", "produce") == 2048
    # the bucket was full when unlimited; it starts full at the new rate, then debt means throttling
    assert enforcer.record("User:alice", "app1", "produce", 2048) == 0.0
    assert enforcer.record("User:alice", "app1", "produce", 4096) == pytest.approx(2.0)
    now[0] += 2.0
    assert enforcer.record("User:alice", "app1", "produce", 0) == 0.0
    # a more specific level wins
    manager.apply([_read("users/User%3Aalice/clients/app1", {"producer_byte_rate": "8192"}, 2)], 2)
    assert enforcer.rate("User:alice", "app1", "produce") == 8192
    # a rate below the floor is rejected: nothing changes
    manager.apply([_read("users/User%3Aalice/clients/app1", {"producer_byte_rate": "10"}, 3)], 3)
    assert enforcer.rate("User:alice", "app1", "produce") == 8192
    (problem,) = manager.state_document()["problems"]
    assert problem["kind"] == "rejected" and "below this enforcer's floor" in problem["reason"]
    assert math.isinf(enforcer.rate("User:bob", "x", "fetch"))


def test_log_retention_applier_deletes_expired_segments_but_never_the_active_one(tmp_path):
    import os

    from examples.plugins.log_retention import LogRetentionApplier

    partition = tmp_path / "orders-0"
    partition.mkdir()
    now = 1_000_000.0
    for index, age in enumerate([7200, 3600, 60, 10]):
        segment = partition / f"{index * 100:020d}.log"
        segment.write_bytes(b"x" * 100)
        (partition / f"{index * 100:020d}.index").write_bytes(b"")
        os.utime(segment, (now - age, now - age))
    applier = LogRetentionApplier([tmp_path], clock=lambda: now)
    manager = DynamicConfigManager(1, {"log.dirs": str(tmp_path)}, [wrap(applier)])
    manager.configure_plugins()
    assert applier.enforce() == []  # 7 days by default
    manager.apply([_read("topics/orders", {"retention.ms": "1800000"}, 1)], 1)  # 30 minutes
    left = sorted(p.name for p in partition.glob("*.log"))
    assert left == [f"{200:020d}.log", f"{300:020d}.log"]
    assert not (partition / f"{0:020d}.index").exists()
    # too short a retention is refused and reported; the segments stay
    manager.apply([_read("topics/orders", {"retention.ms": "1000"}, 2)], 2)
    assert manager.topic_config("orders")["retention.ms"].value == "1800000"
    assert sorted(p.name for p in partition.glob("*.log")) == left
    # size retention keeps the active segment whatever happens
    manager.apply([_read("topics/orders", {"retention.ms": "-1", "retention.bytes": "0"}, 3)], 3)
    assert sorted(p.name for p in partition.glob("*.log")) == [f"{300:020d}.log"]


def test_a_plugin_failing_to_configure_is_a_one_line_error():
    class Fussy:
        name = "fussy"

        def configure(self, context):
            raise RuntimeError("needs log.dirs\nsecond line")

        def reconfigurable_configs(self):
            return {"log.dirs"}

        def reconfigure(self, update):
            pass

    manager = DynamicConfigManager(1, {}, [wrap(Fussy())])
    with pytest.raises(InvalidInput, match=r"plugin fussy failed to configure: needs log\.dirs second line"):
        manager.configure_plugins()
