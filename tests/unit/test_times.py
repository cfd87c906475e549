"""Moments as operators write them: ISO-8601 (UTC, offsets, local), relative, change:N, and refusals."""

from __future__ import annotations

import os
import time
from datetime import datetime

import pytest

from configctl.errors import InvalidInput
from configctl.timeref import iso, parse

pytestmark = pytest.mark.unit

NOW = 1_795_000_000_000


def test_iso_8601_in_utc_and_with_an_offset():
    assert parse("2026-11-24T14:05:00Z", NOW).at_ms == 1_795_529_100_000
    assert parse("2026-11-24T15:05:00+01:00", NOW).at_ms == 1_795_529_100_000
    assert parse("2026-11-24T14:05:00.250Z", NOW).at_ms == 1_795_529_100_250


def test_a_time_without_a_zone_is_local_time(monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert parse("2026-11-24T09:05:00", NOW).at_ms == 1_795_529_100_000
        assert parse("2026-11-24 09:05", NOW).at_ms == 1_795_529_100_000
        assert parse("2026-11-24T09:05:00", NOW).at_ms == int(datetime(2026, 11, 24, 9, 5).timestamp() * 1000)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert "TZ" not in os.environ


@pytest.mark.parametrize(
    ("text", "back_ms"),
    [("-90s", 90_000), ("-15m", 900_000), ("-2h", 7_200_000), ("-3d", 259_200_000), ("-1w", 604_800_000)],
)
def test_relative_times_count_back_from_now(text, back_ms):
    ref = parse(text, NOW)
    assert ref.at_ms == NOW - back_ms and not ref.is_change


def test_a_change_number():
    ref = parse("change:42", NOW)
    assert ref.is_change and ref.change == 42 and ref.at_ms is None


@pytest.mark.parametrize(
    "text", ["", "yesterday", "2h", "+2h", "-2y", "change:", "change:x", "2026-13-01T00:00:00Z"]
)
def test_anything_else_is_one_line_naming_the_spellings(text):
    with pytest.raises(InvalidInput) as caught:
        parse(text, NOW)
    assert "\n" not in str(caught.value)
    assert "change:N" in str(caught.value)


def test_iso_renders_utc_with_milliseconds():
    assert iso(1_795_529_100_250) == "2026-11-24T14:05:00.250Z"
