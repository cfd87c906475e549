"""A KRaft node's local metadata log, read from its files: every record with its offset and time.

Every controller and broker keeps the cluster's metadata log on its own disk, in
``<metadata log dir>/__cluster_metadata-0``: segments (``<base offset>.log``, 20 digits) and
snapshots (``<end offset>-<epoch>.checkpoint``), both files of Kafka's record batches
(:mod:`configctl.kraft.recordbatch`). This reads them, read-only, in offset order, and yields
each data record (control batches, the quorum's own, are skipped) with its offset and the time
Kafka recorded for it (the leader's append time), decoded by
:mod:`configctl.kraft.metadatarecords` with its secrets already digested.

What it never does: paper over a hole. Kafka deletes old segments (by default past 7 days or
100 MiB) once a snapshot covers them, so the log asked from an offset it no longer holds yields
a :class:`Gap` first; a segment that vanishes while being read leaves one too. A torn tail (the
half-written last batch of a running node) ends the read at the last whole batch. The newest
records may not be committed yet (a follower can still truncate them): the reader says what the
file holds, and the one who reads it decides what is committed (issue 34's next step).

The flight recorder (:mod:`configctl.kraft.recorder`) reads it beside a broker.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from configctl.errors import EnvironmentProblem, NotFound, PermissionDenied, one_line
from configctl.kraft.metadatarecords import MetadataRecord, decode_metadata_record
from configctl.kraft.recordbatch import Batch, CorruptLog, read_file_batches

PARTITION = "__cluster_metadata-0"
_SEGMENT = re.compile(r"(\d{20})\.log")
_SNAPSHOT = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


@dataclass(frozen=True)
class MetadataEntry:
    """One data record: its offset (in a snapshot, its position there, as Kafka's tool prints
    it), the append time Kafka recorded for it (ms since the epoch), the record, and the base
    offset of its batch: the records of one request the controller committed share a batch, so
    a recorder tells one write from the next by it."""

    offset: int
    append_time_ms: int
    record: MetadataRecord
    batch: int = 0


@dataclass(frozen=True)
class Gap:
    """Offsets ``start`` up to ``end`` (exclusive) are no longer on this node's disk."""

    start: int
    end: int


@dataclass(frozen=True)
class Snapshot:
    """A snapshot file: the whole metadata state as of ``end_offset`` (exclusive), at ``epoch``."""

    end_offset: int
    epoch: int
    path: Path


def partition_dir(log_dir: Path | str) -> Path:
    """The ``__cluster_metadata-0`` directory of a node's metadata log dir (or that directory itself)."""
    path = Path(log_dir)
    found = path if path.name == PARTITION else path / PARTITION
    if not found.is_dir():
        raise NotFound(f"no KRaft metadata log in {path} (no {PARTITION} directory)")
    return found


def _files(log_dir: Path | str) -> list[Path]:
    directory = partition_dir(log_dir)
    try:
        return list(directory.iterdir())
    except PermissionError:
        raise PermissionDenied(f"cannot list {directory}: permission denied") from None
    except OSError as problem:
        raise EnvironmentProblem(
            f"cannot list {directory}: {one_line(problem.strerror or problem)}"
        ) from None


def segments(log_dir: Path | str) -> list[tuple[int, Path]]:
    """The log's segment files with their base offsets, oldest first."""
    found = (
        (int(match.group(1)), path) for path in _files(log_dir) if (match := _SEGMENT.fullmatch(path.name))
    )
    return sorted(found)


def snapshots(log_dir: Path | str) -> list[Snapshot]:
    """The log's finished snapshots, oldest first (a ``.checkpoint.part`` is still being written)."""
    found = [
        Snapshot(int(match.group(1)), int(match.group(2)), path)
        for path in _files(log_dir)
        if (match := _SNAPSHOT.fullmatch(path.name))
    ]
    return sorted(found, key=lambda s: (s.end_offset, s.epoch))


def _file_batches(path: Path, start: int = 0) -> Iterator[Batch]:
    """:func:`read_file_batches`, its failures to read translated once (a vanished file is the
    caller's to judge: a segment Kafka deleted is a gap, a snapshot it deleted is not there)."""
    try:
        yield from read_file_batches(path, start)
    except FileNotFoundError:
        raise
    except PermissionError:
        raise PermissionDenied(
            f"cannot read {path}: permission denied (run as Kafka's user, or give read access)"
        ) from None
    except OSError as problem:
        raise EnvironmentProblem(f"cannot read {path}: {one_line(problem.strerror or problem)}") from None


def _entries(batch: Batch, where: str, start: int, digest_key: bytes | None) -> Iterator[MetadataEntry]:
    for record in batch.records:
        if record.offset < start:
            continue
        if record.value is None:
            raise CorruptLog(f"{where} at offset {record.offset}: a metadata record without a value")
        try:
            decoded = decode_metadata_record(record.value, digest_key)
        except ValueError as problem:
            raise CorruptLog(f"{where} at offset {record.offset}: {problem}") from None
        yield MetadataEntry(record.offset, record.timestamp_ms, decoded, batch.base_offset)


def read_log(
    log_dir: Path | str, start: int = 0, *, digest_key: bytes | None = None
) -> Iterator[MetadataEntry | Gap]:
    """Every data record of the log from offset ``start`` on, in offset order, and each hole as a
    :class:`Gap` where it falls. ``log_dir`` is the node's metadata log dir or its
    ``__cluster_metadata-0``; ``digest_key`` keys the digests of secrets (the fleet's digest key).

    Raises :class:`NotFound` without a metadata log, :class:`CorruptLog` (one line: file and
    offset) at a batch that cannot be Kafka's, :class:`PermissionDenied` for a file this user may
    not read."""
    files = segments(log_dir)
    # The segment holding ``start`` is the last one starting at or before it; older ones are skipped.
    first = max((i for i, (base, _) in enumerate(files) if base <= start), default=0)
    expected = start
    for _base, path in files[first:]:
        try:
            for batch in _file_batches(path, expected):
                if batch.last_offset < expected:
                    continue
                if batch.base_offset > expected:
                    yield Gap(expected, batch.base_offset)
                if not batch.control:
                    yield from _entries(batch, str(path), expected, digest_key)
                expected = batch.last_offset + 1
        except FileNotFoundError:
            continue  # deleted by Kafka since listed: the next segment's first batch shows the gap


def read_snapshot(snapshot: Snapshot | Path, *, digest_key: bytes | None = None) -> Iterator[MetadataEntry]:
    """Every data record of a snapshot file (the state as of its end offset), in order."""
    path = snapshot.path if isinstance(snapshot, Snapshot) else Path(snapshot)
    try:
        for batch in _file_batches(path):
            if not batch.control:
                yield from _entries(batch, str(path), 0, digest_key)
    except FileNotFoundError:
        raise NotFound(
            f"snapshot {path} is not there (Kafka deletes a snapshot once a newer one covers it)"
        ) from None
