"""Rollout records as a log: each version of a rollout one record of a topic, the first writer of a version wins. Pure.

ZooKeeper gives a rollout's record a version and refuses a write made from an older one. Kafka
has no compare-and-set, but a topic has one order every reader sees: the log. So each version of
a rollout's record is a whole document appended to the rollout topic, naming the version it was
made from (``base``: that version's ``token``). Reading the log, a rollout's versions form a
chain: version N is the first document, in log order, that says N and was made from the chain's
version N-1. A document that lost (another process appended its own version N first) is ignored
by every reader, and its writer, reading the log back to its own offset, learns it lost
(:func:`won`) and stops, as a ZooKeeper version conflict would make it stop.

Keys are ``<rollout id>@<version>@<token>``: never reused, so compaction keeps every document
until configctl removes the ones it no longer needs with tombstones (a finished rollout keeps its
last document only). The chain then starts at the oldest version left.

The document (docs/reference/rollout-topic.md) holds the record, the plan, what is left to undo,
and the process running it (KRaft has no ephemeral node: the owner is a field, cleared when the
process lets go).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from configctl.errors import InvalidInput, one_line
from configctl.rollout import record as rec
from configctl.rollout.record import Listed, Loaded, Planned, Record, UndoChunk

FORMAT = "configctl-rollout-log/1"
MAX_DOCUMENT_BYTES = 900_000
"""A document's size at most: under Kafka's default ``message.max.bytes`` (1 MiB) with room for
the record batch around it. A plan too large for it is refused when the rollout opens."""


@dataclass(frozen=True)
class Document:
    """One version of one rollout, as appended to the log."""

    id: str
    version: int
    token: str
    base: str | None
    record: Record
    planned: tuple[Planned, ...]
    undo: tuple[UndoChunk, ...]
    owner: dict[str, Any] | None

    @property
    def key(self) -> bytes:
        return key_of(self.id, self.version, self.token)

    def encode(self) -> bytes:
        data = json.dumps(
            {
                "format": FORMAT,
                "id": self.id,
                "version": self.version,
                "token": self.token,
                "base": self.base,
                "record": self.record.to_json(),
                "plan": [p.to_json() for p in self.planned],
                "undo": [{"index": c.index, **c.to_json()} for c in self.undo],
                "owner": self.owner,
            },
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
        if len(data) > MAX_DOCUMENT_BYTES:
            raise InvalidInput(
                f"rollout {self.id}'s record would be {len(data)} bytes, more than a KRaft rollout record "
                f"holds ({MAX_DOCUMENT_BYTES}): roll out fewer entities at once; nothing was written"
            )
        return data

    def loaded(self) -> Loaded:
        """The rollout as the store's words give it back."""
        undo = sorted(self.undo, key=lambda c: c.index)
        return Loaded(self.record, self.version, list(self.planned), undo, self.owner)

    def listed(self) -> Listed:
        return Listed(self.id, self.record, self.owner)

    def next(
        self,
        record: Record,
        *,
        undo: Sequence[UndoChunk] | None = None,
        owner: dict[str, Any] | bool | None = True,
    ) -> Document:
        """The document of the next version, made from this one (``owner=True``: kept as it is)."""
        return Document(
            self.id,
            self.version + 1,
            new_token(),
            self.token,
            record,
            self.planned,
            tuple(self.undo if undo is None else undo),
            self.owner if owner is True else (owner or None),
        )


def new_token() -> str:
    return secrets.token_hex(8)


def key_of(rollout_id: str, version: int, token: str) -> bytes:
    return f"{rollout_id}@{version}@{token}".encode()


def first(record: Record, planned: Sequence[Planned], owner: dict[str, Any]) -> Document:
    """A new rollout's first document (version 0, made from nothing)."""
    return Document(record.id, 0, new_token(), None, record, tuple(planned), (), owner)


def carried(loaded: Loaded) -> Document:
    """A finished rollout kept elsewhere (ZooKeeper's, before a migration) as a chain's first
    document: its record, plan and undo as they are, at the version it had there (a chain starts
    at its oldest version), made from nothing and owned by no process."""
    return Document(
        loaded.record.id,
        loaded.version,
        new_token(),
        None,
        loaded.record,
        tuple(loaded.planned),
        tuple(sorted(loaded.undo, key=lambda c: c.index)),
        None,
    )


def decode(data: bytes) -> Document:
    """A document read back, every part checked (:class:`InvalidInput`, one line, when it cannot be read)."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput("rollout log record is not JSON") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidInput(
            f"rollout log record has format {one_line(repr(_get(document, 'format')), 60)}, not {FORMAT!r}"
        )
    try:
        record = Record.decode(json.dumps(document["record"]).encode())
        planned = tuple(Planned.from_json(p) for p in document["plan"])
        undo = tuple(UndoChunk.from_json(int(c["index"]), c) for c in document["undo"])
        owner = document.get("owner")
        base = document.get("base")
        found = Document(
            str(document["id"]),
            int(document["version"]),
            str(document["token"]),
            None if base is None else str(base),
            record,
            planned,
            undo,
            dict(owner) if isinstance(owner, dict) else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(
            f"rollout log record is malformed: {type(exc).__name__}: {one_line(exc, 80)}"
        ) from None
    if found.record.id != found.id:
        raise InvalidInput(
            f"rollout log record for {found.id} holds the record of {one_line(found.record.id, 40)}"
        )
    rec.check_plan(found.record, list(found.planned))
    return found


def _get(document: Any, name: str) -> Any:
    return document.get(name) if isinstance(document, dict) else None


@dataclass
class Chain:
    """One rollout's versions as the log gives them: the accepted documents in version order, and
    the offset of each (which document, of two of the same version, came first)."""

    id: str
    accepted: list[tuple[int, Document]]
    problem: str | None = None
    """Why the newest document for this rollout could not be read (it is then not run on)."""
    keys: list[tuple[int, bytes]] | None = None
    """Every live key of this rollout's documents (what a finished rollout's tombstones remove)."""

    @property
    def current(self) -> Document | None:
        return self.accepted[-1][1] if self.accepted else None

    @property
    def first_offset(self) -> int:
        return self.accepted[0][0] if self.accepted else -1


def rollout_id_of(key: bytes | None) -> str | None:
    if not key:
        return None
    try:
        text = key.decode()
    except UnicodeDecodeError:
        return None
    rollout_id, _, rest = text.partition("@")
    return rollout_id if rest else None


def chains(messages: Iterable[tuple[int, bytes | None, bytes | None]]) -> dict[str, Chain]:
    """Every rollout's chain from the log's records (offset, key, value), in log order.

    A tombstone removes the document with its key. Each rollout's chain starts at the oldest
    version left and takes, for each next version, the first document made from the one before.
    A document that cannot be read, where it would be the next version, leaves the chain with its
    problem (the rollout is then unreadable, as on ZooKeeper: only ``rollout abort --force`` ends it,
    by appending a readable next version made from the last readable one).
    """
    live: dict[bytes, tuple[int, bytes]] = {}
    for offset, key, value in messages:
        if key is None:
            continue
        if value is None:
            live.pop(key, None)
        else:
            live[key] = (offset, value)
    by_id: dict[str, list[tuple[int, bytes, bytes]]] = {}
    for key, (offset, value) in live.items():
        rollout_id = rollout_id_of(key)
        if rollout_id is not None:
            by_id.setdefault(rollout_id, []).append((offset, key, value))
    result = {}
    for rollout_id, items in by_id.items():
        items.sort()
        result[rollout_id] = _chain(rollout_id, items)
    return result


def _chain(rollout_id: str, items: Sequence[tuple[int, bytes, bytes]]) -> Chain:
    chain = Chain(rollout_id, [], keys=[(offset, key) for offset, key, _ in items])
    documents: list[tuple[int, Document | None, str | None, int]] = []
    for offset, key, value in items:
        version = _version_of(key)
        try:
            documents.append((offset, decode(value), None, version))
        except InvalidInput as exc:
            documents.append((offset, None, exc.message, version))
    if not documents:
        return chain
    start = min(version for *_, version in documents)
    expected, base = start, None
    for offset, document, problem, version in documents:
        if version != expected:
            continue
        if document is None:  # the next version unless a readable one made from the chain follows
            chain.problem = chain.problem or problem
            continue
        if version != start and document.base != base:
            continue  # made from a version that lost: nobody reads it
        chain.accepted.append((offset, document))
        chain.problem = None
        expected, base = version + 1, document.token
    return chain


def _version_of(key: bytes) -> int:
    try:
        return int(key.decode().split("@")[1])
    except (UnicodeDecodeError, IndexError, ValueError):
        return -1


def won(chain: Chain | None, document: Document) -> bool:
    """Whether ``document`` is in ``chain``: the version it wrote is the rollout's (it came first)."""
    return chain is not None and any(d.token == document.token for _, d in chain.accepted)


def superseded(chain: Chain) -> list[bytes]:
    """Keys a finished rollout no longer needs: every document but its newest accepted one."""
    current = chain.current
    keep = current.key if current is not None else None
    return [key for _, key in (chain.keys or []) if key != keep]


def holders(found: Mapping[str, Chain], paths: Iterable[str], *, but: str | None = None) -> dict[str, str]:
    """Entity path → the open rollout (other than ``but``) that claims it, earliest first."""
    wanted = set(paths)
    result: dict[str, str] = {}
    for chain in sorted(found.values(), key=lambda c: c.first_offset):
        current = chain.current
        if chain.id == but or (current is not None and not current.record.open):
            continue
        claimed = _claimed(current) if current is not None else set()
        for path in sorted(claimed & wanted):
            result.setdefault(path, chain.id)
    return result


def _claimed(document: Document) -> set[str]:
    return {*document.record.entities, *(p.entity.path for p in document.planned)}


__all__ = [
    "FORMAT",
    "MAX_DOCUMENT_BYTES",
    "Chain",
    "Document",
    "carried",
    "chains",
    "decode",
    "first",
    "holders",
    "key_of",
    "superseded",
    "won",
]
