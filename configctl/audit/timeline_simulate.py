"""Applied logs of a simulated fleet over days, with the timeline they must give (``audit simulate
--applied-days``, the timeline benchmark).

Every broker's ``state-<id>/applied/broker-<id>-00000001.jsonl`` starts with a ``load`` and then
holds one ``applied`` record per change, written with :class:`configctl.applied.Record` (the
format's one home). Changes come at a steady pace, each setting ``retention.ms`` on one of
``TOPICS`` topics, so two changes of one key are an hour or more apart. Each broker applies a
change after its own delay (a few milliseconds to two seconds; a share of lagging brokers, minutes),
so each change opens one disagreement interval, from the first broker's apply to the last one's,
opened and closed by that change; broker 1 never applies the last change (which sets change 1's
topic again), so that interval is open.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from configctl import applied
from configctl.sources import DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG

START_MS = 1_790_812_800_000  # 2026-10-01T00:00:00Z
DAY_MS = 86_400_000
TOPICS = 50
KEY = "retention.ms"
DEFAULT_VALUE = "604800000"


@dataclass(frozen=True)
class AppliedSpec:
    """``brokers`` brokers over ``days`` days, ``changes_per_day`` changes a day; ``lagging``: the share
    of brokers that apply each change minutes late."""

    brokers: int = 1000
    days: int = 30
    changes_per_day: int = 24
    lagging: float = 0.02
    seed: int = 0

    def __post_init__(self) -> None:
        if self.brokers < 2 or self.days < 1 or self.changes_per_day < 1:
            raise ValueError("a simulated applied log needs 2 brokers, 1 day and 1 change a day at least")
        if DAY_MS // self.changes_per_day < 15 * 60_000 * 2:
            raise ValueError(
                "at most 48 changes a day: a change's lag must end before the next change of its key"
            )

    @property
    def changes(self) -> int:
        return self.days * self.changes_per_day


@dataclass(frozen=True)
class AppliedFleet:
    """What was written and the intervals the timeline must report, oldest first:
    ``(entity_path, start_ms, end_ms or None, change)``."""

    directory: Path
    records: int
    truth: list[tuple[str, int, int | None, int]]

    def to_json(self) -> dict[str, Any]:
        return {"directory": str(self.directory), "records": self.records, "intervals": len(self.truth)}


def simulate_applied(spec: AppliedSpec, out: str | Path) -> AppliedFleet:
    """Write the fleet's applied logs under ``out`` and return them with their known timeline."""
    rng = random.Random(spec.seed)
    root = Path(out)
    step = DAY_MS // spec.changes_per_day
    lagging = set(rng.sample(range(1, spec.brokers + 1), max(1, int(spec.brokers * spec.lagging))))
    delays: list[dict[int, int]] = []
    for number in range(1, spec.changes + 1):
        delay = {
            b: rng.randint(1, 2_000) + (rng.randint(60_000, 600_000) if b in lagging else 0)
            for b in range(1, spec.brokers + 1)
        }
        if number == spec.changes:
            delay.pop(1)  # broker 1 never applies the last change: its interval stays open
        delays.append(delay)
    truth = []
    for number, delay in enumerate(delays, start=1):
        at = START_MS + number * step
        end = None if number == spec.changes else at + max(delay.values())
        truth.append((_topic(number, spec.changes), at + min(delay.values()), end, number))
    written = 0
    for broker in range(1, spec.brokers + 1):
        directory = applied.log_directory(root / f"state-{broker}")
        directory.mkdir(parents=True, exist_ok=True)
        lines = [applied.Record(applied.LOAD, broker, 0, None, START_MS, extra={"entities": TOPICS}).line()]
        previous: dict[str, str] = {}
        for number, delay in enumerate(delays, start=1):
            path, value = _topic(number, spec.changes), str(number * 1000)
            before = previous.get(path)
            previous[path] = value
            if broker not in delay:
                continue
            key = applied.KeyRecord(
                KEY,
                before or DEFAULT_VALUE,
                DYNAMIC_TOPIC_CONFIG if before else DEFAULT_CONFIG,
                value,
                DYNAMIC_TOPIC_CONFIG,
                value,
            )
            at = START_MS + number * step + delay[broker]
            lines.append(applied.Record(applied.APPLIED, broker, number, path, at, keys=(key,)).line())
        (directory / applied.segment_name(broker, 1)).write_text("".join(lines), encoding="utf-8")
        written += len(lines)
    return AppliedFleet(root, written, truth)


def _topic(number: int, last: int) -> str:
    """The topic change ``number`` sets; the last change sets change 1's again, so broker 1 (which
    misses it) is known to run the older value and the interval stays open."""
    return f"topics/topic-{(1 if number == last else number) % TOPICS:03d}"
