"""The listener's applied log: every change it applies (or refuses), appended, bounded on disk.

The snapshot (:mod:`configctl.listener.state`) says what the broker runs *now* and is replaced
after each batch; this log keeps *how it got there*, so "what did broker 7 run at 14:05, and when
did it apply change 42" has an answer (docs/reference/applied-log.md; the format and the reader
are :mod:`configctl.applied`).

Crash safety without a lock file or a footer: each batch's records are one ``write`` to a file
opened with ``O_APPEND``, optionally fsynced. A listener killed mid-write leaves at most one torn
last line; on the next open the sink ends that line (a newline) before appending, so the fragment
is a line of its own that every reader skips, and the records after it are whole.

Bounded on disk: when a segment would grow past ``max_bytes`` the next record starts a new one,
and only the newest ``keep`` segments are kept (``keep * max_bytes`` plus one record at most).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from configctl import applied, catalogue
from configctl.applied import APPLIED, LOAD, OBSERVED, REFUSED, KeyRecord, Record
from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.files import kind_of
from configctl.handlers.base import MISMATCH, Problem
from configctl.listener.records import AppliedChange, BatchResult
from configctl.precedence import EffectiveValue
from configctl.secrets import digest

log = logging.getLogger("configctl.listener")

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
"""A segment is closed once it reaches this size (a record is ~300 bytes: ~50,000 per segment)."""
DEFAULT_KEEP = 8
"""Segments kept per broker: the log holds at most about ``DEFAULT_KEEP * DEFAULT_MAX_BYTES``."""
_APPEND = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
"""A segment is opened to append (and to read its last byte), never through a symlink."""
_NAMES_TRIED = 100


class AppliedLog:
    """Appends one broker's applied records under ``<state-dir>/applied/`` (thread-safe: the worker
    and the observer both append)."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        broker_id: int,
        *,
        digest_key: bytes | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep: int = DEFAULT_KEEP,
        fsync: bool = True,
        clock: object = time.time,
    ) -> None:
        if isinstance(max_bytes, bool) or int(max_bytes) < 1024:
            raise InvalidInput(f"applied log segment size {max_bytes!r} must be at least 1024 bytes")
        if isinstance(keep, bool) or int(keep) < 1:
            raise InvalidInput(f"applied log retention {keep!r} must keep at least 1 segment")
        self.directory = applied.log_directory(state_dir)
        self.broker_id = int(broker_id)
        self.digest_key = digest_key
        self.max_bytes = int(max_bytes)
        self.keep = int(keep)
        self.fsync = fsync
        self._clock = clock
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._size = 0
        self._sequence = 0
        self._observed: set[tuple[str | None, str | None, int | None, str | None]] = set()
        self._stepped_over: set[Path] = set()
        self.records_written = 0
        self.bytes_written = 0

    @property
    def path(self) -> Path:
        """The segment being appended to."""
        return self.directory / applied.segment_name(self.broker_id, self._sequence)

    # -- what the listener hands over ----------------------------------------------------------

    def batch(
        self,
        result: BatchResult,
        before: Mapping[str, Mapping[str, EffectiveValue]],
        *,
        full_load: bool = False,
        up_to: int | None = None,
        loaded: Mapping[str, EffectiveValue] | None = None,
    ) -> None:
        """Log one batch: an ``applied`` record per entity change (old values from ``before``,
        the entity's effective config before the batch, where it was taken), a ``refused`` record
        per entity with problems and no change, and a ``load`` record for a full load (with
        ``loaded``: the broker's own dynamically set keys as loaded)."""
        now = self._now_ms()
        records: list[Record] = []
        if full_load:
            keys = tuple(
                KeyRecord(name, None, None, self._shown(v.value, v.sensitive), v.source, None)
                for name, v in sorted((loaded or {}).items())
            )
            records.append(
                Record(
                    LOAD,
                    self.broker_id,
                    up_to,
                    None,
                    now,
                    keys=keys,
                    extra={"entities": result.applied_count},
                )
            )
        problems: dict[str | None, list[Problem]] = {}
        for problem in result.problems:
            problems.setdefault(problem.entity_path, []).append(problem)
        for change in result.applied:
            records.append(self._applied(change, before.get(change.entity_path, {}), problems, now))
        for path, found in problems.items():
            number = max((p.change_number for p in found if p.change_number is not None), default=None)
            records.append(
                Record(REFUSED, self.broker_id, number, path, now, problems=tuple(p.to_json() for p in found))
            )
        self.append(records)

    def observed(self, problems: Sequence[Problem]) -> None:
        """Beside a real broker: log each mismatch the first time it is seen (what the broker reported)."""
        records = []
        for problem in problems:
            if problem.kind != MISMATCH:
                continue
            seen = (problem.entity_path, problem.key, problem.change_number, problem.reported)
            if seen in self._observed:
                continue
            self._observed.add(seen)
            records.append(
                Record(
                    OBSERVED,
                    self.broker_id,
                    problem.change_number,
                    problem.entity_path,
                    problem.at_ms or self._now_ms(),
                    problems=(problem.to_json(),),
                    extra={"key": problem.key, "expected": problem.expected, "reported": problem.reported},
                )
            )
        if len(self._observed) > 10_000:  # bounded: an old mismatch seen again is logged again
            self._observed.clear()
        self.append(records)

    def _applied(
        self,
        change: AppliedChange,
        before: Mapping[str, EffectiveValue],
        problems: dict[str | None, list[Problem]],
        now: int,
    ) -> Record:
        keys = []
        entity_type = Entity.from_path(change.entity_path).type
        for key in change.keys:
            old = before.get(key.name)
            new = key.effective
            # By its name too: a key the broker ignores (a listener's password set at <default>)
            # has no effective value to say it is a secret, but its stored value is one.
            sensitive = (
                (new.sensitive if new is not None else False)
                or (old.sensitive if old else False)
                or catalogue.is_sensitive(entity_type, key.name)
            )
            keys.append(
                KeyRecord(
                    key.name,
                    self._shown(old.value if old else None, sensitive),
                    old.source if old else None,
                    self._shown(new.value if new else None, sensitive),
                    new.source if new else None,
                    self._shown(key.stored, sensitive),
                )
            )
        mine = problems.pop(change.entity_path, [])
        return Record(
            APPLIED,
            self.broker_id,
            change.change_number,
            change.entity_path,
            now,
            keys=tuple(keys),
            problems=tuple(p.to_json() for p in mine),
        )

    def _shown(self, value: str | None, sensitive: bool) -> str | None:
        """A secret is never written in clear: its keyed digest (the fleet's digest key) instead."""
        if value is None or not sensitive:
            return value
        return digest(value, self.digest_key)

    # -- the file --------------------------------------------------------------------------------

    def append(self, records: Iterable[Record]) -> None:
        """Append ``records`` in one write (rotating first when the segment would outgrow its size)."""
        data = "".join(r.line() for r in records).encode("utf-8", "surrogatepass")
        if not data:
            return
        with self._lock:
            if self._fd is None:
                self._open()
            if self._size > 0 and self._size + len(data) > self.max_bytes:
                self._rotate()
            assert self._fd is not None
            os.write(self._fd, data)
            if self.fsync:
                os.fsync(self._fd)
            self._size += len(data)
            self.records_written += data.count(b"\n")
            self.bytes_written += len(data)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _open(self) -> None:
        """Continue the newest segment; a torn last line (a crash mid-write) is ended first.

        A file named like the newest segment that is not a regular file (a named pipe, whose
        open would block the listener's start for ever; a symlink planted to make the listener
        append to another file) is not continued: the log goes on in a new segment after it.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        existing = applied.segments(self.directory, self.broker_id).get(self.broker_id, [])
        fd = None
        if existing:
            self._sequence = applied.sequence_of(existing[-1])
            fd = self._continue(existing[-1])
        if fd is None:
            self._sequence += 1
            fd = self._new_segment()
        self._fd = fd
        self._size = os.fstat(fd).st_size
        if self._size and os.pread(fd, 1, self._size - 1) != b"\n":
            log.warning("applied log %s ended in a torn line (a crash mid-write): it is skipped", self.path)
            os.write(fd, b"\n")
            self._size += 1

    def _rotate(self) -> None:
        assert self._fd is not None
        os.close(self._fd)
        self._fd = None
        self._sequence += 1
        self._fd = self._new_segment()
        self._size = 0
        existing = applied.segments(self.directory, self.broker_id).get(self.broker_id, [])
        for old in existing[: max(0, len(existing) - self.keep)]:
            with contextlib.suppress(FileNotFoundError):  # another reader's cleanup got there first
                old.unlink()

    def _continue(self, segment: Path) -> int | None:
        """The newest segment open for appending, or None when it is not a regular file of its own
        (looked at before it is opened, and again through the descriptor: never a symlink followed)."""
        if not stat.S_ISREG(os.lstat(segment).st_mode):
            self._step_over(segment)
            return None
        fd = os.open(segment, _APPEND | os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            self._step_over(segment)
            return None
        os.set_blocking(fd, True)
        return fd

    def _new_segment(self) -> int:
        """A new segment, created by this open (``O_EXCL``): a name already taken is stepped over."""
        for _ in range(_NAMES_TRIED):
            try:
                return os.open(self.path, _APPEND | os.O_CREAT | os.O_EXCL, 0o640)
            except FileExistsError:
                self._step_over(self.path)
                self._sequence += 1
        raise FileExistsError(
            f"{_NAMES_TRIED} applied log segment names in a row are taken in {self.directory}"
        )

    def _step_over(self, segment: Path) -> None:
        """Say once that ``segment`` is not appended to (an operator should look at what it is)."""
        if segment in self._stepped_over:
            return
        self._stepped_over.add(segment)
        try:
            what = kind_of(os.lstat(segment).st_mode)
        except OSError:
            what = "gone"
        log.warning(
            "applied log %s is not a segment of this listener (%s): not appended to; the log goes on "
            "in the next segment",
            segment,
            what,
        )

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)  # type: ignore[operator]
