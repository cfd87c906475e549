"""Moments as operators write them (``--at``, ``--since``, ``--until``): the one parser.

Three spellings (docs/reference/json-output.md):

- ISO-8601: ``2026-11-24T14:05:00Z``, ``2026-11-24T14:05:00+01:00``, ``2026-11-24 14:05``;
  without a zone it is this machine's local time (what an operator reading a wall clock means);
- relative to now: ``-90s``, ``-15m``, ``-2h``, ``-3d`` (``-1w`` too);
- ``change:N``: just after change number N was written; turning that into a time needs the store
  and the applied logs (:mod:`configctl.travel.past`), so it stays a change number here.

Pure: ``now_ms`` is passed in, so every spelling is tested without a clock.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from configctl.errors import InvalidInput

_RELATIVE = re.compile(r"-\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d|w)")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_CHANGE = re.compile(r"change:([0-9]{1,19})")
_EXPECTED = "an ISO-8601 time (2026-11-24T14:05:00Z), a relative time (-90s, -2h, -3d) or change:N"


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
    if relative is not None:
        return TimeRef(given, at_ms=now - int(float(relative.group(1)) * _UNIT_MS[relative.group(2)]))
    return TimeRef(given, at_ms=_iso_ms(given))


def _iso_ms(text: str) -> int:
    candidate = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        moment = datetime.fromisoformat(candidate)
    except ValueError:
        raise InvalidInput(f"{text!r} is not a time: give {_EXPECTED}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # naive: this machine's local time
    whole = moment.replace(microsecond=0).timestamp()  # exact: no float rounding of the milliseconds
    return int(whole) * 1000 + moment.microsecond // 1000


def iso(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (how messages name a moment)."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
