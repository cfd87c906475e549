"""Notification expiry: the boundary is found with O(log n) lookups, not one per notification."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from configctl.zk.purge import expired_prefix

pytestmark = pytest.mark.unit


def names(n: int) -> list[str]:
    return [f"config_change_{i:010d}" for i in range(n)]


class Lookups:
    """ctime by name from a list, counting how often it is asked."""

    def __init__(self, ctimes: list[int | None]) -> None:
        self.ctimes = {name: ctime for name, ctime in zip(names(len(ctimes)), ctimes, strict=True)}
        self.calls = 0

    def __call__(self, name: str) -> int | None:
        self.calls += 1
        return self.ctimes[name]


def test_nothing_expired_costs_one_lookup():
    lookups = Lookups([100, 200, 300])
    assert expired_prefix(names(3), lookups, cutoff_ms=50) == (0, 100)
    assert lookups.calls == 1


def test_empty_list_costs_nothing():
    lookups = Lookups([])
    assert expired_prefix([], lookups, 10) == (0, None)
    assert lookups.calls == 0


def test_all_expired():
    lookups = Lookups(list(range(10)))
    assert expired_prefix(names(10), lookups, cutoff_ms=100) == (10, None)


def test_ten_thousand_notifications_need_about_log2_lookups():
    ctimes = list(range(10_000))
    lookups = Lookups(ctimes)
    count, boundary = expired_prefix(names(10_000), lookups, cutoff_ms=6_789)
    assert (count, boundary) == (6_789, 6_789)
    assert lookups.calls <= 2 + math.ceil(math.log2(10_000))


def test_nodes_deleted_meanwhile_count_as_expired():
    lookups = Lookups([None, None, 5, None, 50, 60])
    assert expired_prefix(names(6), lookups, cutoff_ms=40)[0] == 4


@given(
    st.lists(st.integers(min_value=0, max_value=1000), max_size=200), st.integers(min_value=0, max_value=1001)
)
def test_matches_a_linear_scan_on_monotonic_ctimes(raw, cutoff):
    ctimes = sorted(raw)
    expected = sum(1 for c in ctimes if c < cutoff)
    count, boundary = expired_prefix(names(len(ctimes)), Lookups(ctimes), cutoff)
    assert count == expected
    if boundary is not None:
        assert boundary == ctimes[count]
