"""A rollout this process works on in ZooKeeper: every change to it one multi, version-checked on its record.

ZooKeeper's :class:`configctl.store.ActiveRollout`. Every multi a rollout sends goes through the
store's own commit (:meth:`configctl.store.ConfigStore.commit` with ``extra`` nodes), within its
size limits (:mod:`configctl.zk.multisize`) and by its version rule
(:func:`configctl.store.version_after`), and carries, with its entity writes, the record node set
at the version this process last saw. That one rule gives the guarantees docs/rollout.md promises:

* a write and the record of how to undo it land together or not at all (the ``undo-NNNN``
  chunk is created by the multi that writes its entities), so after a SIGKILL at any moment the
  record says exactly what to undo;
* two processes can never both move one rollout (``rollout abort`` from another terminal while
  the rollout runs, a second ``resume``): the second multi fails on the record's version and its
  process stops, having written nothing;
* entity nodes are version-checked as every configctl write is: a concurrent writer makes the
  rollout stop, never overwrite (:class:`~configctl.rollout.record.EntitiesMoved`).

What to write in which multi, and how an undo goes back, is decided without I/O in
:mod:`configctl.rollout.restore`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Sequence
from typing import Any

from configctl.entities import Entity
from configctl.errors import ConfigctlError, Conflict, InvalidInput, RolloutStuck, ZooKeeperUnavailable
from configctl.rollout import record as rec
from configctl.rollout import restore as restore_plan
from configctl.rollout.record import EntitiesMoved, Loaded, Planned, Record, TakenOver, Undo, UndoChunk
from configctl.store import (
    ABSENT,
    Change,
    CommitInterrupted,
    Committed,
    ConfigStore,
    NodeOp,
    Stored,
    VersionConflict,
    version_after,
)
from configctl.zk.multisize import BUDGET_BYTES, MAX_OPS, MAX_WRITES_PER_MULTI
from configctl.zk.quotacleanup import CLEANED_TYPES
from configctl.zk.rolloutclaims import holders
from configctl.zk.rolloutrecords import SETTLE_PAUSE, read_record, trim_finished
from configctl.zk.session import ZkSession
from configctl.znodes import RolloutZNode, decode_entity_config


def now_ms() -> int:
    return int(time.time() * 1000)


def owner_document(identity: str) -> bytes:
    """The ``owner`` node's document: which process runs the rollout (ephemeral: it goes with it)."""
    return RolloutZNode.encode(
        {"pid": os.getpid(), "host": socket.gethostname(), "identity": identity, "started_ms": now_ms()}
    )


class ZooKeeperActiveRollout:
    """A rollout this process works on: every change to it goes through here, version-checked.

    ``store`` is the store its multis go through (its ``writes`` may be the Admin API's);
    ``session`` is the ZooKeeper session its record, undo chunks and claims are read through.
    """

    def __init__(self, store: ConfigStore, session: ZkSession, loaded: Loaded) -> None:
        self.store = store
        self.session = session
        self.record = loaded.record
        self.version = loaded.version
        self.planned = list(loaded.planned)
        self.undo: dict[int, UndoChunk] = {c.index: c for c in loaded.undo}
        self.owner = loaded.owner
        self.claimed = list(loaded.claimed)
        self.unreadable = [f"{self.path}/{name}" for name in loaded.unreadable]
        """Undo chunks with nothing readable in them (salvaged): removed when the rollout ends."""

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def path(self) -> str:
        return RolloutZNode.path(self.id)

    def current(self, entity: Entity) -> Stored:
        """``entity`` as it is now (one read, retried while the connection recovers); a node that
        is not a Kafka config comes back with its ``problem``."""
        found = self.session.get(entity.znode)
        if found is None:
            return Stored(entity, {}, ABSENT)
        try:
            return Stored(entity, decode_entity_config(found[0]), found[1].version)
        except InvalidInput as exc:
            return Stored(entity, {}, found[1].version, problem=str(exc))

    def entity_paths(self) -> list[str]:
        """Every entity the rollout touches (what it claims)."""
        return list(
            dict.fromkeys([*self.record.entities, *(p.entity.path for p in self.planned), *self.claimed])
        )

    def written(self) -> dict[Entity, Undo]:
        """Every entity written and not undone yet, with its undo."""
        return {u.entity: u for chunk in self.undo.values() for u in chunk.entries}

    # -- the record alone ---------------------------------------------------------------------------

    def note(self, text: str, **changes: Any) -> None:
        """Record an event (and any field changes): version-checked, so a takeover is noticed here."""
        self._commit([], text, changes)

    def take_over(self, text: str) -> None:
        """Become the process running this rollout: create the owner node (fails while another lives)."""
        extra = [
            NodeOp("create", RolloutZNode.owner(self.id), owner_document(self.store.identity), ephemeral=True)
        ]
        try:
            self._commit([], text, {"state": rec.RUNNING, "failure": None}, extra=extra)
        except TakenOver:
            raise
        except EntitiesMoved:
            raise Conflict(
                f"rollout {self.id} is being run by another process right now (configctl rollout show {self.id})"
            ) from None

    # -- writes -------------------------------------------------------------------------------------

    def write(
        self, items: Sequence[Planned], *, reason: str, text: str, step: dict[str, Any]
    ) -> list[Committed]:
        """Write planned entities in ONE multi with their undo chunk; EntitiesMoved if any moved since the plan."""
        entities = [p.entity for p in items]
        found = self.session.get_many([e.znode for e in entities])
        moved = [
            p.entity for p, node in zip(items, found, strict=True) if _version(node) != p.expected_version
        ]
        if moved:
            raise EntitiesMoved(moved)
        cost = sum(
            restore_plan.write_cost(p.target, n[0] if n else None) for p, n in zip(items, found, strict=True)
        )
        if cost > BUDGET_BYTES and len(items) > 1:
            # the previous configs are larger than the plan could tell: two smaller multis
            half = len(items) // 2
            first = self.write(items[:half], reason=reason, text=text, step=step)
            return first + self.write(items[half:], reason=reason, text=text, step=step)
        changes, undos = [], []
        for item, node in zip(items, found, strict=True):
            previous = decode_entity_config(node[0]) if node is not None else {}
            changes.append(Change(item.entity, dict(item.target), item.expected_version, previous=previous))
            undos.append(
                Undo(item.entity, node[0] if node is not None else None, _version(node), _written(item))
            )
        chunk = UndoChunk(self.record.undo_chunks, int(step.get("wave") or 1), tuple(undos))
        extra = [
            NodeOp("create", RolloutZNode.undo(self.id, chunk.index), RolloutZNode.encode(chunk.to_json()))
        ]
        committed = self._commit(
            changes, text, {"undo_chunks": chunk.index + 1, "step": step}, extra=extra, reason=reason
        )
        self.undo[chunk.index] = chunk
        return committed

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
        """Restore every entity of ``chunks`` to its exact previous bytes, deleting the chunks.

        One multi, except where ZooKeeper's tree needs an order (a user node re-created before
        its clients, or removed after them): each multi then also rewrites the chunks to what is
        left, so the record stays exact at every moment. ``before`` are other changes for the
        (last) multi, e.g. a canary's promotion; ``finish`` also ends the rollout (owner, claims
        and plan removed). EntitiesMoved if an entity changed since the rollout wrote it, unless
        ``force``; nothing is written then.
        """
        entries = [u for chunk in chunks for u in reversed(chunk.entries)]  # newest first
        restores, moved = self.restore_changes(entries, force=force)
        if moved:
            raise EntitiesMoved.since_written(moved)
        phases = restore_plan.restore_phases(restores)
        committed: list[Committed] = []
        left = {chunk.index: list(chunk.entries) for chunk in chunks}
        for number, phase in enumerate(phases):
            last = number == len(phases) - 1
            done = {c.entity for c in phase}
            extra: list[NodeOp] = []
            for chunk in chunks:
                pending = left[chunk.index]
                if not pending:
                    continue  # deleted by an earlier phase
                remaining = [u for u in pending if u.entity not in done]
                if last or not remaining:
                    extra.append(NodeOp("delete", RolloutZNode.undo(self.id, chunk.index)))
                    left[chunk.index] = []
                elif len(remaining) != len(pending):
                    rest = UndoChunk(chunk.index, chunk.wave, tuple(remaining))
                    extra.append(
                        NodeOp(
                            "set",
                            RolloutZNode.undo(self.id, chunk.index),
                            RolloutZNode.encode(rest.to_json()),
                        )
                    )
                    left[chunk.index] = remaining
            leftover: list[str] = []
            if last and finish:
                ops, leftover = self._finish_ops(len(before) + len(phase) + len(extra))
                extra += ops
            writes = [*before, *phase] if last else list(phase)
            committed += self._commit(
                writes,
                text if last else f"{text} (part {number + 1})",
                changes if last else {},
                extra=extra,
                reason=reason,
            )
            for chunk in chunks:
                if not left[chunk.index]:
                    self.undo.pop(chunk.index, None)
                else:
                    self.undo[chunk.index] = UndoChunk(chunk.index, chunk.wave, tuple(left[chunk.index]))
            if last and finish:
                self._after_finish(leftover)
        return committed

    def write_batches(self, items: Sequence[Planned]) -> list[list[Planned]]:
        """``items`` (in the order they must go out) cut into the multis :meth:`write` sends, each
        within :data:`~configctl.zk.multisize.BUDGET_BYTES` and
        :data:`~configctl.zk.multisize.MAX_WRITES_PER_MULTI`."""
        return restore_plan.write_batches(items, budget_bytes=BUDGET_BYTES, max_writes=MAX_WRITES_PER_MULTI)

    def restore_groups(self, chunks: Sequence[UndoChunk]) -> list[list[UndoChunk]]:
        """Undo chunks (in the order they go back) grouped into the multis :meth:`restore` sends,
        each within :data:`~configctl.zk.multisize.BUDGET_BYTES` and
        :data:`~configctl.zk.multisize.MAX_WRITES_PER_MULTI`."""
        return restore_plan.restore_groups(chunks, budget_bytes=BUDGET_BYTES, max_writes=MAX_WRITES_PER_MULTI)

    def finish(self, text: str, changes: dict[str, Any]) -> None:
        """End the rollout without writing entities (waves completed, an abort with nothing to undo)."""
        extra = [NodeOp("delete", RolloutZNode.undo(self.id, c)) for c in self.undo]
        ops, leftover = self._finish_ops(len(extra))
        self._commit([], text, changes, extra=extra + ops)
        self.undo.clear()
        self._after_finish(leftover)

    def release(self, text: str, changes: dict[str, Any]) -> None:
        """Leave the rollout open for ``rollout abort|resume`` (record updated, owner node removed)."""
        owner = RolloutZNode.owner(self.id)
        extra = [NodeOp("delete", owner)] if self.session.exists(owner) is not None else []
        self._commit([], text, changes, extra=extra)

    def restore_changes(
        self, entries: Sequence[Undo], *, force: bool = False
    ) -> tuple[list[Change], list[Entity]]:
        """The writes that give ``entries`` their previous bytes back, and the entities that moved
        since (:func:`configctl.rollout.restore.restore_changes`, on the nodes as read now)."""
        found = self.session.get_many([u.entity.znode for u in entries])
        nodes = [None if node is None else (node[0], node[1].version) for node in found]
        return restore_plan.restore_changes(entries, nodes, force=force)

    # -- the one multi ------------------------------------------------------------------------------

    def _commit(
        self,
        changes: Sequence[Change],
        text: str,
        fields: dict[str, Any],
        *,
        extra: Sequence[NodeOp] = (),
        reason: str = "",
    ) -> list[Committed]:
        new = self.record.with_event(now_ms(), text, **fields)
        data = new.encode()
        ops = [*extra, NodeOp("set", self.path, data, version=self.version)]
        try:
            committed = self.store.commit(changes, reason=reason, extra=ops)
        except VersionConflict:
            raise self._diagnose(changes) from None
        except CommitInterrupted as exc:
            committed = self._settle(exc, data)
        self.record, self.version = new, self.version + 1
        return committed

    def _diagnose(self, changes: Sequence[Change]) -> Exception:
        try:
            found = read_record(self.session, self.id)
        except InvalidInput:
            found = None
        if found is None or found[1] != self.version:
            return TakenOver(found[0] if found else None)
        nodes = self.session.get_many([c.entity.znode for c in changes])
        moved = [
            c.entity for c, node in zip(changes, nodes, strict=True) if _version(node) != c.expected_version
        ]
        return EntitiesMoved(moved)

    def _settle(self, exc: CommitInterrupted, data: bytes) -> list[Committed]:
        """The connection went with the multi in flight: the record says whether it landed."""
        deadline = time.monotonic() + self.session.timeout
        while True:
            try:
                found = self.session.get(self.path)
                break
            except ZooKeeperUnavailable:
                if time.monotonic() >= deadline:
                    raise RolloutStuck(
                        f"lost the connection to ZooKeeper in the middle of rollout {self.id}; whether its last "
                        f"step landed is unknown: configctl rollout show {self.id}, then abort or resume it"
                    ) from None
                time.sleep(SETTLE_PAUSE)
        if found is not None and found[0] == data:
            return [Committed(c.entity, version_after(c.expected_version), None) for c in exc.unknown]
        if found is not None and found[1].version == self.version:
            raise exc.error
        try:
            raise TakenOver(Record.decode(found[0]) if found else None)
        except InvalidInput:
            raise TakenOver(None) from None

    def _finish_ops(self, used: int) -> tuple[list[NodeOp], list[str]]:
        """Deletes that end a rollout (owner, claims, plan chunks): as many as fit in the multi, and the rest."""
        # the children there really are: a rollout that died while recording its plan has fewer chunks
        paths = [
            f"{self.path}/{name}"
            for name in self.session.children(self.path)
            if name == RolloutZNode.OWNER or name.startswith(RolloutZNode.PLAN_PREFIX)
        ]
        paths += self.unreadable
        claims = holders(self.session, self.entity_paths())
        paths += [RolloutZNode.claim(p) for p, (holder, _) in claims.items() if holder == self.id]
        room = max(0, MAX_OPS - used - 1)
        return [NodeOp("delete", p) for p in paths[:room]], paths[room:]

    def _after_finish(self, leftover: Sequence[str]) -> None:
        with contextlib.suppress(ConfigctlError):
            self.session.delete_nodes(leftover)
            trim_finished(self.session)


def _version(node: Any) -> int:
    return ABSENT if node is None else node[1].version


def _written(item: Planned) -> int:
    """The version the write leaves the node at; -1 where Kafka's rule removes an emptied quota node."""
    if item.expected_version >= 0 and not item.target and item.entity.type in CLEANED_TYPES:
        return ABSENT
    return version_after(item.expected_version)
