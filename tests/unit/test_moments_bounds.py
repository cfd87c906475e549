"""Moments outside the calendar: every parsed moment and every stored history time is bounded.

Issue 36: ``--at -99999999999d``, ``--at -<400 digits>s`` and ``--since 0001-01-01T00:00:01Z``
crashed with a traceback, and one stored history record whose ``time_ms`` was 1e20 broke
``history`` for everyone. A moment is taken only between the epoch and the end of the year 9999
(:data:`configctl.timeref.MIN_MS`, :data:`configctl.timeref.MAX_MS`), the range every record
and every message can print.
"""

from __future__ import annotations

import json

import pytest

from configctl.errors import InvalidInput
from configctl.timeref import MAX_MS, MIN_MS, in_calendar, iso, parse
from configctl.znodes import HistoryZNodes

pytestmark = pytest.mark.unit

NOW = 1_795_000_000_000


@pytest.mark.parametrize(
    "text",
    [
        "-99999999999d",
        "-" + "9" * 400 + "s",
        "-" + "9" * 400 + ".5ms",
        "-56000w",  # 1970 minus a few centuries
        "0001-01-01T00:00:01Z",
        "1969-12-31T23:59:59.999Z",
        "0001-01-01T00:30:00+01:00",  # the year 0 in UTC
        "9999-12-31T23:30:00-01:00",  # the year 10000 in UTC
    ],
)
def test_a_moment_outside_the_calendar_is_one_line(text):
    with pytest.raises(InvalidInput) as caught:
        parse(text, NOW)
    message = str(caught.value)
    assert "\n" not in message and "1970-01-01T00:00:00.000Z" in message and "9999-12-31" in message
    assert len(message) < 300  # the 400 digits are not echoed whole


@pytest.mark.parametrize(
    ("text", "at_ms"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("9999-12-31T23:59:59.999Z", MAX_MS),
        (f"-{NOW}ms", 0),
        ("-0.5s", NOW - 500),
    ],
)
def test_the_calendar_s_own_ends_are_moments(text, at_ms):
    assert parse(text, NOW).at_ms == at_ms
    assert iso(at_ms)  # every moment parse gives prints


def test_in_calendar_takes_only_json_integers_within_the_bounds():
    assert in_calendar(MIN_MS) and in_calendar(MAX_MS) and in_calendar(NOW)
    for bad in (-1, MAX_MS + 1, 10**20, 1e12, True, "1795000000000", None):
        assert not in_calendar(bad), bad


def _record(time_ms: object) -> bytes:
    document = {
        "entity_path": "topics/orders",
        "version": 0,
        "time_ms": time_ms,
        "identity": "op",
        "reason": "",
        "config": {"retention.ms": "1"},
        "changed": {"retention.ms": None},
    }
    return json.dumps(document).encode()


@pytest.mark.parametrize("time_ms", [10**20, 1e20, -1, MAX_MS + 1, "1795000000000", True, None])
def test_a_stored_time_outside_the_calendar_is_a_malformed_record(time_ms):
    with pytest.raises(InvalidInput) as caught:
        HistoryZNodes.decode(_record(time_ms))
    assert str(caught.value).startswith("history record is malformed: time_ms")


def test_a_stored_time_within_the_calendar_is_read():
    assert HistoryZNodes.decode(_record(NOW)).time_ms == NOW
