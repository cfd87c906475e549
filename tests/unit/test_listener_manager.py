"""The listener's manager: what each change means, poison input, plugins, state and snapshot lines."""

from __future__ import annotations

import json
import logging

import pytest

from configctl.digests import keyed_digest
from configctl.entities import Entity, EntityType
from configctl.listener.manager import NO_CHANGE, DynamicConfigManager
from configctl.listener.plugins import ConfigUpdate, Reconfigurable, wrap
from configctl.listener.problembook import MAX_REPORTED
from configctl.listener.records import EntityRead, RawNotification
from configctl.secrets import PasswordEncoder, digest
from configctl.znodes import encode_entity_config, encode_notification

pytestmark = pytest.mark.unit

STATIC = {
    "broker.id": "1",
    "log.retention.hours": "72",
    "num.io.threads": "16",
    "password.encoder.secret": "enc",
}


def manager(plugins=(), static=None, broker_id=1) -> DynamicConfigManager:
    return DynamicConfigManager(broker_id, STATIC if static is None else static, [wrap(p) for p in plugins])


def entity(path: str) -> Entity:
    return Entity.from_path(path)


def read(path: str, config: dict | None, number: int | None = None) -> EntityRead:
    return EntityRead(entity(path), None if config is None else encode_entity_config(config), number)


def raw_read(path: str, data: bytes, number: int | None = None) -> EntityRead:
    return EntityRead(entity(path), data, number)


def note(number: int, path: str) -> RawNotification:
    return RawNotification(number, f"config_change_{number:010d}", encode_notification(entity(path)))


# ----------------------------------------------------------------------------------------------
# Applying changes
# ----------------------------------------------------------------------------------------------


def test_topic_change_takes_effect_with_its_source_and_moves_last_applied():
    m = manager()
    assert m.last_applied_change == NO_CHANGE
    result = m.apply([read("topics/orders", {"retention.ms": "86400000"}, 7)], 7)
    assert m.last_applied_change == 7
    value = m.topic_config("orders")["retention.ms"]
    assert (value.value, value.source) == ("86400000", "DYNAMIC_TOPIC_CONFIG")
    assert result.applied[0].describe() == (
        "applied change 7: topics/orders retention.ms=86400000 (DYNAMIC_TOPIC_CONFIG)"
    )


def test_deleting_a_topic_override_falls_back_to_the_brokers_static_value():
    m = manager()
    m.apply([read("topics/orders", {"retention.ms": "1000"}, 1)], 1)
    result = m.apply([read("topics/orders", {}, 2)], 2)
    value = m.topic_config("orders")["retention.ms"]
    # Kafka reports no source for a value derived from log.retention.hours (tests/kafka)
    assert (value.value, value.source) == (str(72 * 3_600_000), "DEFAULT_CONFIG")
    assert "retention.ms deleted (now 259200000 from DEFAULT_CONFIG)" in result.applied[0].describe()


def test_broker_layers_follow_precedence_and_other_brokers_are_ignored():
    m = manager()
    m.apply(
        [
            read("brokers/<default>", {"num.io.threads": "4", "log.retention.ms": "5000"}, 1),
            read("brokers/2", {"num.io.threads": "99"}, 2),
            read("brokers/1", {"num.io.threads": "32"}, 3),
        ],
        3,
    )
    broker = m.broker_config()
    assert (broker["num.io.threads"].value, broker["num.io.threads"].source) == (
        "32",
        "DYNAMIC_BROKER_CONFIG",
    )
    assert [s.source for s in broker["num.io.threads"].synonyms][:3] == [
        "DYNAMIC_BROKER_CONFIG",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "STATIC_BROKER_CONFIG",
    ]
    assert broker["log.retention.ms"].value == "5000"
    # a topic without an override follows the cluster default through the synonym chain
    assert m.topic_config("any")["retention.ms"].source == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert "brokers/2" not in m.configs()


def test_plan_coalesces_per_entity_in_order_of_latest_change_and_skips_other_brokers():
    m = manager()
    plan = m.plan(
        [
            note(1, "topics/a"),
            note(2, "topics/b"),
            note(3, "topics/a"),
            note(4, "brokers/7"),
            note(5, "users/User%3Aalice/clients/app1"),
        ]
    )
    assert [(e.path, n) for e, n in plan] == [
        ("topics/b", 2),
        ("topics/a", 3),
        ("users/User%3Aalice/clients/app1", 5),
    ]


def test_plan_reads_version_1_notifications():
    m = manager()
    data = json.dumps({"version": 1, "entity_type": "topics", "entity_name": "orders"}).encode()
    plan = m.plan([RawNotification(9, "config_change_0000000009", data)])
    assert [(e.path, n) for e, n in plan] == [("topics/orders", 9)]


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'{"version":3,"entity_path":"topics/x"}',
        b'{"version":2,"entity_path":"widgets/x"}',
        b'{"version":2}',
        b"",
    ],
)
def test_poison_notifications_are_counted_reported_and_do_not_stop_the_batch(data, caplog):
    m = manager()
    batch = [RawNotification(1, "config_change_0000000001", data), note(2, "topics/after")]
    with caplog.at_level(logging.WARNING, logger="configctl.listener"):
        plan = m.plan(batch)
        m.plan(batch)  # seen again (e.g. reprocessed after a failure): logged and counted once
    assert [(e.path, n) for e, n in plan] == [("topics/after", 2)]
    assert m.counters["poison_problems"] == 1
    assert len([r for r in caplog.records if "config_change_0000000001" in r.getMessage()]) == 1
    m.apply([read("topics/after", {"retention.ms": "1000"}, 2)], 2)
    assert m.last_applied_change == 2
    (problem,) = m.state_document()["problems"]
    assert (problem["kind"], problem["entity_path"], problem["change_number"]) == ("poison", None, 1)
    assert problem["notification"] == "config_change_0000000001"
    # gone from ZooKeeper (purged): it can never apply, so it is no longer reported
    m.notifications_present({"config_change_0000000002"})
    assert m.state_document()["problems"] == []


@pytest.mark.parametrize(
    "data",
    [
        b"{broken",
        b'{"version":1,"config":{"retention.ms":86400000}}',
        encode_entity_config({"retention.ms": "soon"}),
        encode_entity_config({"retension.ms": "1000"}),
    ],
)
def test_a_poison_config_keeps_the_previous_good_config_and_later_changes_still_apply(data, caplog):
    m = manager()
    m.apply([read("topics/orders", {"retention.ms": "1000"}, 1)], 1)
    with caplog.at_level(logging.WARNING, logger="configctl.listener"):
        result = m.apply(
            [raw_read("topics/orders", data, 2), read("topics/other", {"retention.ms": "5"}, 3)], 3
        )
    assert result.count("poison") == 1
    assert m.topic_config("orders")["retention.ms"].value == "1000"  # previous good config in force
    assert m.topic_config("other")["retention.ms"].value == "5"  # the change after it applied
    assert m.last_applied_change == 3
    assert m.counters["poison_problems"] == 1
    (problem,) = m.state_document()["problems"]
    assert (problem["kind"], problem["entity_path"], problem["change_number"]) == (
        "poison",
        "topics/orders",
        2,
    )
    # a good config for the entity clears the report
    m.apply([read("topics/orders", {"retention.ms": "2000"}, 4)], 4)
    assert m.topic_config("orders")["retention.ms"].value == "2000"
    assert m.state_document()["problems"] == []


def test_broker_configs_are_screened_per_key_as_kafka_does():
    m = manager()
    m.apply(
        [read("brokers/1", {"num.io.threads": "many", "log.dirs": "/x", "log.cleaner.threads": "3"}, 1)], 1
    )
    broker = m.broker_config()
    assert broker["log.cleaner.threads"].value == "3"  # the valid key applies
    assert broker["num.io.threads"].value == "16"  # invalid value dropped: static stays
    assert broker["log.dirs"].source != "DYNAMIC_BROKER_CONFIG"  # read-only key dropped
    problems = m.state_document()["problems"]
    assert sorted(p["name"] for p in problems) == ["log.dirs", "num.io.threads"]
    assert {(p["kind"], p["entity_path"], p["change_number"]) for p in problems} == {
        ("ignored", "brokers/1", 1)
    }


def test_broker_passwords_are_decrypted_for_plugins_and_digested_in_snapshots():
    encoded = PasswordEncoder("enc").encode("keystore-pw")
    m = manager()
    name = "listener.name.internal.ssl.keystore.password"
    m.apply([read("brokers/1", {name: encoded}, 1)], 1)
    assert m.broker_config()[name].value == "keystore-pw"
    lines = [json.loads(line) for line in m.snapshot_lines(1)]
    (row,) = [r for r in lines if r["name"] == name]
    assert row["value"] == digest("keystore-pw")
    (secret,) = [r for r in lines if r["name"] == "password.encoder.secret"]
    assert secret["value"] == digest("enc")


def test_with_the_fleet_digest_key_every_secret_digest_is_keyed():
    """Snapshot rows (own broker, topics' neighbours, users) and the state node's static digests
    all use the fleet key: one digest per value across the fleet, none testable without the key."""
    from configctl.secrets import scram_credential

    key = b"k" * 32
    credential = scram_credential("SCRAM-SHA-256", "pw", salt=b"salt")
    m = DynamicConfigManager(1, STATIC, [], digest_key=key)
    name = "listener.name.internal.ssl.keystore.password"
    m.apply(
        [
            read("brokers/1", {name: PasswordEncoder("enc").encode("keystore-pw")}, 1),
            read("users/alice", {"SCRAM-SHA-256": credential}, 2),
        ],
        2,
    )
    rows = {(r["entity_path"], r["name"]): r["value"] for r in map(json.loads, m.snapshot_lines(2))}
    assert rows[("brokers/1", name)] == digest("keystore-pw", key) != digest("keystore-pw")
    assert rows[("brokers/1", "password.encoder.secret")] == digest("enc", key)
    assert rows[("users/alice", "SCRAM-SHA-256")] == digest(credential, key)
    assert m.state_document()["static_config_digests"] == {
        "password.encoder.secret": keyed_digest("enc", key)
    }


def test_a_password_that_does_not_decrypt_is_poison_for_that_key_only():
    encoded = PasswordEncoder("other-secret").encode("pw")
    m = manager()
    name = "listener.name.internal.ssl.keystore.password"
    m.apply([read("brokers/1", {name: encoded, "log.cleaner.threads": "2"}, 1)], 1)
    assert m.broker_config()["log.cleaner.threads"].value == "2"
    assert m.broker_config().get(name) is None
    (problem,) = m.state_document()["problems"]
    assert problem["kind"] == "ignored" and problem["name"] == name and "cannot decrypt" in problem["reason"]


def test_reconcile_applies_only_differences_and_drops_entities_gone_from_zookeeper(caplog):
    m = manager()
    m.reconcile(
        [read("topics/a", {"retention.ms": "1"}), read("topics/b", {"retention.ms": "2"})], 10, initial=True
    )
    assert m.last_applied_change == 10
    with caplog.at_level(logging.INFO, logger="configctl.listener"):
        result = m.reconcile([read("topics/a", {"retention.ms": "1"}), read("topics/c", {})], 12)
    assert [c.entity_path for c in result.applied] == ["topics/b"]
    assert set(m.configs()) == {"topics/a"}
    assert m.topics() == ["a", "c"]
    assert m.last_applied_change == 12
    assert any("applied on reload: topics/b retention.ms deleted" in r.getMessage() for r in caplog.records)


def test_quota_and_ip_queries_resolve_with_precedence():
    m = manager()
    m.apply(
        [
            read("users/<default>", {"producer_byte_rate": "100"}, 1),
            read("users/User%3Aalice/clients/app1", {"producer_byte_rate": "5000"}, 2),
            read("ips/<default>", {"connection_creation_rate": "10"}, 3),
        ],
        3,
    )
    assert (
        m.quota_config("User:alice", "app1")["producer_byte_rate"].source == "users/User%3Aalice/clients/app1"
    )
    assert m.quota_config("User:bob", "app1")["producer_byte_rate"].source == "users/<default>"
    assert m.ip_config("10.0.0.1")["connection_creation_rate"].value == "10"


# ----------------------------------------------------------------------------------------------
# Plugins
# ----------------------------------------------------------------------------------------------


class Recorder(Reconfigurable):
    def __init__(self, name, keys, reject=None):
        self.name = name
        self.keys = set(keys)
        self.reject = reject
        self.validated: list[ConfigUpdate] = []
        self.applied: list[ConfigUpdate] = []

    def reconfigurable_configs(self):
        return self.keys

    def validate_reconfiguration(self, update):
        self.validated.append(update)
        if self.reject is not None and self.reject(update):
            raise ValueError("not on my watch")

    def reconfigure(self, update):
        self.applied.append(update)


def test_every_interested_plugin_validates_before_any_applies():
    order = []

    class Tracing(Recorder):
        def validate_reconfiguration(self, update):
            order.append(("validate", self.name))

        def reconfigure(self, update):
            order.append(("apply", self.name))

    a, b = Tracing("a", {"retention.ms"}), Tracing("b", {"retention.ms"})
    uninterested = Recorder("c", {"producer_byte_rate"})
    m = manager([a, b, uninterested])
    m.apply([read("topics/t", {"retention.ms": "1000"}, 1)], 1)
    assert order == [("validate", "a"), ("validate", "b"), ("apply", "a"), ("apply", "b")]
    assert uninterested.validated == []


def test_a_rejection_keeps_the_old_config_for_everyone_and_is_reported(caplog):
    picky = Recorder("picky", {"retention.ms"}, reject=lambda u: u.value("retention.ms") == "1")
    follower = Recorder("follower", {"retention.ms"})
    m = manager([picky, follower])
    m.apply([read("topics/t", {"retention.ms": "1000"}, 1)], 1)
    with caplog.at_level(logging.WARNING, logger="configctl.listener"):
        result = m.apply(
            [read("topics/t", {"retention.ms": "1"}, 2), read("topics/u", {"retention.ms": "7"}, 3)], 3
        )
    assert result.count("rejected") == 1
    assert m.topic_config("t")["retention.ms"].value == "1000"
    assert [u.value("retention.ms") for u in follower.applied] == ["1000", "7"]
    assert m.last_applied_change == 3
    (rejected,) = m.state_document()["problems"]
    assert (rejected["kind"], rejected["entity_path"], rejected["change_number"]) == (
        "rejected",
        "topics/t",
        2,
    )
    assert rejected["plugin"] == "picky" and "not on my watch" in rejected["reason"]
    assert m.counters["rejected_problems"] == 1
    # a later acceptable change applies and clears the report
    m.apply([read("topics/t", {"retention.ms": "2000"}, 4)], 4)
    assert m.topic_config("t")["retention.ms"].value == "2000"
    assert m.state_document()["problems"] == []


def test_a_broker_default_change_updates_each_known_topic_that_does_not_override_the_key():
    plugin = Recorder("retention", {"retention.ms"})
    m = manager([plugin])
    m.apply([read("topics/plain", {}, 1), read("topics/pinned", {"retention.ms": "5"}, 2)], 2)
    plugin.applied.clear()
    m.apply([read("brokers/<default>", {"log.retention.ms": "3600000"}, 3)], 3)
    assert [(u.entity_path, u.value("retention.ms"), set(u.changed)) for u in plugin.applied] == [
        ("topics/plain", "3600000", {"retention.ms"})
    ]


def test_a_rejected_topic_consequence_rejects_the_broker_change():
    plugin = Recorder("retention", {"retention.ms"}, reject=lambda u: u.value("retention.ms") == "10")
    m = manager([plugin])
    m.apply([read("topics/plain", {}, 1)], 1)
    m.apply([read("brokers/<default>", {"log.retention.ms": "10"}, 2)], 2)
    assert m.broker_config()["log.retention.ms"].source != "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert m.state_document()["problems"][0]["entity_path"] == "brokers/<default>"


def test_a_default_quota_change_reaches_every_shadowed_quota_entity():
    plugin = Recorder("quotas", {"producer_byte_rate"})
    m = manager([plugin])
    m.apply([read("users/User%3Aalice", {"consumer_byte_rate": "1"}, 1)], 1)
    plugin.applied.clear()
    m.apply([read("users/<default>", {"producer_byte_rate": "2048"}, 2)], 2)
    paths = sorted(u.entity_path for u in plugin.applied)
    assert paths == ["users/<default>", "users/User%3Aalice"]
    assert all(u.value("producer_byte_rate") == "2048" for u in plugin.applied)


def test_a_plugin_failing_to_apply_is_counted_and_the_change_stays():
    class Broken(Recorder):
        def reconfigure(self, update):
            raise RuntimeError("disk on fire")

    m = manager([Broken("broken", {"retention.ms"})])
    m.apply([read("topics/t", {"retention.ms": "1000"}, 1)], 1)
    assert m.topic_config("t")["retention.ms"].value == "1000"
    assert m.counters["plugin_errors"] == 1


# ----------------------------------------------------------------------------------------------
# State and snapshot
# ----------------------------------------------------------------------------------------------


def test_state_document_has_contract_fields_and_masks_static_secrets():
    m = manager()
    m.apply([read("topics/t", {"retention.ms": "1"}, 5)], 5)
    doc = m.state_document()
    assert {"broker_id", "last_applied_change", "applied_at_ms", "static_config"} <= set(doc)
    assert doc["broker_id"] == 1 and doc["last_applied_change"] == 5
    assert doc["static_config"]["password.encoder.secret"] == "******"
    assert doc["static_config"]["num.io.threads"] == "16"
    assert doc["static_config_digests"] == {}  # no fleet key: no guessable digest in a world-readable node


def test_snapshot_lines_follow_contract_4():
    m = manager()
    m.apply(
        [
            read("topics/orders", {"retention.ms": "86400000"}, 1),
            read("users/User%3Aalice/clients/app1", {"consumer_byte_rate": "2048"}, 2),
            read("clients/app1", {"consumer_byte_rate": "1024"}, 3),
            read("users/<default>/clients/app1", {"consumer_byte_rate": "4096"}, 4),
            read("ips/10.0.0.1", {"connection_creation_rate": "5"}, 5),
        ],
        42,
    )
    lines = list(m.snapshot_lines(1763780000000))
    rows = [json.loads(line) for line in lines]
    assert all(line.endswith("\n") for line in lines)
    assert all(
        list(r) == ["broker_id", "change_number", "entity_path", "name", "value", "source", "captured_at_ms"]
        for r in rows
    )
    assert all(
        r["broker_id"] == 1 and r["change_number"] == 42 and r["captured_at_ms"] == 1763780000000
        for r in rows
    )
    broker_rows = [r for r in rows if r["entity_path"] == "brokers/1"]
    assert {r["name"] for r in broker_rows} >= {"num.io.threads", "log.retention.ms", "log.dirs"}
    assert any(r["value"] is None for r in broker_rows)  # null defaults stay null
    others = {
        (r["entity_path"], r["name"]): (r["value"], r["source"])
        for r in rows
        if r["entity_path"] != "brokers/1"
    }
    assert others == {
        ("topics/orders", "retention.ms"): ("86400000", "DYNAMIC_TOPIC_CONFIG"),
        ("users/User%3Aalice/clients/app1", "consumer_byte_rate"): (
            "2048",
            "users/User%3Aalice/clients/app1",
        ),
        # clients/app1 is shadowed by users/<default>/clients/app1, as Kafka's quota precedence says
        ("clients/app1", "consumer_byte_rate"): ("4096", "users/<default>/clients/app1"),
        ("users/<default>/clients/app1", "consumer_byte_rate"): ("4096", "users/<default>/clients/app1"),
        ("ips/10.0.0.1", "connection_creation_rate"): ("5", "ips/10.0.0.1"),
    }


def test_snapshot_digests_scram_credentials():
    from configctl.secrets import scram_credential

    credential = scram_credential("SCRAM-SHA-256", "pw", salt=b"salt")
    m = manager()
    m.apply([read("users/User%3Aalice", {"SCRAM-SHA-256": credential}, 1)], 1)
    (row,) = [json.loads(line) for line in m.snapshot_lines() if "users/" in line]
    assert row["value"] == digest(credential)


def test_effective_of_any_entity_and_foreign_broker_refused():
    m = manager()
    m.apply([read("clients/app1", {"producer_byte_rate": "10"}, 1)], 1)
    assert m.effective(Entity.of(EntityType.CLIENTS, "app1"))["producer_byte_rate"].value == "10"
    assert m.effective(Entity.of(EntityType.BROKERS, "1"))["num.io.threads"].value == "16"
    from configctl.errors import InvalidInput

    with pytest.raises(InvalidInput):
        m.effective(Entity.of(EntityType.BROKERS, "2"))


def test_past_the_published_cap_problems_are_counted_as_omitted_and_come_back_as_others_clear():
    m = manager()
    total = MAX_REPORTED + 5
    poisoned = [raw_read(f"topics/t{i:05d}", b"not json", i) for i in range(total)]
    m.apply(poisoned, total - 1)
    state = m.state_document()
    assert len(state["problems"]) == MAX_REPORTED and state["problems_omitted"] == 5
    assert state["problems"][-1]["entity_path"] == f"topics/t{total - 1:05d}"  # the newest are shown
    # the newest five are fixed: the five oldest, cut before, are listed again
    fixed = [read(f"topics/t{i:05d}", {"retention.ms": "1000"}, total + i) for i in range(total - 5, total)]
    m.apply(fixed, 2 * total)
    state = m.state_document()
    assert state["problems_omitted"] == 0 and len(state["problems"]) == MAX_REPORTED
    assert state["problems"][0]["entity_path"] == "topics/t00000"


def test_a_state_node_too_large_for_zookeeper_says_how_many_problems_it_cut():
    from configctl.znodes import BrokerStateZNode

    problems = [
        {"kind": "poison", "entity_path": f"topics/{'x' * 900}{i}", "reason": "r"} for i in range(1000)
    ]
    data = BrokerStateZNode.encode({"broker_id": 1, "problems": problems, "problems_omitted": 3})
    decoded = BrokerStateZNode.decode(data)
    assert len(data) <= BrokerStateZNode.MAX_BYTES
    assert len(decoded["problems"]) + decoded["problems_omitted"] == 1003
