"""Writes outside configctl derived from history, the config node's version, notifications and
applied logs (:mod:`configctl.travel.outside`): the pure merge, on hand-made inputs.

The Kafka behaviour it relies on (one version and one notification per write) is shown by real
brokers in tests/kafka/test_outside_writers.py."""

from __future__ import annotations

import pytest

from configctl import applied
from configctl.entities import Entity
from configctl.store import Stored
from configctl.travel.outside import as_record, derive
from configctl.znodes import HistoryRecord

pytestmark = pytest.mark.unit

TOPIC = Entity.from_path("topics/orders")


def record(
    version: int, time_ms: int, config: dict[str, str], changed: dict[str, str | None]
) -> HistoryRecord:
    return HistoryRecord("topics/orders", version, time_ms, "alice@ops", "", config, changed)


def node(version: int, config: dict[str, str], created: int = 500, modified: int = 9_000) -> Stored:
    return Stored(TOPIC, config, version, None, created, modified)


def log(number: int, key: str, old: str | None, new: str | None) -> applied.Record:
    keys = (applied.KeyRecord(key, old, "DEFAULT_CONFIG", new, "DYNAMIC_TOPIC_CONFIG", new),)
    return applied.Record(applied.APPLIED, 1, number, "topics/orders", 8_000, keys)


def test_every_version_recorded_means_no_outside_write_and_the_notifications_number_the_records() -> None:
    records = [record(2, 2_000, {"a": "2"}, {"a": "1"}), record(1, 1_000, {"a": "1"}, {"a": None})]
    derived = derive("topics/orders", records, node(2, {"a": "2"}), [(7, 1_001), (9, 2_001)])
    assert derived.outside == []
    assert derived.change_numbers == {2: 9, 1: 7}


def test_one_write_above_the_newest_record_is_dated_numbered_and_its_delta_known() -> None:
    records = [record(1, 1_000, {"retention.ms": "1000"}, {"retention.ms": None})]
    derived = derive(
        "topics/orders", records, node(2, {"retention.ms": "3600000"}), [(7, 1_001), (12, 8_500)]
    )
    (write,) = derived.outside
    assert (write.version, write.writes, write.change_number, write.time_ms) == (2, 1, 12, 9_000)
    assert write.config == {"retention.ms": "3600000"}
    assert write.changed == {"retention.ms": "1000"}
    assert as_record(write).config == {"retention.ms": "3600000"}


def test_two_dated_writes_are_split_and_the_applied_log_says_what_the_first_did() -> None:
    records = [record(1, 1_000, {"a": "1"}, {"a": None})]
    derived = derive(
        "topics/orders",
        records,
        node(3, {"a": "1", "b": "2", "c": "3"}),
        [(7, 1_001), (12, 5_000), (13, 9_000)],
        [log(12, "b", None, "2")],
    )
    newer, older = derived.outside
    assert (older.version, older.change_number, older.time_ms) == (2, 12, 5_000)
    assert older.config == {"a": "1", "b": "2"} and older.changed == {"b": None}
    assert (newer.version, newer.change_number, newer.changed) == (3, 13, {"c": None})


def test_two_dated_writes_nothing_tells_apart_are_one_entry_with_what_they_changed_together() -> None:
    records = [record(1, 1_000, {"a": "1"}, {"a": None})]
    (both,) = derive(
        "topics/orders",
        records,
        node(3, {"a": "1", "b": "2", "c": "3"}),
        [(7, 1_001), (12, 5_000), (13, 9_000)],
    ).outside
    assert (both.version, both.writes, both.change_number, both.change_numbers) == (3, 2, 13, (12, 13))
    assert both.changed == {"b": None, "c": None} and both.time_ms == 9_000
    assert both.summary() == "2 writes outside configctl, not recorded (changes 12, 13)"


def test_a_gap_whose_notifications_are_purged_is_one_entry_saying_how_many_writes() -> None:
    records = [
        record(4, 4_000, {"a": "3", "z": "1"}, {"z": None}),
        record(1, 1_000, {"a": "1"}, {"a": None}),
    ]
    derived = derive("topics/orders", records, node(4, {"a": "3", "z": "1"}), [])
    (gap,) = derived.outside
    assert (gap.version, gap.writes, gap.change_number, gap.time_ms) == (3, 2, None, None)
    assert (gap.not_before_ms, gap.not_after_ms) == (1_000, 4_000)
    assert gap.changed == {"a": "1"}  # from version 1's config to version 4's with its own change undone
    assert "2 writes outside configctl, not recorded" in gap.summary()


def test_an_entity_nobody_recorded_is_outside_writes_from_its_creation() -> None:
    derived = derive("topics/orders", [], node(0, {"a": "1"}, created=700, modified=700), [])
    (write,) = derived.outside
    assert (write.version, write.writes, write.time_ms, write.changed) == (0, 1, 700, {"a": None})


def test_versions_below_the_oldest_record_are_the_horizon_not_a_gap() -> None:
    records = [record(7, 7_000, {"a": "7"}, {"a": "6"})]
    assert derive("topics/orders", records, node(7, {"a": "7"}), []).outside == []


def test_a_record_newer_than_the_node_read_is_not_taken_for_a_removal() -> None:
    records = [record(3, 9_500, {"a": "3"}, {"a": "2"}), record(2, 2_000, {"a": "2"}, {"a": None})]
    assert derive("topics/orders", records, node(2, {"a": "2"}, modified=2_001), []).outside == []


def test_a_node_removed_outside_configctl_is_said() -> None:
    records = [record(2, 2_000, {"a": "2"}, {"a": None})]
    (removed,) = derive("topics/orders", records, Stored(TOPIC, {}, -1), []).outside
    assert removed.removed and removed.not_before_ms == 2_000 and removed.time_ms is None


def test_a_node_removed_and_made_again_outside_configctl_is_both_writes() -> None:
    """Kafka 3.5+ removes an emptied quota node; made again, it starts at version 0 once more."""
    quota = Entity.from_path("clients/app")
    records = [HistoryRecord("clients/app", 0, 1_000, "alice@ops", "", {"producer_byte_rate": "1024"}, {})]
    again = Stored(quota, {"consumer_byte_rate": "4096"}, 0, None, 5_000, 5_000)
    created, removed = derive("clients/app", records, again, [(30, 5_001)]).outside
    assert (removed.removed, removed.not_before_ms, removed.not_after_ms) == (True, 1_000, 5_000)
    assert (created.version, created.change_number, created.time_ms) == (0, 30, 5_000)
    assert created.changed == {"consumer_byte_rate": None}


def test_writes_that_made_no_notification_do_not_take_configctl_s_own() -> None:
    """A tool killed between setting the node and creating its notification: the notification of
    configctl's write just before is configctl's, never the gap's."""
    records = [record(3, 3_000, {"a": "3"}, {"a": "2"}), record(0, 1_000, {"a": "1"}, {"a": None})]
    derived = derive("topics/orders", records, node(3, {"a": "3"}), [(5, 1_001), (6, 3_001)])
    (gap,) = derived.outside
    assert (gap.version, gap.writes, gap.change_number, gap.time_ms) == (2, 2, None, None)
    assert derived.change_numbers == {3: 6, 0: 5}


def test_a_purged_anchor_still_lets_the_newest_writes_be_numbered() -> None:
    """configctl's write is older than Kafka's 15 minutes (its notification purged); the two
    outside writes after it kept theirs."""
    records = [record(1, 1_000, {"a": "1"}, {"a": None})]
    derived = derive(
        "topics/orders", records, node(3, {"a": "3"}, modified=2_000_000), [(40, 1_990_000), (41, 2_000_001)]
    )
    (both,) = derived.outside  # what each changed is unknown without an applied log
    assert (both.change_numbers, both.writes, both.changed) == ((40, 41), 2, {"a": "1"})


def test_an_empty_node_kafka_made_is_no_write_but_a_notified_or_configured_one_is() -> None:
    # a topic created bare, or the parent node Kafka makes for a user+client quota: version 0, {}
    assert derive("topics/orders", [], node(0, {})).outside == []
    # the same node once notified (a write that emptied nothing still made a notification) or set
    assert len(derive("topics/orders", [], node(0, {}), [(7, 600)]).outside) == 1
    assert len(derive("topics/orders", [], node(0, {"a": "1"})).outside) == 1
