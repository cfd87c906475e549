"""The history archive: ZooKeeper's history records kept in durable files, for answers older than
ZooKeeper keeps (``history archive --out DIR``; docs/investigating.md, "Keeping history for years").

ZooKeeper stays bounded: each entity keeps its newest ``history-limit`` records (50 by default),
the writer trimming older ones as it records a new one. Run from cron more often than an entity
is written ``history-limit`` times and every record lands here before ZooKeeper drops it.

Layout: one JSON Lines file per entity, ``DIR/<entity path, percent-encoded>.jsonl`` (``topics%2Forders.jsonl``),
each line one record (``entity_path``, ``version``, ``time_ms``, ``identity``, ``reason``,
``config``, ``changed``, ``config_sha256``), oldest first. A record is identified by its entity,
version and time: archiving again adds only records not there yet, and a file whose records did not
change is left untouched (same bytes, same modification time), so a second run writes nothing.
A file is replaced whole by a rename (never half written), under a lock on ``DIR/.lock`` so two
cron runs do not interleave. Files are owner-only: a record holds the config as ZooKeeper holds it
(broker passwords encrypted, SCRAM credentials as salted hashes, as in ZooKeeper itself).

Reading: with the ``history-archive`` setting (``--history-archive DIR``, ``CONFIGCTL_HISTORY_ARCHIVE``
or a profile), the store every command opens takes its history role from :class:`ArchivedHistory`
(:func:`configctl.cli.context.new_store`), so every reader of history (``history``, ``--at``,
``blame``, ``diff``, the console) gets ZooKeeper's records and these as one history, through the
one door, and none of them knows there is an archive.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.files import read_text
from configctl.store import Change, History
from configctl.znodes import HistoryRecord, HistoryZNodes

_SUFFIX = ".jsonl"
_MAX_NAME = 200  # well inside the usual 255-byte limit on a file name
_HASHED = "~"


def file_of(directory: Path, entity_path: str) -> Path:
    """``topics%2Forders.jsonl``; a path too long for a file name (a 249-character topic) is named
    by its digest instead (``topics%2F~<sha256>.jsonl``: its records still name it)."""
    encoded = quote(entity_path, safe="")
    if len(encoded) + len(_SUFFIX) > _MAX_NAME:
        kind = quote(entity_path.split("/", 1)[0], safe="")
        encoded = f"{kind}%2F{_HASHED}{hashlib.sha256(entity_path.encode('utf-8')).hexdigest()}"
    return directory / (encoded + _SUFFIX)


def _identity(record: HistoryRecord) -> tuple[str, int, int]:
    return (record.entity_path, record.version, record.time_ms)


def to_line(record: HistoryRecord) -> str:
    """One archived record: the bytes its ZooKeeper history node holds, as one line."""
    return HistoryZNodes.encode(record).decode("utf-8") + "\n"


def from_line(line: str) -> HistoryRecord | None:
    """A record from one line, read as its history node is; None for a torn or foreign line
    (skipped, never fatal) or one that names no entity."""
    try:
        record = HistoryZNodes.decode(line.encode("utf-8", "surrogatepass"))
    except InvalidInput:
        return None
    return record if record.entity_path else None


def read(directory: Path, entity_path: str) -> list[HistoryRecord]:
    """An entity's archived records, newest first (as ZooKeeper's are read)."""
    path = file_of(directory, entity_path)
    if not path.exists():
        return []
    text = read_text(path, "history archive")  # one line for a FIFO, a directory, no permission
    records = [r for r in map(from_line, text.splitlines()) if r is not None and r.entity_path == entity_path]
    return sorted(records, key=lambda r: (r.time_ms, r.version), reverse=True)


def entity_paths(directory: Path) -> list[str]:
    """Every entity the archive holds records of."""
    if not directory.is_dir():
        return []
    found = set()
    for path in directory.iterdir():
        if not path.name.endswith(_SUFFIX) or path.name.startswith("."):
            continue
        name = unquote(path.name[: -len(_SUFFIX)])
        if f"/{_HASHED}" not in name:
            found.add(name)
            continue
        with contextlib.suppress(OSError), path.open(encoding="utf-8") as handle:
            first = next((r for r in map(from_line, handle) if r is not None), None)
            if first is not None:
                found.add(first.entity_path)
    return sorted(found)


def merged(live: Iterable[HistoryRecord], archived: Iterable[HistoryRecord]) -> list[HistoryRecord]:
    """ZooKeeper's records and the archive's as one history, newest first (each record once)."""
    found = {_identity(r): r for r in archived}
    found.update({_identity(r): r for r in live})  # ZooKeeper's copy wins
    return sorted(found.values(), key=lambda r: (r.time_ms, r.version), reverse=True)


@dataclass(frozen=True)
class Archived:
    """What one ``history archive`` run did."""

    directory: Path
    entities: int
    records: int
    added: int
    files_written: int

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "entities": self.entities,
            "records": self.records,
            "added": self.added,
            "files_written": self.files_written,
        }

    def render(self, out: Any) -> None:
        out.print(
            f"archived {self.entities} entities' history to {self.directory}: {self.records} records kept, "
            f"{self.added} added, {self.files_written} file(s) written",
            highlight=False,
            markup=False,
        )


def archive(histories: Mapping[str, list[HistoryRecord]], directory: Path) -> Archived:
    """Add every record of ``histories`` (by entity path) to the archive in ``directory``."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise InvalidInput(f"cannot create the history archive {directory}: {exc.strerror or exc}") from None
    added = written = total = 0
    with _locked(directory):
        for path, live in sorted(histories.items()):
            if not live:
                continue
            kept = read(directory, path)
            known = {_identity(r) for r in kept}
            new = [r for r in live if _identity(r) not in known]
            everything = merged(live, kept)
            total += len(everything)
            if not new:
                continue
            _replace(file_of(directory, path), (to_line(r) for r in reversed(everything)))
            added += len(new)
            written += 1
    return Archived(directory, len([h for h in histories.values() if h]), total, added, written)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One archiving run at a time per directory (cron runs that overlap wait for each other)."""
    fd = os.open(directory / ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _replace(path: Path, lines: Iterable[str]) -> None:
    """Write ``path`` whole: a temporary file beside it, fsynced, renamed over it (owner-only)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise InvalidInput(f"cannot write the history archive {path}: {exc.strerror or exc}") from None


class ArchivedHistory:
    """The history role (:class:`configctl.store.History`) as ZooKeeper's records and the archive's
    in ``directory`` as one (:func:`merged`); ``inner`` keeps the records and takes new ones."""

    def __init__(self, inner: History, directory: Path) -> None:
        self.inner = inner
        self.history_archive: Path | None = directory
        """Named in a horizon error: the history that does not reach back is ZooKeeper's and this."""
        self.directory = directory

    def history(self, entity: Entity) -> list[HistoryRecord]:
        return merged(self.inner.history(entity), read(self.directory, entity.path))

    def histories(self, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
        wanted = list(entities)
        found = self.inner.histories(wanted)
        return {e.path: merged(found.get(e.path, []), read(self.directory, e.path)) for e in wanted}

    def history_entities(self) -> list[Entity]:
        """ZooKeeper's entities with history, and those only the archive still knows (deleted long ago)."""
        found = {e.path: e for e in self.inner.history_entities()}
        for path in entity_paths(self.directory):
            with contextlib.suppress(InvalidInput):
                found.setdefault(path, Entity.from_path(path))
        return list(found.values())

    def record_history(self, change: Change, version: int, *, reason: str = "") -> None:
        self.inner.record_history(change, version, reason=reason)
