"""The console's Drift page on an audit document with odd interval times (issue 36): each such
time is shown as unknown, the page is never a 500 (the audit's file is read, never trusted)."""

from __future__ import annotations

import re

import pytest

from configctl.console import views

SOUND = {
    "entity_path": "topics/orders",
    "key": "retention.ms",
    "start_ms": 1_700_000_000_000,
    "end_ms": 1_700_000_060_000,
    "duration_ms": 60_000,
    "values": {"1000": [1, 2], "2000": [3]},
    "opened_by_change": 7,
    "closed_by_change": 8,
}

ODD = ["soon", "1700000000000", -5, 0.5, 1e20, 10**20, float("nan"), float("inf"), True, [], {"ms": 1}]


@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_an_odd_start_or_end_is_unknown(odd):
    page = views.drift_page({"intervals": [{**SOUND, "start_ms": odd}, {**SOUND, "end_ms": odd}]}, None)
    rows = re.findall(r"<tr class=\"\">(.*?)</tr>", page, re.S)
    assert len(rows) == 2
    assert sum(row.count(">unknown<") for row in rows) == 2, rows
    assert "2023-11-14 22:13:20Z" in rows[0] + rows[1]  # the sound time of each still shows


@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_an_odd_duration_is_unknown(odd):
    page = views.drift_page({"intervals": [{**SOUND, "duration_ms": odd}]}, None)
    assert '<td class="num" data-sort="0">unknown</td>' in page


def test_an_interval_without_an_end_is_still_open_not_unknown():
    page = views.drift_page({"intervals": [{**SOUND, "end_ms": None, "duration_ms": None}]}, None)
    assert "still open" in page and "unknown" not in page


def test_odd_intervals_are_sorted_and_shown_with_the_sound_ones():
    intervals = [{**SOUND, "start_ms": odd, "end_ms": odd, "duration_ms": odd} for odd in ODD]
    intervals += [SOUND, {**SOUND, "entity_path": 42}, {**SOUND, "entity_path": None}, "not an interval"]
    page = views.drift_page({"intervals": intervals}, None)
    assert page.count("<tr class=") == len(intervals) - 1
    assert '<a href="/entity/topics/orders">topics/orders</a>' in page
    assert views.drift_page({"intervals": "nope"}, None)  # not a list: no timeline, still a page


def test_when_and_moment_agree_on_what_a_time_is():
    assert views.when(1_700_000_000_000) == "2023-11-14 22:13:20Z"
    assert views.when(1_700_000_000_000.0) == "2023-11-14 22:13:20Z"
    assert views.when(views.LAST_MS) == "9999-12-31 23:59:59Z"
    for odd in [*ODD, 0, views.LAST_MS + 1, None]:
        assert views.moment(odd) is None and views.when(odd) == "", odd
