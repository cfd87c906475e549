"""A rollout this process works on in a KRaft cluster: its record in the rollout topic, its writes through the brokers.

KRaft's :class:`configctl.store.ActiveRollout`. Kafka has no transaction spanning a config write
and a record, so the order of the two carries the guarantees docs/rollout.md promises on KRaft:

* **a write's undo is on record before the write is sent**: the record (with the undo chunk of
  the entities about to be written) is appended first, then each entity goes through the
  brokers, version-checked and read back (:class:`configctl.kraft.writes.KRaftWrites`). A write
  that did not happen (an entity moved, a broker refused, the answer lost and not landed) is taken
  off the undo chunk by a further version, so the record says exactly what went out;
* **a restore goes out before its record**: entities are given their previous configs back first,
  then the record drops their undo, so a process killed in between leaves an undo that is still
  on record (``rollout abort`` finds those entities moved and says so; ``--force`` ends it);
* **two processes never both move one rollout**: every version names the one it was made from,
  and of two made from the same one the first in the log wins (:mod:`configctl.kraft.rolloutlog`);
  the other process reads the log back, finds it lost, and stops (:class:`TakenOver`). There is
  no ephemeral node: the owner is a field of the record, so a second ``rollout resume`` takes over
  (refused only while the owner is a live process on this host), and the first stops at its next
  step.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from typing import Any

import psutil

from configctl.entities import Entity
from configctl.errors import BrokerRefused, Conflict, RolloutStuck, one_line
from configctl.kraft.rolloutlog import Document, won
from configctl.kraft.rollouttopic import RolloutTopic
from configctl.rollout import record as rec
from configctl.rollout import restore as restore_plan
from configctl.rollout.record import EntitiesMoved, Planned, Record, TakenOver, Undo, UndoChunk
from configctl.store import (
    ABSENT,
    Change,
    CommitInterrupted,
    Committed,
    ConfigStore,
    Stored,
    VersionConflict,
    version_after,
)
from configctl.znodes import encode_entity_config

WRITES_PER_STEP = 20
"""Entities written between two versions of the record (each version carries the undo of the
next ones): few enough that a lost process leaves little to sort out, enough for speed."""
BYTES_PER_STEP = 200_000
"""The undo one version adds at most (a document stays well within its limit)."""


def now_ms() -> int:
    return int(time.time() * 1000)


def owner_document(identity: str) -> dict[str, Any]:
    """Which process runs the rollout (a field: KRaft has no node that goes with its process)."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "identity": identity, "started_ms": now_ms()}


def owner_alive(owner: dict[str, Any] | None) -> bool:
    """Whether ``owner`` is a process running now on this host (elsewhere nobody can tell)."""
    if not owner or owner.get("host") != socket.gethostname():
        return False
    pid = owner.get("pid")
    return isinstance(pid, int) and pid != os.getpid() and psutil.pid_exists(pid)


class KRaftActiveRollout:
    """A rollout this process moves on: every change to its record appended and judged by the log.

    ``store`` is the store its entity writes go through (the KRaft store's writes);
    ``topic`` is the rollout topic its record lives in; ``document`` its newest version.
    """

    def __init__(self, store: ConfigStore, topic: RolloutTopic, document: Document) -> None:
        self.store = store
        self.topic = topic
        self.document = document
        self.planned = list(document.planned)
        self.undo: dict[int, UndoChunk] = {c.index: c for c in document.undo}
        self.record: Record = document.record
        self.version: int = document.version
        self.owner: dict[str, Any] | None = document.owner

    @property
    def id(self) -> str:
        return self.record.id

    def current(self, entity: Entity) -> Stored:
        return self.store.read(entity, strict=False)

    def entity_paths(self) -> list[str]:
        return list(dict.fromkeys([*self.record.entities, *(p.entity.path for p in self.planned)]))

    def written(self) -> dict[Entity, Undo]:
        return {u.entity: u for chunk in self.undo.values() for u in chunk.entries}

    # -- the record alone ---------------------------------------------------------------------------

    def note(self, text: str, **changes: Any) -> None:
        self._append(text, changes)

    def take_over(self, text: str) -> None:
        owner = self.owner
        if owner_alive(owner):
            raise Conflict(
                f"rollout {self.id} is being run by another process right now (pid {owner.get('pid')} on "  # type: ignore[union-attr]
                f"this host; configctl rollout show {self.id})"
            )
        self._append(text, {"state": rec.RUNNING, "failure": None}, owner=owner_document(self.store.identity))

    def check(self) -> None:
        """TakenOver unless this process's version is still the rollout's newest."""
        chain = self.topic.chain(self.id)
        current = chain.current if chain is not None else None
        if current is None or current.token != self.document.token:
            raise TakenOver(current.record if current is not None else None)

    # -- writes -------------------------------------------------------------------------------------

    def write(
        self, items: Sequence[Planned], *, reason: str, text: str, step: dict[str, Any]
    ) -> list[Committed]:
        """Record the undo of ``items``, then write them through the brokers, one by one."""
        found = self.store.read_many([p.entity for p in items], strict=False)
        moved = [p.entity for p, now in zip(items, found, strict=True) if now.version != p.expected_version]
        if moved:
            raise EntitiesMoved(moved)
        changes, undos = [], []
        for item, now in zip(items, found, strict=True):
            changes.append(Change(item.entity, dict(item.target), item.expected_version, previous=now.config))
            previous = encode_entity_config(now.config) if now.version != ABSENT else None
            undos.append(Undo(item.entity, previous, now.version, version_after(item.expected_version)))
        chunk = UndoChunk(self.record.undo_chunks, int(step.get("wave") or 1), tuple(undos))
        self.undo[chunk.index] = chunk
        self._append(text, {"undo_chunks": chunk.index + 1, "step": step})
        return self._send(changes, reason, chunk)

    def _send(self, changes: Sequence[Change], reason: str, chunk: UndoChunk) -> list[Committed]:
        """Send ``changes`` (whose undo ``chunk`` is on record); what did not go out is taken off it."""
        done: list[Committed] = []
        try:
            for batch in self.store.commit_batches(changes, reason=reason):
                done.extend(batch)
        except VersionConflict:
            failed = changes[len(done)].entity
            self._narrow(chunk, done, f"{failed.label} moved before it was written")
            raise EntitiesMoved([failed]) from None
        except CommitInterrupted as exc:
            done = list(exc.committed)
            landed, missed = self.store.landed(exc.unknown)
            done += [Committed(c.entity, version_after(c.expected_version), None) for c in landed]
            if missed or exc.not_sent:
                self._narrow(chunk, done, f"the answer was lost: {one_line(exc.cause, 120)}")
                raise RolloutStuck(
                    f"lost the brokers' answer in the middle of rollout {self.id} ({one_line(exc.cause, 120)}); "
                    f"its record says what went out: configctl rollout show {self.id}, then abort or resume it"
                ) from None
        except BrokerRefused as exc:
            self._narrow(chunk, done, f"refused: {one_line(exc.message, 200)}")
            raise
        return done

    def _narrow(self, chunk: UndoChunk, done: Sequence[Committed], why: str) -> None:
        """Take what did not go out off ``chunk`` (removed when nothing did)."""
        went = {c.entity for c in done}
        kept = tuple(u for u in chunk.entries if u.entity in went)
        if kept:
            self.undo[chunk.index] = UndoChunk(chunk.index, chunk.wave, kept)
        else:
            self.undo.pop(chunk.index, None)
        self._append(f"not all written ({why}): {len(kept)} of {len(chunk.entries)} went out", {})

    def restore(
        self,
        chunks: Sequence[UndoChunk],
        *,
        reason: str,
        text: str,
        changes: dict[str, Any],
        before: Sequence[Change] = (),
        force: bool = False,
        finish: bool = False,
    ) -> list[Committed]:
        """Give every entity of ``chunks`` its previous config back (``before`` first), then drop
        the chunks from the record (and end the rollout with ``finish``)."""
        entries = [u for chunk in chunks for u in reversed(chunk.entries)]  # newest first
        restores, moved = self.restore_changes(entries, force=force)
        if moved:
            raise EntitiesMoved.since_written(moved)
        self.check()
        writes = [*before, *restores]
        done: list[Committed] = []
        try:
            for batch in self.store.commit_batches(writes, reason=reason):
                done.extend(batch)
        except (VersionConflict, CommitInterrupted, BrokerRefused) as exc:
            self._drop_restored(chunks, done, f"restore stopped: {one_line(exc, 200)}")
            if isinstance(exc, VersionConflict):
                raise EntitiesMoved([writes[len(done)].entity]) from None
            if isinstance(exc, CommitInterrupted):
                raise RolloutStuck(
                    f"lost the brokers' answer while restoring rollout {self.id} ({one_line(exc.cause, 120)}); "
                    f"its record says what is left to undo: configctl rollout show {self.id}"
                ) from None
            raise
        for chunk in chunks:
            self.undo.pop(chunk.index, None)
        if finish:
            self._append(text, changes, owner=None)
            self._forget()
        else:
            self._append(text, changes)
        return done

    def _drop_restored(self, chunks: Sequence[UndoChunk], done: Sequence[Committed], why: str) -> None:
        back = {c.entity for c in done}
        for chunk in chunks:
            left = tuple(u for u in chunk.entries if u.entity not in back)
            if left:
                self.undo[chunk.index] = UndoChunk(chunk.index, chunk.wave, left)
            else:
                self.undo.pop(chunk.index, None)
        self._append(why, {})

    def write_batches(self, items: Sequence[Planned]) -> list[list[Planned]]:
        return restore_plan.write_batches(items, budget_bytes=BYTES_PER_STEP, max_writes=WRITES_PER_STEP)

    def restore_groups(self, chunks: Sequence[UndoChunk]) -> list[list[UndoChunk]]:
        return restore_plan.restore_groups(chunks, budget_bytes=BYTES_PER_STEP, max_writes=WRITES_PER_STEP)

    def finish(self, text: str, changes: dict[str, Any]) -> None:
        self.undo.clear()
        self._append(text, changes, owner=None)
        self._forget()

    def release(self, text: str, changes: dict[str, Any]) -> None:
        self._append(text, changes, owner=None)

    def restore_changes(
        self, entries: Sequence[Undo], *, force: bool = False
    ) -> tuple[list[Change], list[Entity]]:
        found = self.store.read_many([u.entity for u in entries], strict=False)
        nodes = [
            None if now.version == ABSENT else (encode_entity_config(now.config), now.version)
            for now in found
        ]
        return restore_plan.restore_changes(entries, nodes, force=force)

    # -- the one append -----------------------------------------------------------------------------

    def _append(
        self, text: str, fields: dict[str, Any], *, owner: dict[str, Any] | bool | None = True
    ) -> None:
        """The record's next version, appended and judged: TakenOver when another came first."""
        record = self.record.with_event(now_ms(), text, **fields)
        undo = sorted(self.undo.values(), key=lambda c: c.index)
        new = self.document.next(record, undo=undo, owner=owner)
        chain = self.topic.append(new).get(self.id)
        if not won(chain, new):
            current = chain.current if chain is not None else None
            raise TakenOver(current.record if current is not None else None)
        self.document = new
        self.record, self.version, self.owner = new.record, new.version, new.owner

    def _forget(self) -> None:
        chain = self.topic.chain(self.id)
        if chain is not None:
            self.topic.forget(chain)


__all__ = ["KRaftActiveRollout", "owner_alive", "owner_document"]
