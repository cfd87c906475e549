"""The fleet's disagreement intervals, folded from applied logs two real managers wrote."""

from __future__ import annotations

import pytest

from configctl import applied
from configctl.entities import Entity
from configctl.handlers.base import MISMATCH, Problem
from configctl.listener.appliedlog import AppliedLog
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.records import EntityRead
from configctl.travel.timeline import intervals
from configctl.znodes import encode_entity_config

pytestmark = pytest.mark.unit


class Broker:
    """One broker's manager and applied log, on a clock the test moves."""

    def __init__(self, tmp_path, broker_id: int) -> None:
        self.now = 0.0
        self.manager = DynamicConfigManager(
            broker_id, {"broker.id": str(broker_id), "log.retention.hours": "168"}
        )
        self.log = AppliedLog(tmp_path, broker_id, fsync=False, clock=lambda: self.now)

    def load(self, at_s: float) -> None:
        self.now = at_s
        result = self.manager.reconcile([], None, initial=True)
        self.log.batch(result, {}, full_load=True, up_to=self.manager.last_applied_change, loaded={})

    def apply(self, at_s: float, path: str, config: dict, number: int) -> None:
        self.now = at_s
        entity = Entity.from_path(path)
        before = {path: self.manager.effective(entity)}
        read = EntityRead(entity, encode_entity_config(config), number)
        self.log.batch(self.manager.apply([read], number), before)


def fleet_records(tmp_path) -> list[applied.Record]:
    return list(applied.read(tmp_path))


def test_a_slower_broker_disagrees_from_the_first_apply_to_its_own(tmp_path):
    one, two = Broker(tmp_path, 1), Broker(tmp_path, 2)
    one.load(100)
    two.load(100)
    one.apply(200, "topics/orders", {"retention.ms": "1000"}, 7)
    two.apply(203.5, "topics/orders", {"retention.ms": "1000"}, 7)
    (interval,) = intervals(fleet_records(tmp_path))
    assert interval.to_json() == {
        "entity_path": "topics/orders",
        "key": "retention.ms",
        "start_ms": 200_000,
        "end_ms": 203_500,
        "duration_ms": 3_500,
        "values": {"1000": [1], "604800000": [2]},
        "opened_by_change": 7,
        "closed_by_change": 7,
    }


def test_a_broker_default_is_compared_by_what_the_layer_holds(tmp_path):
    one, two = Broker(tmp_path, 1), Broker(tmp_path, 2)
    one.load(100)
    two.load(100)
    one.apply(150, "brokers/1", {"log.retention.ms": "1000"}, 1)  # broker 1's own: never a disagreement
    one.apply(200, "brokers/<default>", {"log.retention.ms": "7200000"}, 2)
    two.apply(210, "brokers/<default>", {"log.retention.ms": "7200000"}, 2)
    (interval,) = intervals(fleet_records(tmp_path))
    assert (interval.entity_path, interval.start_ms, interval.end_ms) == (
        "brokers/<default>",
        200_000,
        210_000,
    )
    assert interval.values == {"7200000": [1], "null": [2]}


def test_an_interval_still_open_has_no_end_and_a_reported_value_counts(tmp_path):
    one, two = Broker(tmp_path, 1), Broker(tmp_path, 2)
    one.load(100)
    two.load(100)
    one.apply(200, "topics/t", {"cleanup.policy": "compact"}, 3)
    two.apply(200.5, "topics/t", {"cleanup.policy": "compact"}, 3)
    reported = Problem(
        MISMATCH, "topics/t", 3, "differs", key="cleanup.policy", expected="compact", reported="delete"
    )
    import dataclasses

    two.log.observed([dataclasses.replace(reported, at_ms=203_000)])
    found = intervals(fleet_records(tmp_path))
    assert [(i.start_ms, i.end_ms) for i in found] == [(200_000, 200_500), (203_000, None)]
    assert found[1].values == {"compact": [1], "delete": [2]} and found[1].duration_ms is None
    assert found[1].to_json()["end_ms"] is None
    assert intervals(fleet_records(tmp_path), since_ms=201_000) == [found[1]]
    assert intervals(fleet_records(tmp_path), until_ms=199_000) == []


def test_a_restart_makes_a_broker_unknown_until_its_log_speaks_again(tmp_path):
    one, two = Broker(tmp_path, 1), Broker(tmp_path, 2)
    one.load(100)
    two.load(100)
    one.apply(200, "topics/t", {"retention.ms": "1"}, 1)
    two.apply(200, "topics/t", {"retention.ms": "1"}, 1)
    one.apply(300, "topics/t", {"retention.ms": "2"}, 2)  # broker 2 is down meanwhile
    two.load(400)  # it restarts: what it loaded is not logged key by key
    (interval,) = intervals(fleet_records(tmp_path))  # 200: both moved in the same ms, no interval
    assert (interval.start_ms, interval.end_ms, interval.closed_by_change) == (300_000, 400_000, 1)
    assert interval.values == {"2": [1], "1": [2]}


def test_the_rule_over_lines_read_as_plain_tuples_is_the_rule_over_records(tmp_path):
    """What ``audit --timeline`` folds on its executors (lines read as plain tuples, events shipped
    as plain tuples) gives exactly the intervals of the records."""
    from itertools import chain

    from configctl.travel.timeline import key_intervals, light_events

    one, two = Broker(tmp_path, 1), Broker(tmp_path, 2)
    one.load(100)
    two.load(100)
    one.apply(150, "brokers/1", {"log.retention.ms": "1000"}, 1)
    for broker, at in ((one, 200), (two, 230)):
        broker.apply(at, "brokers/<default>", {"log.retention.ms": "7200000"}, 2)
        broker.apply(at + 1, "topics/t", {"retention.ms": "1"}, 3)
    one.apply(300, "topics/t", {"retention.ms": "2"}, 4)
    two.load(400)
    two.log.observed(
        [
            Problem(
                MISMATCH,
                "topics/t",
                4,
                "differs",
                key="cleanup.policy",
                expected="compact",
                reported="delete",
            )
        ]
    )
    want = intervals(fleet_records(tmp_path))
    assert len(want) >= 3
    grouped: dict = {}
    for broker in (1, 2):
        text = (tmp_path / "applied" / applied.segment_name(broker, 1)).read_text()
        mine: dict = {}
        for pair, move in light_events(applied.scan_lines(text)):
            assert type(move) is tuple
            mine.setdefault(pair, []).append(move)
        for pair, moves in mine.items():
            grouped.setdefault(pair, []).append(moves)
    got = [i for pair, lists in grouped.items() for i in key_intervals(*pair, chain.from_iterable(lists))]
    assert sorted(got, key=lambda i: (i.start_ms, i.entity_path, i.key)) == want
