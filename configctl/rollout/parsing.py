"""What an operator types for a rollout: durations, broker ids, wave sizes and rollout ids. Pure.

Each parser returns a plain value or raises :class:`InvalidInput` with a one-line message that
names the option, so a typo fails before ZooKeeper is contacted and nothing is written.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from configctl.errors import InvalidInput, shown

MAX_DURATION_SECONDS = 7 * 24 * 3600.0
"""A week: longer than any soak worth waiting for, short enough to catch a unit typo (``5000h``)."""
MAX_BROKER_ID = 2**31 - 1
"""Kafka's broker.id is a Java int."""
MAX_WAVES = 10_000

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[smh]?)")
_ROLLOUT_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{4,16}")

T = TypeVar("T")


def parse_duration(text: str, *, option: str = "--soak") -> float:
    """``30s``, ``5m``, ``1h``, or a bare number of seconds (``90``, ``2.5``) -> seconds."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise InvalidInput(
            f"{option}: {shown(text)} is not a duration: write 30s, 5m, 1h, or a number of seconds"
        )
    seconds = float(match.group("number")) * _UNITS[match.group("unit")]
    if seconds > MAX_DURATION_SECONDS:
        raise InvalidInput(f"{option}: {shown(text)} is longer than a week ({MAX_DURATION_SECONDS:g} s)")
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest of ``45s``, ``5m``, ``1h30m`` that says ``seconds`` (rounded to the second)."""
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:g}s" if seconds != whole else f"{whole}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts)


def parse_broker_ids(text: str, *, option: str = "--canary") -> tuple[int, ...]:
    """``1,3`` -> (1, 3): comma-separated broker ids, each once, in the order given."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise InvalidInput(f"{option}: {shown(text)} is not a comma-separated list of broker ids (e.g. 1,3)")
    ids: list[int] = []
    for part in parts:
        if not part.isdigit() or not part.isascii() or int(part) > MAX_BROKER_ID:
            raise InvalidInput(f"{option}: {shown(part)} is not a broker id (an integer 0..{MAX_BROKER_ID})")
        if int(part) in ids:
            raise InvalidInput(f"{option}: broker {int(part)} is named twice")
        ids.append(int(part))
    return tuple(ids)


@dataclass(frozen=True)
class WaveSpec:
    """``--waves N`` (that many waves) or ``--waves P%`` (each wave holds P percent of the entities)."""

    count: int | None = None
    percent: float | None = None

    def __str__(self) -> str:
        return str(self.count) if self.count is not None else f"{self.percent:g}%"

    def split(self, items: Sequence[T]) -> list[list[T]]:
        """``items`` cut into waves, in their order.

        N waves are as equal as possible, the smaller ones first (the first wave risks the
        least); never more waves than items. P% makes waves of ``ceil(P% of the items)`` each
        (at least one), the last one holding what is left.
        """
        total = len(items)
        if total == 0:
            return []
        if self.count is not None:
            count = min(self.count, total)
            size, extra = divmod(total, count)
            sizes = [size] * (count - extra) + [size + 1] * extra
        else:
            assert self.percent is not None
            size = max(1, math.ceil(total * self.percent / 100.0))
            sizes = [size] * (total // size) + ([total % size] if total % size else [])
        waves, start = [], 0
        for n in sizes:
            waves.append(list(items[start : start + n]))
            start += n
        return waves


def parse_waves(text: str, *, option: str = "--waves") -> WaveSpec:
    raw = text.strip()
    if raw.endswith("%"):
        number = raw[:-1].strip()
        try:
            percent = float(number)
        except ValueError:
            percent = math.nan
        if not re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", number) or not 0 < percent <= 100:
            raise InvalidInput(f"{option}: {shown(text)} is not a percentage of entities (1% .. 100%)")
        return WaveSpec(percent=percent)
    if not raw.isdigit() or not raw.isascii() or not 1 <= int(raw) <= MAX_WAVES:
        raise InvalidInput(
            f"{option}: {shown(text)} is neither a number of waves (1..{MAX_WAVES}) nor a percentage (25%)"
        )
    return WaveSpec(count=int(raw))


def new_rollout_id(now: float | None = None) -> str:
    """``20250612-142233-3f9a``: UTC time to the second, then random hex; ids sort by start time."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(2)}"


def check_rollout_id(text: str) -> str:
    """A rollout id as typed on the command line, or a one-line error (it becomes a znode name)."""
    if not _ROLLOUT_ID.fullmatch(text):
        raise InvalidInput(
            f"{shown(text)} is not a rollout id (like 20250612-142233-3f9a; configctl rollout list shows them)"
        )
    return text


def is_rollout_id(name: str) -> bool:
    """Whether ``name`` is a rollout id (:func:`check_rollout_id`): a node under the rollouts'
    directory that is not one (an owner node, something planted) is not a rollout."""
    try:
        check_rollout_id(name)
    except InvalidInput:
        return False
    return True
