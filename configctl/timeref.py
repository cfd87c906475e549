"""Moments as operators write them (``--at``, ``--since``, ``--until``): the one parser.

Three spellings (docs/investigating.md, "Moments"):

- ISO-8601: ``2026-11-24T14:05:00Z``, ``2026-11-24T14:05:00+01:00``, ``2026-11-24 14:05``;
  without a zone it is this machine's local time (what an operator reading a wall clock means);
- relative to now: ``-90s``, ``-15m``, ``-2h``, ``-3d`` (``-1w`` too);
- ``change:N``: just after change number N was written; turning that into a time needs the store
  and the applied logs (:mod:`configctl.travel.past`), so it stays a change number here.

Every moment is bounded (:func:`in_calendar`): from the epoch to the end of the year 9999, the
range a record can hold and a message can print. A moment outside it (``-99999999999d``, the
year 1) is one line, never a traceback, and a stored time outside it is a malformed record.

Pure: ``now_ms`` is passed in, so every spelling is tested without a clock.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from configctl.errors import InvalidInput

_RELATIVE = re.compile(r"-\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d|w)")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_CHANGE = re.compile(r"change:([0-9]{1,19})")
_EXPECTED = "an ISO-8601 time (2026-11-24T14:05:00Z), a relative time (-90s, -2h, -3d) or change:N"

MIN_MS = 0
"""1970-01-01T00:00:00Z: configctl records nothing older, and no clock it trusts shows less."""
MAX_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the last moment ISO-8601's four-digit years print."""


def in_calendar(ms: Any) -> bool:
    """Whether ``ms`` is a moment: an integer (never a bool or a float) from :data:`MIN_MS` to
    :data:`MAX_MS`. Stored times are judged by it too, so a forged one cannot crash a reader."""
    return isinstance(ms, int) and not isinstance(ms, bool) and MIN_MS <= ms <= MAX_MS


@dataclass(frozen=True)
class TimeRef:
    """A moment as given: ``at_ms`` (epoch milliseconds) or ``change`` (a change number)."""

    text: str
    at_ms: int | None = None
    change: int | None = None

    @property
    def is_change(self) -> bool:
        return self.change is not None


def parse(text: str, now_ms: int | None = None) -> TimeRef:
    """``text`` as a :class:`TimeRef`; anything else is one line naming the three spellings."""
    given = str(text).strip()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if not given:
        raise InvalidInput(f"an empty time: give {_EXPECTED}")
    change = _CHANGE.fullmatch(given)
    if change is not None:
        return TimeRef(given, change=int(change.group(1)))
    relative = _RELATIVE.fullmatch(given)
    if relative is not None:  # Decimal: exact for any number of digits, where a float overflows
        back = int(Decimal(relative.group(1)) * _UNIT_MS[relative.group(2)])
        return _bounded(given, now - back)
    return _bounded(given, _iso_ms(given))


def _bounded(given: str, at_ms: int | None) -> TimeRef:
    if at_ms is None or not in_calendar(at_ms):
        shown = given if len(given) <= 40 else given[:37] + "..."
        raise InvalidInput(
            f"{shown!r} is outside the times configctl knows: give one from {iso(MIN_MS)} to {iso(MAX_MS)}"
        )
    return TimeRef(given, at_ms=at_ms)


def _iso_ms(text: str) -> int | None:
    """``text``'s epoch milliseconds; None when it is a time the calendar cannot reach from here
    (the year 1 or 9999 moved by this machine's zone)."""
    candidate = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        moment = datetime.fromisoformat(candidate)
    except ValueError:
        raise InvalidInput(f"{text!r} is not a time: give {_EXPECTED}") from None
    try:
        if moment.tzinfo is None:
            moment = moment.astimezone()  # naive: this machine's local time
        whole = moment.replace(microsecond=0).timestamp()  # exact: no float rounding of the milliseconds
    except (ValueError, OverflowError, OSError):
        return None
    return int(whole) * 1000 + moment.microsecond // 1000


def iso(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (how messages name a moment)."""
    seconds, millis = divmod(ms, 1000)  # exact: ms / 1000 as a float rounds the last digit away
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis:03d}Z"
