"""The fleet's disagreements in time: every interval during which brokers ran different values.

The one home of the interval rule that ``audit --timeline`` reports (see docs/investigating.md): a pure fold
over the fleet's applied logs (:mod:`configctl.applied`), so a Spark job can group the records by
``(entity_path, key)`` and hand each group to :func:`key_intervals` unchanged, and a test can
check it without a cluster.

Which value a broker ran, per record kind:

- ``applied``: for ``brokers/<default>`` the value stored in that layer as the broker applied it
  (its effective value may differ on purpose, under a per-broker override); for any other entity
  shared by the fleet (topics, users, clients, IPs) the effective value. A broker's own layer
  (``brokers/<id>``) is its own by design and never a disagreement.
- ``observed``: beside a real broker, what the broker reported wins.
- ``load``: a full load (a restart) may have applied anything the log never saw, so what this
  broker ran is unknown again, except the ``<default>`` keys the load lists as in force. An
  interval a load ends is closed by the change the load reached.

A broker with no known value is not counted: the log cannot say what it ran (a broker that
refused every change of a key since its start, or one whose log begins after the interval did).
Secrets are digests in the log, so they are compared (and shown) as digests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple, TypeAlias

from configctl.applied import APPLIED, LOAD, OBSERVED, Light, Record
from configctl.entities import DEFAULT
from configctl.sources import DYNAMIC_DEFAULT_BROKER_CONFIG, SERVER_PROPERTIES_SOURCES

DEFAULT_BROKER_PATH = f"brokers/{DEFAULT}"
_NULL = "null"
"""How a deleted or unset value is keyed in ``values`` (JSON object keys are strings)."""


@dataclass
class Interval:
    """Brokers disagreeing on one key of one entity, from ``start_ms`` to ``end_ms`` (None: still open)."""

    entity_path: str
    key: str
    start_ms: int
    end_ms: int | None
    values: dict[str, list[int]] = field(default_factory=dict)
    opened_by_change: int | None = None
    closed_by_change: int | None = None

    @property
    def duration_ms(self) -> int | None:
        return None if self.end_ms is None else self.end_ms - self.start_ms

    def to_json(self) -> dict[str, Any]:
        return {
            "entity_path": self.entity_path,
            "key": self.key,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "duration_ms": self.duration_ms,
            "values": {value: sorted(brokers) for value, brokers in sorted(self.values.items())},
            "opened_by_change": self.opened_by_change,
            "closed_by_change": self.closed_by_change,
        }


class Event(NamedTuple):
    """One broker's value of one key moved (``known`` False: it is unknown from now on).

    A tuple, so :func:`key_intervals` takes these or plain ``(at_ms, broker_id, change_number,
    value, known)`` tuples alike: a Spark job ships plain tuples (they pickle several times
    faster than objects) and folds them without rebuilding an object per event."""

    at_ms: int
    broker_id: int
    change_number: int | None
    value: str | None
    known: bool = True


Move: TypeAlias = tuple[int, int, int | None, str | None, bool]
"""An :class:`Event`'s fields as a plain tuple."""


def events(records: Iterable[Record]) -> Iterator[tuple[tuple[str, str], Event]]:
    """Each record as the ``((entity_path, key), event)`` pairs the interval rule folds.

    The first change of a key a broker applies after a load also says (its ``old`` value) what the
    broker ran from that load on: that is emitted at the load's time, so a broker that is slower
    than another is seen disagreeing from the first broker's apply to its own.
    """
    for pair, move in light_events(record.light() for record in records):
        yield pair, Event(*move)


def light_events(records: Iterable[Light]) -> Iterator[tuple[tuple[str, str], Move]]:
    """:func:`events` over records as :data:`configctl.applied.Light` tuples (what
    :func:`configctl.applied.scan_lines` reads), each event a plain tuple: the rule itself, which
    ``audit --timeline`` runs on every line of the fleet's logs without building an object per
    record or per event."""
    seen: dict[int, set[tuple[str, str]]] = {}  # per broker: pairs its log spoke of since its load
    loaded_at: dict[int, tuple[int, int | None]] = {}  # per broker: its last load's time and change
    for kind, broker, number, path, at_ms, keys, _, name, reported in records:
        mine = seen.get(broker)
        if mine is None:
            mine = seen[broker] = set()
        if kind == LOAD:
            listed = {
                (DEFAULT_BROKER_PATH, key[0]): key[3]
                for key in keys
                if key[4] == DYNAMIC_DEFAULT_BROKER_CONFIG
            }
            for pair in sorted(mine - listed.keys()):
                yield pair, (at_ms, broker, number, None, False)
            for pair, value in sorted(listed.items()):
                yield pair, (at_ms, broker, number, value, True)
            seen[broker] = set(listed)
            loaded_at[broker] = (at_ms, number)
            continue
        if path is None or not _shared(path):
            continue
        if kind == APPLIED:
            default = path == DEFAULT_BROKER_PATH
            loaded = loaded_at.get(broker)
            for key, old, old_source, new, _, stored in keys:
                pair = (path, key)
                if loaded is not None and pair not in mine:
                    known, before = _old(path, old, old_source)
                    if known:
                        yield pair, (loaded[0], broker, loaded[1], before, True)
                mine.add(pair)
                yield pair, (at_ms, broker, number, stored if default else new, True)
        elif kind == OBSERVED and isinstance(name, str):
            mine.add((path, name))
            value = None if reported is None else str(reported)
            yield (path, name), (at_ms, broker, number, value, True)


_WHEN = itemgetter(0, 1)
"""An event's ``(at_ms, broker_id)``: the order the rule takes events in."""


def _old(path: str, value: str | None, source: str | None) -> tuple[bool, str | None]:
    """``(known, value)``: what a broker ran before a change, in the terms compared: for
    ``<default>`` the layer's own value, for anything else the effective one."""
    if source is None:
        return False, None  # not logged (a bulk batch)
    if path != DEFAULT_BROKER_PATH or source == DYNAMIC_DEFAULT_BROKER_CONFIG:
        return True, value
    if source in SERVER_PROPERTIES_SOURCES:
        return True, None  # the layer did not set it
    return False, None  # hidden by a per-broker override: the layer's value is not in the log


def _shared(entity_path: str) -> bool:
    """Does every broker run the same value of this entity (not a broker's own layer)?"""
    return not entity_path.startswith("brokers/") or entity_path == DEFAULT_BROKER_PATH


def key_intervals(entity_path: str, key: str, moves: Iterable[Event | Move]) -> list[Interval]:
    """The disagreement intervals of one key of one entity, from its events (:class:`Event` or
    :data:`Move` tuples) in any order.

    Linear in the events: the distinct values run are counted as brokers move, and an open
    interval takes in only the brokers that moved since it was last judged (with every broker
    once, when it opens), so 1,000 brokers moving one by one cost 1,000 steps, not a million.
    """
    running: dict[int, str] = {}
    held: Counter[str] = Counter()  # how many brokers run each value
    moved: list[int] = []  # brokers that moved since the last judgement
    current: Interval | None = None
    members: dict[str, set[int]] = {}  # the current interval's values, as sets
    found: list[Interval] = []
    ordered = sorted(moves, key=_WHEN)  # stable: one broker's moves in one millisecond keep their order
    last = len(ordered) - 1
    for index, (at_ms, broker, number, value, known) in enumerate(ordered):
        before = running.pop(broker, None)
        if before is not None:
            held[before] -= 1
            if not held[before]:
                del held[before]
        if known:
            value = _NULL if value is None else value
            running[broker] = value
            held[value] += 1
        moved.append(broker)
        if index < last and ordered[index + 1][0] == at_ms:
            continue  # brokers that moved in the same millisecond are judged together
        if len(held) > 1:
            if current is None:
                current = Interval(entity_path, key, at_ms, None, opened_by_change=number)
                found.append(current)
                members = {}
                joining = list(running.items())
            else:
                joining = [(b, running[b]) for b in moved if b in running]
            for moving, running_value in joining:
                if moving not in members.setdefault(running_value, set()):
                    members[running_value].add(moving)
                    current.values.setdefault(running_value, []).append(moving)
        elif current is not None:
            current.end_ms = at_ms
            current.closed_by_change = number
            current = None
        moved = []
    return found


def intervals(
    records: Iterable[Record], since_ms: int | None = None, until_ms: int | None = None
) -> list[Interval]:
    """Every disagreement interval in the fleet's records that overlaps ``[since_ms, until_ms]``,
    oldest first. ``records`` may come from any number of brokers' logs, each oldest first."""
    grouped: dict[tuple[str, str], list[Event]] = {}
    for pair, event in events(records):
        grouped.setdefault(pair, []).append(event)
    found = [
        interval
        for (path, key), moves in grouped.items()
        for interval in key_intervals(path, key, moves)
        if overlaps(interval, since_ms, until_ms)
    ]
    found.sort(key=order)
    return found


def overlaps(interval: Interval, since_ms: int | None, until_ms: int | None) -> bool:
    """Does ``interval`` overlap the window ``[since_ms, until_ms]`` (None: unbounded)? An interval
    is reported whole (its real start and end), whichever part of it the window saw."""
    return (until_ms is None or interval.start_ms <= until_ms) and (
        since_ms is None or interval.end_ms is None or interval.end_ms >= since_ms
    )


def order(interval: Interval) -> tuple[int, str, str]:
    """How intervals are listed: oldest first, then by entity and key."""
    return (interval.start_ms, interval.entity_path, interval.key)
