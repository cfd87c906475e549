"""The applied log's record format, its reader and its point-in-time fold (no I/O but reading files).

Every listener with a state directory appends what it applied (and refused) to
``<state-dir>/applied/broker-<id>-<segment>.jsonl`` (docs/reference/applied-log.md); the sink
that writes it is :mod:`configctl.listener.appliedlog`. This module is what readers need
(``describe --effective --at``, ``blame``, ``diff``), kept apart from the listener so a command
never imports the listener's machinery to read a file.

JSON Lines, because a record is appended with one ``write`` and a crash can only tear the last
line, which a reader skips; every other line stays readable by ``jq``, ``grep`` and Spark's JSON
reader alike. A columnar format would need a footer written after the last record: a listener
killed mid-file would lose the file, not one line.

Record kinds (``kind``): ``applied`` (one entity's change took effect: each changed key's old and
new effective value with its source), ``refused`` (a change that did not take effect, with its
problems), ``observed`` (beside a real broker: the value the broker reported differs from the one
computed) and ``load`` (a full load: where a listener's log starts covering its broker; its
``keys`` are the broker's own dynamically set keys as loaded, since a full load may apply changes
made while the listener was down without logging them one by one).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from configctl.errors import InvalidInput
from configctl.files import open_checked

FORMAT_VERSION = 1
SUBDIRECTORY = "applied"
"""The applied log lives in this subdirectory of a state directory: the audit reads the state
directory's own ``*.jsonl`` files as snapshots, and must not take a log for one."""
_SEGMENT_RE = re.compile(r"broker-([0-9]+)-([0-9]{8})\.jsonl")
SEGMENT_GLOB = "broker-*-*.jsonl"
"""A glob every segment's name matches (Spark's ``pathGlobFilter``); :func:`segment_of` decides."""

APPLIED, REFUSED, OBSERVED, LOAD = "applied", "refused", "observed", "load"


def segment_name(broker_id: int, sequence: int) -> str:
    """``broker-<id>-<sequence>.jsonl``: sequences grow, so names sort oldest first."""
    return f"broker-{int(broker_id)}-{int(sequence):08d}.jsonl"


def segment_of(path: str) -> tuple[int, int] | None:
    """``(broker id, sequence)`` of a segment's path or URI, None for any other file (a segment
    must sit in an ``applied/`` directory: a snapshot is never taken for a log)."""
    parent, _, name = str(path).rstrip("/").rpartition("/")
    match = _SEGMENT_RE.fullmatch(name)
    if match is None or parent.rpartition("/")[2] != SUBDIRECTORY:
        return None
    return int(match.group(1)), int(match.group(2))


def parse_lines(text: str, stats: ReadStats | None = None) -> Iterator[Record]:
    """The records of a segment's whole text, in order (torn or foreign lines skipped, counted)."""
    stats = stats if stats is not None else ReadStats()
    for line in text.split("\n"):
        record = _counted(line, stats)
        if record is not None:
            yield record


def _counted(line: str, stats: ReadStats) -> Record | None:
    """One line read and counted, the one rule for every reader: a blank line is no line (a
    segment ends with a newline), a torn or foreign one is counted and skipped."""
    if not line.strip():
        return None
    stats.lines += 1
    record = parse(line)
    if record is None:
        stats.skipped += 1
    return record


def scan_lines(text: str, stats: ReadStats | None = None) -> Iterator[Light]:
    """A segment's whole text as :data:`Light` tuples, in order: exactly the lines
    :func:`parse_lines` takes (the same ones skipped and counted), without building a
    :class:`Record` per line.

    For a reader that folds every record of a fleet (``audit --timeline``: hundreds of thousands
    of lines on an executor), building and then dropping two frozen objects per line cost more
    than decoding the JSON itself.
    """
    stats = stats if stats is not None else ReadStats()
    lines = skipped = 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        lines += 1
        try:
            light = _light(_loads(line))
        except _MALFORMED:
            light = None
        if light is None:
            skipped += 1
            continue
        yield light
    stats.lines += lines
    stats.skipped += skipped


def log_directory(state_dir: str | Path) -> Path:
    """Where a state directory's applied log is (given either the state directory or the log's own)."""
    path = Path(state_dir)
    return path if path.name == SUBDIRECTORY else path / SUBDIRECTORY


def segments(state_dir: str | Path, broker_id: int | None = None) -> dict[int, list[Path]]:
    """Every segment under ``state_dir`` by broker id, oldest first."""
    found: dict[int, list[tuple[int, Path]]] = {}
    directory = log_directory(state_dir)
    if not directory.is_dir():
        return {}
    for path in directory.iterdir():
        match = _SEGMENT_RE.fullmatch(path.name)
        if match is None:
            continue
        broker = int(match.group(1))
        if broker_id is not None and broker != broker_id:
            continue
        found.setdefault(broker, []).append((int(match.group(2)), path))
    return {broker: [p for _, p in sorted(items)] for broker, items in found.items()}


def sequence_of(segment: Path) -> int:
    """The sequence number of a segment :func:`segments` listed."""
    match = _SEGMENT_RE.fullmatch(segment.name)
    if match is None:
        raise ValueError(f"not an applied log segment: {segment}")
    return int(match.group(2))


@dataclass(frozen=True)
class KeyRecord:
    """One key of an applied change: old and new effective value with their sources (secrets as
    digests), and the stored value (None: deleted)."""

    key: str
    old: str | None
    old_source: str | None
    new: str | None
    new_source: str | None
    stored: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "old": {"value": self.old, "source": self.old_source},
            "new": {"value": self.new, "source": self.new_source},
            "stored": self.stored,
        }


@dataclass(frozen=True)
class Record:
    """One line of an applied log."""

    kind: str
    broker_id: int
    change_number: int | None
    entity_path: str | None
    applied_at_ms: int
    keys: tuple[KeyRecord, ...] = ()
    problems: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "v": FORMAT_VERSION,
            "kind": self.kind,
            "broker_id": self.broker_id,
            "change_number": self.change_number,
            "entity_path": self.entity_path,
            "applied_at_ms": self.applied_at_ms,
            "keys": [k.to_json() for k in self.keys],
            "problems": list(self.problems),
        }
        document.update(self.extra)
        return document

    def line(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False) + "\n"

    def light(self) -> Light:
        """This record as the :data:`Light` tuple :func:`scan_lines` gives for its line."""
        return (
            self.kind,
            self.broker_id,
            self.change_number,
            self.entity_path,
            self.applied_at_ms,
            tuple((k.key, k.old, k.old_source, k.new, k.new_source, k.stored) for k in self.keys),
            self.problems,
            self.extra.get("key"),
            self.extra.get("reported"),
        )


def parse(line: str) -> Record | None:
    """A record from one line; None for a torn, empty or foreign line (skipped, never fatal)."""
    try:
        obj = _loads(line)
        light = _light(obj)
        if light is None:
            return None
        kind, broker, number, path, at_ms, keys, problems, _, _ = light
        return Record(
            kind=kind,
            broker_id=broker,
            change_number=number,
            entity_path=path,
            applied_at_ms=at_ms,
            keys=tuple(KeyRecord(*key) for key in keys),
            problems=problems,
            extra={k: v for k, v in obj.items() if k not in _KNOWN},
        )
    except _MALFORMED:
        return None


_loads = json.loads

_MALFORMED = (ValueError, KeyError, TypeError, OverflowError, RecursionError)
"""What decoding a foreign line can raise: JSON's ``Infinity`` as a broker id (``int`` overflows),
nesting deeper than the decoder recurses. Such a line is skipped like a torn one, never fatal."""

_KNOWN = frozenset(
    ("v", "kind", "broker_id", "change_number", "entity_path", "applied_at_ms", "keys", "problems")
)
"""A record's own fields; any other field of a line is kept in :attr:`Record.extra`."""

Light: TypeAlias = tuple[
    str,
    int,
    int | None,
    str | None,
    int,
    tuple[tuple[str, str | None, str | None, str | None, str | None, str | None], ...],
    tuple[dict[str, Any], ...],
    Any,
    Any,
]
"""A record as a plain tuple: ``(kind, broker_id, change_number, entity_path, applied_at_ms, keys,
problems, key, reported)``, each of ``keys`` ``(key, old, old_source, new, new_source, stored)``
(a :class:`KeyRecord`'s fields in order) and the last two the ``observed`` fields (None when
absent). What :func:`scan_lines` yields and :func:`parse` builds its record from."""


def _light(obj: Any) -> Light | None:
    """A decoded line as a :data:`Light` tuple, None for a foreign one; raises ``KeyError``,
    ``TypeError`` or ``ValueError`` on a malformed record. Which lines are records has this one
    home, so :func:`parse` and :func:`scan_lines` skip the same lines."""
    if obj.__class__ is not dict or obj.get("v") != FORMAT_VERSION:
        return None
    get = obj.get
    keys = tuple(
        (
            str(k["key"]),
            _text(k["old"]["value"]),
            _text(k["old"]["source"]),
            _text(k["new"]["value"]),
            _text(k["new"]["source"]),
            _text(k.get("stored")),
        )
        for k in get("keys") or ()
    )
    number = get("change_number")
    path = get("entity_path")
    problems = get("problems")
    return (
        str(obj["kind"]),
        int(obj["broker_id"]),
        int(number) if isinstance(number, int) else None,
        None if path is None else str(path),
        int(obj["applied_at_ms"]),
        keys,
        tuple(p for p in problems if isinstance(p, dict)) if problems else (),
        get("key"),
        get("reported"),
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass
class ReadStats:
    """What a read skipped: torn or foreign lines are counted, never fatal."""

    lines: int = 0
    skipped: int = 0


def read(
    state_dir: str | Path, broker_id: int | None = None, stats: ReadStats | None = None
) -> Iterator[Record]:
    """Every record under ``state_dir`` (one broker's, or all), oldest first per broker.

    A file named like a segment that is not a regular file (a named pipe would block the read for
    ever) is refused in one line naming it (:func:`configctl.files.open_checked`)."""
    stats = stats if stats is not None else ReadStats()
    for _, paths in sorted(segments(state_dir, broker_id).items()):
        for path in paths:
            yield from _read_file(path, stats)


def read_copies(state_dirs: Sequence[str | Path], broker_id: int) -> list[Record]:
    """One broker's log from every copy of it in ``state_dirs``, oldest first, each record once.

    Operators gather logs by copying state directories, so one log may be given twice: the same
    directory under two names, or an older copy beside a newer one. Segments are matched by
    sequence and a copy that is a prefix of another is that log read earlier: the longest copy of
    each segment is taken, so the answer is the same in any order and as if the log were given
    once (the fold trusts the order of its records). Two copies that disagree about one record
    (two listeners that both called themselves this broker) are refused in one line: which of
    them ran is not for a reader to guess.
    """
    kept: dict[int, tuple[Path, list[Record]]] = {}
    for place in state_dirs:
        for path in segments(place, broker_id).get(broker_id, []):
            sequence = sequence_of(path)
            records = list(_read_file(path, ReadStats()))
            if sequence not in kept:
                kept[sequence] = (path, records)
                continue
            other_path, other = kept[sequence]
            differs = next((i for i, (a, b) in enumerate(zip(records, other, strict=False)) if a != b), None)
            if differs is not None:
                raise InvalidInput(
                    f"applied logs {other_path} and {path} disagree at record {differs + 1} "
                    f"(change {other[differs].change_number} vs {records[differs].change_number}): two "
                    f"different logs of broker {broker_id}; give only the one to read"
                )
            if len(records) > len(other):
                kept[sequence] = (path, records)
    return [record for sequence in sorted(kept) for record in kept[sequence][1]]


def _read_file(path: Path, stats: ReadStats) -> Iterator[Record]:
    try:
        handle = open_checked(path, "applied log")
    except InvalidInput:
        if not os.path.lexists(path):  # rotated away while being read
            return
        raise
    with handle:
        for line in handle:
            record = _counted(line.decode("utf-8", "replace"), stats)
            if record is not None:
                yield record


# -- the point-in-time fold ------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    """What one broker ran for one key of one entity as of a moment, per its applied log."""

    value: str | None
    source: str | None
    change_number: int | None
    applied_at_ms: int
    reported: bool = False
    """True when the value is what the real broker reported (a sidecar's ``observed`` record)."""


@dataclass
class Fold:
    """A broker's applied log folded up to a moment."""

    covered_from_ms: int | None = None
    """The first full load the log holds: from then on the log says what the broker ran."""
    last_change: int | None = None
    values: dict[tuple[str, str], Ran] = field(default_factory=dict)
    problems: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    """What the broker could not apply, by entity path, as of the moment (a later clean apply clears it)."""

    def covers(self, at_ms: int) -> bool:
        return self.covered_from_ms is not None and self.covered_from_ms <= at_ms


def fold(records: Iterable[Record], at_ms: int | None = None) -> Fold:
    """What the broker ran as of ``at_ms`` (None: the end of the log), by (entity path, key)."""
    result = Fold()
    for record in records:
        if at_ms is not None and record.applied_at_ms > at_ms:
            continue
        if record.kind == LOAD:
            if result.covered_from_ms is None:
                result.covered_from_ms = record.applied_at_ms
            # a full load may have applied anything the log never saw (changes made while the
            # listener was down): only the broker's own dynamic keys it logged are known again
            result.values = {
                (f"brokers/{record.broker_id}", key.key): Ran(
                    key.new, key.new_source, record.change_number, record.applied_at_ms
                )
                for key in record.keys
            }
        if record.change_number is not None and record.kind in (APPLIED, LOAD):
            result.last_change = max(result.last_change or -1, record.change_number)
        if record.entity_path is None:
            continue
        if record.kind in (APPLIED, REFUSED):
            if record.problems:
                result.problems[record.entity_path] = record.problems
            else:
                result.problems.pop(record.entity_path, None)
        if record.kind == APPLIED:
            for key in record.keys:
                result.values[(record.entity_path, key.key)] = Ran(
                    key.new, key.new_source, record.change_number, record.applied_at_ms
                )
        elif record.kind == OBSERVED:
            key_name = record.extra.get("key")
            if isinstance(key_name, str):
                before = result.values.get((record.entity_path, key_name))
                result.values[(record.entity_path, key_name)] = Ran(
                    _text(record.extra.get("reported")),
                    before.source if before else None,
                    record.change_number,
                    record.applied_at_ms,
                    reported=True,
                )
    return result


def applied_changes(records: Iterable[Record], entity_path: str) -> list[Record]:
    """The ``applied`` records of one entity, oldest first (when a broker applied each write)."""
    return [r for r in records if r.kind == APPLIED and r.entity_path == entity_path]
