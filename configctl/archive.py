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
A file is replaced whole by a rename from a temporary file of its own (:func:`configctl.files.write_atomically`:
never half written, never through a planted name), under a lock on ``DIR/.lock`` so two cron runs
do not interleave. Files are owner-only, in a directory nobody else can write to (an existing one
others can write to is refused): a record holds the config as ZooKeeper holds it (broker
passwords encrypted, SCRAM credentials as salted hashes, as in ZooKeeper itself).

One cluster per archive: the first run records which cluster it archives (``DIR/cluster.json``:
Kafka's cluster id when a broker ever registered one, and ZooKeeper's connect string); another
cluster's is refused in one line, to write and to read. Two ids decide alone (a cluster moved to
new servers keeps its id); without one, the connect strings do. ZooKeeper's
records win: an archived record they contradict (:func:`reconcile`) is left out of every answer,
said on stderr, and removed by the next ``history archive``, which lists it.

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
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, unquote

from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.files import (
    check_directory,
    open_checked,
    private_directory,
    read_json,
    read_text,
    replace_atomically,
    write_atomically,
)
from configctl.store import Change, History
from configctl.timeref import iso
from configctl.zkconnection import ConnectString, parse_connect_string
from configctl.znodes import HistoryRecord, HistoryZNodes

if TYPE_CHECKING:
    from configctl import applied

log = logging.getLogger(__name__)

_SUFFIX = ".jsonl"
CLUSTER_FILE = "cluster.json"
"""Which ZooKeeper the archive holds the history of, written by its first ``history archive``."""
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
        with open_checked(path, "history archive") as handle:  # a named pipe: one line, never a hang
            lines = (line.decode("utf-8", "replace") for line in handle)
            first = next((r for r in map(from_line, lines) if r is not None), None)
        if first is not None:
            found.add(first.entity_path)
    return sorted(found)


def merged(live: Iterable[HistoryRecord], archived: Iterable[HistoryRecord]) -> list[HistoryRecord]:
    """ZooKeeper's records and the archive's as one history, newest first (:func:`reconcile`)."""
    return reconcile(live, archived).records


@dataclass(frozen=True)
class Dropped:
    """An archived record ZooKeeper's records contradict: left out, and said why."""

    record: HistoryRecord
    why: str

    def line(self) -> str:
        return f"{self.record.entity_path} version {self.record.version} of {iso(self.record.time_ms)}: {self.why}"

    def to_json(self) -> dict[str, Any]:
        record = self.record
        return {
            "entity_path": record.entity_path,
            "version": record.version,
            "time_ms": record.time_ms,
            "why": self.why,
        }


@dataclass(frozen=True)
class Reconciled:
    """One entity's history: the records kept, newest first, and the archived ones left out."""

    records: list[HistoryRecord]
    dropped: list[Dropped] = field(default_factory=list)


def reconcile(live: Iterable[HistoryRecord], archived: Iterable[HistoryRecord]) -> Reconciled:
    """ZooKeeper's records (``live``) and the archive's as one history, each record once.

    The archive holds copies of records ZooKeeper once held, and ZooKeeper keeps each entity's
    newest: from its oldest record on, it holds every record there is. So an archived record is
    left out (:class:`Dropped`) when ZooKeeper contradicts it: ZooKeeper holds the same version at
    the same time with another content, or the record is dated within the span ZooKeeper holds
    whole and is not one of its records (the same version at another time, forged or from another
    cluster). Older archived records are the archive's alone to tell: a version there may repeat
    one ZooKeeper holds (a node deleted and created again starts at version 0 again). The archive
    holding one record twice, differently, is refused in one line.
    """
    zookeeper = list(live)
    held = {_identity(r): r for r in zookeeper}
    versions: dict[int, HistoryRecord] = {}
    for record in sorted(zookeeper, key=lambda r: r.time_ms):
        versions.setdefault(record.version, record)
    start = min((r.time_ms for r in zookeeper), default=None)
    kept: dict[tuple[str, int, int], HistoryRecord] = {}
    dropped: list[Dropped] = []
    for record in archived:
        identity = _identity(record)
        if identity in held:
            if held[identity] != record:
                dropped.append(Dropped(record, "it differs from ZooKeeper's record of that version and time"))
            continue
        if start is not None and record.time_ms >= start:
            same = versions.get(record.version)
            why = (
                f"ZooKeeper holds version {record.version} of {iso(same.time_ms)}"
                if same is not None
                else f"ZooKeeper holds every record since {iso(start)}, and not this one"
            )
            dropped.append(Dropped(record, why))
            continue
        if kept.get(identity, record) != record:
            raise InvalidInput(
                f"the history archive holds {record.entity_path} version {record.version} of "
                f"{iso(record.time_ms)} twice, differently: remove the wrong line from its file"
            )
        kept[identity] = record
    records = sorted([*zookeeper, *kept.values()], key=lambda r: (r.time_ms, r.version), reverse=True)
    return Reconciled(records, dropped)


# -- which cluster -----------------------------------------------------------------------------------


def same_cluster(one: str, other: str) -> bool:
    """Whether two ZooKeeper connect strings name one cluster: the same chroot, and a server in
    common (servers listed in another order, or one added or replaced, are still that cluster)."""
    a, b = _connect(one), _connect(other)
    return a.chroot == b.chroot and bool(_servers(a) & _servers(b))


def _connect(text: str) -> ConnectString:
    return parse_connect_string(text, what="the history archive's cluster")


def _servers(connect: ConnectString) -> set[tuple[str, int]]:
    return {(host.lower(), port) for host, port in connect.hosts}


def check_cluster(directory: Path, cluster: str, cluster_id: str | None = None) -> dict[str, Any] | None:
    """Refuse, in one line, an archive that holds another cluster's history (its
    :data:`CLUSTER_FILE`): Kafka's cluster ids when both are known, else the connect strings.
    What the file records, None when it names none yet (an archive made before it was recorded)."""
    path = directory / CLUSTER_FILE
    if not path.exists():
        return None
    document = read_json(path, "history archive")
    recorded = document.get("zookeeper") if isinstance(document, dict) else None
    if not isinstance(recorded, str):
        raise InvalidInput(f"history archive {path}: names no ZooKeeper; remove it, and archive again")
    recorded_id = document.get("kafka_cluster_id")
    if isinstance(recorded_id, str) and cluster_id is not None:
        if recorded_id != cluster_id:
            raise InvalidInput(
                f"history archive {directory} holds the history of Kafka cluster {recorded_id} "
                f"({CLUSTER_FILE}), not of cluster {cluster_id} at {_connect(cluster)}: archive each "
                "cluster into a directory of its own"
            )
        return document
    if not same_cluster(recorded, cluster):
        raise InvalidInput(
            f"history archive {directory} holds the history of ZooKeeper {recorded} ({CLUSTER_FILE}), "
            f"not of {_connect(cluster)}: archive each cluster into a directory of its own "
            f"(the same cluster moved to new servers: remove {path})"
        )
    return document


def prepare(directory: Path, cluster: str | None, cluster_id: str | None = None) -> None:
    """The archive directory, ready to write: owner-only (made so, or refused in one line when
    others can write to it), holding ``cluster``'s history (recorded on the first run, and its
    Kafka ``cluster_id`` added once it is known)."""
    private_directory(directory, "history archive")
    if cluster is None:
        return
    recorded = check_cluster(directory, cluster, cluster_id)
    if recorded is None or (cluster_id is not None and recorded.get("kafka_cluster_id") != cluster_id):
        recorded = recorded or {}
        document: dict[str, str] = {"zookeeper": str(recorded.get("zookeeper") or _connect(cluster))}
        if cluster_id is not None:
            document["kafka_cluster_id"] = cluster_id
        replace_atomically(directory / CLUSTER_FILE, json.dumps(document) + "\n", private=True)


@dataclass(frozen=True)
class Archived:
    """What one ``history archive`` run did."""

    directory: Path
    entities: int
    records: int
    added: int
    files_written: int
    dropped: tuple[Dropped, ...] = ()
    """Archived records ZooKeeper's contradict, removed from the archive (:func:`reconcile`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "entities": self.entities,
            "records": self.records,
            "added": self.added,
            "files_written": self.files_written,
            "dropped": [d.to_json() for d in self.dropped],
        }

    def render(self, out: Any) -> None:
        out.print(
            f"archived {self.entities} entities' history to {self.directory}: {self.records} records kept, "
            f"{self.added} added, {self.files_written} file(s) written",
            highlight=False,
            markup=False,
        )
        for dropped in self.dropped:
            out.print(f"removed from the archive: {dropped.line()}", highlight=False, markup=False)


def archive(
    histories: Mapping[str, list[HistoryRecord]],
    directory: Path,
    *,
    cluster: str | None = None,
    cluster_id: str | None = None,
) -> Archived:
    """Add every record of ``histories`` (by entity path, ZooKeeper's) to the archive in
    ``directory``, the history of ZooKeeper ``cluster`` (its connect string) and Kafka cluster
    ``cluster_id`` (:func:`prepare`). An archived record ZooKeeper's contradict is removed from
    its file, and listed."""
    prepare(directory, cluster, cluster_id)
    added = written = total = 0
    dropped: list[Dropped] = []
    with _locked(directory):
        for path, live in sorted(histories.items()):
            if not live:
                continue
            kept = read(directory, path)
            known = {_identity(r) for r in kept}
            new = [r for r in live if _identity(r) not in known]
            everything = reconcile(live, kept)
            total += len(everything.records)
            dropped.extend(everything.dropped)
            if not new and not everything.dropped:
                continue
            lines = (to_line(r) for r in reversed(everything.records))
            write_atomically(file_of(directory, path), lines, private=True)  # a fresh temporary name
            added += len(new)
            written += 1
    return Archived(
        directory, len([h for h in histories.values() if h]), total, added, written, tuple(dropped)
    )


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One archiving run at a time per directory (cron runs that overlap wait for each other)."""
    flags = os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(directory / ".lock", flags, 0o600)
    except OSError as exc:
        raise InvalidInput(f"history archive {directory}: cannot lock it ({exc.strerror or exc})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class Recorded(History, Protocol):
    """The history :class:`ArchivedHistory` completes, and the cluster it is of (ZooKeeper's connect
    string, Kafka's cluster id)."""

    @property
    def location(self) -> str: ...

    def cluster_id(self) -> str | None: ...


class ArchivedHistory:
    """The history role (:class:`configctl.store.History`) as ZooKeeper's records and the archive's
    in ``directory`` as one (:func:`reconcile`); ``inner`` keeps the records and takes new ones.

    The directory is looked at once, on the first read: something other than a directory (a
    named pipe, a file) is refused in one line, as is another cluster's archive; one that is not
    there is said (``warn``) and read as empty. An archived record ZooKeeper's contradict is left
    out of every answer, and said once.
    """

    def __init__(
        self, inner: Recorded, directory: Path, *, warn: Callable[[str], None] | None = None
    ) -> None:
        self.inner = inner
        self.history_archive: Path | None = directory
        """Named in a horizon error: the history that does not reach back is ZooKeeper's and this."""
        self.directory = directory
        self._warn = warn if warn is not None else log.warning
        self._present: bool | None = None
        self._said: set[tuple[str, int, int]] = set()

    def _archived(self, entity_path: str) -> list[HistoryRecord]:
        if not self._looked():
            return []
        return read(self.directory, entity_path)

    def _looked(self) -> bool:
        """Whether the archive is there to read, once per store (refusals are one line)."""
        if self._present is None:
            present = check_directory(self.directory, f"history archive {self.directory}")
            if present:
                check_cluster(self.directory, self.inner.location, self.inner.cluster_id())
            else:
                self._warn(
                    f"history archive {self.directory} does not exist: answering from ZooKeeper's records alone"
                )
            self._present = present
        return self._present

    def _merged(self, live: list[HistoryRecord], entity_path: str) -> list[HistoryRecord]:
        result = reconcile(live, self._archived(entity_path))
        for dropped in result.dropped:
            identity = _identity(dropped.record)
            if identity not in self._said:
                self._said.add(identity)
                self._warn(f"history archive {self.directory}: left out {dropped.line()}")
        return result.records

    def history(self, entity: Entity) -> list[HistoryRecord]:
        return self._merged(self.inner.history(entity), entity.path)

    def histories(self, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
        wanted = list(entities)
        found = self.inner.histories(wanted)
        return {e.path: self._merged(found.get(e.path, []), e.path) for e in wanted}

    def history_entities(self) -> list[Entity]:
        """ZooKeeper's entities with history, and those only the archive still knows (deleted long ago)."""
        found = {e.path: e for e in self.inner.history_entities()}
        for path in entity_paths(self.directory) if self._looked() else ():
            with contextlib.suppress(InvalidInput):
                found.setdefault(path, Entity.from_path(path))
        return list(found.values())

    def record_history(self, change: Change, version: int, *, reason: str = "") -> None:
        self.inner.record_history(change, version, reason=reason)

    def carried_applied_log(self, broker_id: int) -> list[applied.Record] | None:
        return self.inner.carried_applied_log(broker_id)
