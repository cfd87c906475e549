"""Rollout records in ZooKeeper: created with their claims, loaded back, and moved on one multi at a time.

ZooKeeper's implementation of :class:`configctl.store.Rollouts` (``store.rollouts``), written
through the config store's own multi (:meth:`configctl.zk.configstore.ConfigStore.commit` with
``extra`` nodes), within its size limits and by its version rule
(:func:`configctl.store.version_after`).

Every multi a rollout sends carries, with its entity writes, the record node set at the version
this process last saw. That one rule gives the guarantees docs/rollout.md promises:

* a write and the record of how to undo it land together or not at all (the ``undo-NNNN``
  chunk is created by the multi that writes its entities), so after a SIGKILL at any moment the
  record says exactly what to undo;
* two processes can never both move one rollout (``rollout abort`` from another terminal while
  the rollout runs, a second ``resume``): the second multi fails on the record's version and its
  process stops, having written nothing;
* entity nodes are version-checked as every configctl write is: a concurrent writer makes the
  rollout stop, never overwrite (:class:`~configctl.rollout.record.EntitiesMoved`).

A second rollout touching an entity an open rollout claims is refused when it is created: the
claim nodes (``/configctl/rollout-claims/<entity path>``) are created in the same multi as the
record, so of two racing rollouts exactly one gets them. A claim whose rollout's record cannot be
read is held too (fail closed: that rollout may have written the entity); ``rollout abort ID
--force`` finishes such a rollout from what can be read of it (:func:`salvage`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from configctl.entities import Entity, EntityType
from configctl.errors import (
    ConfigctlError,
    Conflict,
    InvalidInput,
    NotFound,
    RolloutStuck,
    ZooKeeperUnavailable,
    one_line,
)
from configctl.rollout import record as rec
from configctl.rollout.parsing import check_rollout_id, new_rollout_id
from configctl.rollout.record import (
    EntitiesMoved,
    Listed,
    Loaded,
    Planned,
    Record,
    TakenOver,
    Undo,
    UndoChunk,
)
from configctl.store import (
    ABSENT,
    Change,
    CommitInterrupted,
    Committed,
    NodeOp,
    Stored,
    VersionConflict,
    version_after,
)
from configctl.zk.configstore import CLEANED_TYPES, MAX_MULTI_BYTES, MAX_MULTI_OPS
from configctl.zk.session import ZkSession
from configctl.znodes import RolloutZNode, decode_entity_config, encode_entity_config

if TYPE_CHECKING:
    from configctl.zk.configstore import ConfigStore

BUDGET_BYTES = MAX_MULTI_BYTES - 100_000
"""Bytes of entity data one rollout multi may carry: the store's multi, less room for the record
node with its events, the undo chunk's own framing and the claims."""
MAX_OPS = MAX_MULTI_OPS - 100
"""Operations per rollout multi: the store's, less room for the record, undo and claim nodes."""
MAX_WRITES_PER_MULTI = MAX_OPS // 6
"""Entities per multi (each is up to six operations with its notification and history)."""
PLAN_CHUNK_BYTES = BUDGET_BYTES // 2
"""The largest ``plan-NNNN`` node: a plan of 100,000 topics is recorded in a few hundred of them."""
FINISHED_KEPT = 50
"""Finished rollouts whose records are kept for ``rollout list|show`` (older ones are removed)."""
SETTLE_PAUSE = 0.25


class Rollouts:
    """The rollout records beside one ZooKeeper config store (its :attr:`~ConfigStore.rollouts`)."""

    def __init__(self, store: ConfigStore) -> None:
        self.store = store
        self.session: ZkSession = store.session

    def record(self, rollout_id: str) -> tuple[Record, int] | None:
        return read_record(self.session, rollout_id)

    def load(self, rollout_id: str) -> Loaded:
        return load(self.session, rollout_id)

    def salvage(self, rollout_id: str) -> Loaded:
        return salvage(self.session, rollout_id)

    def listing(self) -> list[Listed]:
        return listing(self.session)

    def settled(self, rollout_id: str, current: Record | None, timeout: float = 15.0) -> Record | None:
        return settled(self.session, rollout_id, current, timeout)

    def open(
        self,
        planned: Sequence[Planned],
        *,
        kind: str,
        reason: str,
        options: rec.Options,
        waves: int,
        step: dict[str, Any],
        summary: str,
        entities: tuple[str, ...] = (),
        canary: rec.CanaryPlan | None = None,
    ) -> Active:
        return open_rollout(
            self.store,
            planned,
            kind=kind,
            reason=reason,
            options=options,
            waves=waves,
            step=step,
            summary=summary,
            entities=entities,
            canary=canary,
        )

    def resume(self, loaded: Loaded) -> Active:
        return Active(self.store, loaded)

    def watch(self, rollout_id: str, on_version: Callable[[int | None], bool]) -> None:
        """Call ``on_version`` with the record's version (None: removed) now and at every change,
        until it returns False (a ZooKeeper data watch the caller does not wait for)."""

        def on_data(data: bytes | None, stat: Any, event: Any = None) -> bool:
            return on_version(None if stat is None else stat.version)

        self.session.watch_data(RolloutZNode.path(rollout_id), on_data)


def now_ms() -> int:
    return int(time.time() * 1000)


def owner_document(identity: str) -> bytes:
    return RolloutZNode.encode(
        {"pid": os.getpid(), "host": socket.gethostname(), "identity": identity, "started_ms": now_ms()}
    )


# -- reading ----------------------------------------------------------------------------------------


def read_record(session: ZkSession, rollout_id: str) -> tuple[Record, int] | None:
    found = session.get(RolloutZNode.path(rollout_id))
    if found is None:
        return None
    return Record.decode(found[0]), found[1].version


def settled(
    session: ZkSession, rollout_id: str, current: Record | None, timeout: float = 15.0
) -> Record | None:
    """The record once an abort someone else started has finished (or ``timeout`` passed)."""
    deadline = time.monotonic() + timeout
    while current is not None and current.state == rec.ABORTING and time.monotonic() < deadline:
        time.sleep(SETTLE_PAUSE)
        with contextlib.suppress(InvalidInput):
            found = read_record(session, rollout_id)
            current = found[0] if found else None
    return current


def unreadable(rollout_id: str, problem: str) -> RolloutStuck:
    """The one-line error for a rollout that cannot be read whole, and the one command that ends it."""
    return RolloutStuck(
        f"rollout {rollout_id} cannot be read ({one_line(problem, 200)}); it keeps every entity it "
        f"claims until it is finished: configctl rollout abort {rollout_id} --force restores what its "
        "undo records hold and ends it, naming what it could not restore"
    )


def load(session: ZkSession, rollout_id: str) -> Loaded:
    """The record, its plan, what is left to undo, and who runs it (NotFound when there is none).

    A part that cannot be read makes the whole rollout unreadable (:func:`unreadable`, exit 12):
    it is never run on, nor undone, from half of what it recorded.
    """
    node = session.get(RolloutZNode.path(rollout_id))
    if node is None:
        raise NotFound(f"no rollout {rollout_id} (configctl rollout list shows the known ones)")
    try:
        record = Record.decode(node[0])
        names, nodes, owner = _children(session, rollout_id)
        planned = [p for name in names if _is_plan(name) and nodes[name] for p in _plan(nodes[name])]
        undo = [rec.decode_undo_chunk(_undo_index(n), nodes[n][0]) for n in names if _is_undo(n) and nodes[n]]
        rec.check_plan(record, planned)
    except InvalidInput as exc:
        raise unreadable(rollout_id, exc.message) from None
    undo.sort(key=lambda c: c.index)
    return Loaded(record, node[1].version, planned, undo, owner, names)


def salvage(session: ZkSession, rollout_id: str) -> Loaded:
    """What can be read of a rollout, and what could not (``problems``): for ``rollout abort --force``.

    Unreadable fields of the record take defaults that keep it open (:meth:`Record.salvage`); an
    unreadable plan chunk is left out (the claims are found by their holder instead:
    ``claimed``); an unreadable undo chunk gives what entries it can (:meth:`UndoChunk.salvage`),
    and one with none is listed in ``unreadable``.
    """
    node = session.get(RolloutZNode.path(rollout_id))
    if node is None:
        raise NotFound(f"no rollout {rollout_id} (configctl rollout list shows the known ones)")
    record, problems = Record.salvage(rollout_id, node[0])
    problems = [f"record field {name}" for name in problems]
    names, nodes, owner = _children(session, rollout_id)
    planned: list[Planned] = []
    undo: list[UndoChunk] = []
    broken: list[str] = []
    lost: list[str] = []
    for name in names:
        found = nodes[name]
        if found is None:
            continue
        try:
            if _is_plan(name):
                planned.extend(_plan(found))
            elif _is_undo(name):
                undo.append(rec.decode_undo_chunk(_undo_index(name), found[0]))
        except InvalidInput:
            if _is_undo(name):
                chunk, missing = UndoChunk.salvage(_undo_index(name), found[0])
                lost += missing
                problems += [f"{name}: {item}" for item in missing]
                if chunk.entries:
                    undo.append(chunk)  # restored, and removed, as any undo chunk
                else:
                    broken.append(name)  # nothing in it to restore: removed when the rollout ends
            else:
                problems.append(f"plan chunk {name}")
    undo.sort(key=lambda c: c.index)
    try:
        rec.check_plan(record, planned)
    except InvalidInput as exc:
        problems.append(exc.message)
    claimed = claimed_by(session, rollout_id) if problems else []
    return Loaded(record, node[1].version, planned, undo, owner, names, problems, claimed, broken, lost)


def _children(
    session: ZkSession, rollout_id: str
) -> tuple[list[str], dict[str, tuple[bytes, Any] | None], dict[str, Any] | None]:
    """A rollout's children by name (read in one go), and its owner's document (None: no process)."""
    names = session.children(RolloutZNode.path(rollout_id))
    paths = [f"{RolloutZNode.path(rollout_id)}/{n}" for n in names]
    nodes = dict(zip(names, session.get_many(paths), strict=True))
    owner = None
    found = nodes.get(RolloutZNode.OWNER)
    if found is not None:
        try:
            owner = RolloutZNode.decode(found[0])
        except InvalidInput:
            owner = {}
    return names, nodes, owner


def _is_plan(name: str) -> bool:
    return name.startswith(RolloutZNode.PLAN_PREFIX)


def _is_undo(name: str) -> bool:
    return name.startswith(RolloutZNode.UNDO_PREFIX) and name[len(RolloutZNode.UNDO_PREFIX) :].isdigit()


def _undo_index(name: str) -> int:
    return int(name[len(RolloutZNode.UNDO_PREFIX) :])


def _plan(node: tuple[bytes, Any]) -> list[Planned]:
    return rec.decode_plan_chunk(node[0])


def claimed_by(session: ZkSession, rollout_id: str) -> list[str]:
    """Every entity path whose claim names ``rollout_id`` (all claims read: for a rollout whose
    record or plan cannot say which entities it claims)."""
    names = session.children(RolloutZNode.CLAIMS) if session.exists(RolloutZNode.CLAIMS) else []
    paths = [RolloutZNode.claimed_path(n) for n in names]
    return [path for path, (holder, _) in holders(session, paths).items() if holder == rollout_id]


def listing(session: ZkSession) -> list[Listed]:
    """Every rollout with a record, newest first."""
    ids = [n for n in session.children(RolloutZNode.ROOT) if _is_id(n)]
    ids.sort(reverse=True)
    records = session.get_many([RolloutZNode.path(i) for i in ids])
    owners = session.get_many([RolloutZNode.owner(i) for i in ids])
    result = []
    for rollout_id, found, owner in zip(ids, records, owners, strict=True):
        if found is None:
            continue
        owner_doc = None
        if owner is not None:
            try:
                owner_doc = RolloutZNode.decode(owner[0])
            except InvalidInput:
                owner_doc = {}
        try:
            result.append(Listed(rollout_id, Record.decode(found[0]), owner_doc))
        except InvalidInput as exc:
            result.append(Listed(rollout_id, None, owner_doc, str(exc)))
    return result


def _is_id(name: str) -> bool:
    try:
        check_rollout_id(name)
        return True
    except InvalidInput:
        return False


def holders(session: ZkSession, entity_paths: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Which rollout claims each entity path (holder id and the claim node's version)."""
    found = session.get_many([RolloutZNode.claim(p) for p in entity_paths])
    result = {}
    for path, node in zip(entity_paths, found, strict=True):
        if node is None:
            continue
        try:
            holder = str(RolloutZNode.decode(node[0]).get("rollout") or "")
        except InvalidInput:
            holder = ""
        result[path] = (holder, node[1].version)
    return result


def open_holders(session: ZkSession, entity_paths: Sequence[str]) -> tuple[dict[str, str], list[NodeOp]]:
    """Who holds any of ``entity_paths`` (by path: how :func:`busy_message` names the holder), and
    deletes of stale claims (their rollout finished or is gone), to send with the new claims.

    A rollout whose record cannot be read holds its claims (fail closed: it may have written
    those entities, and only ``rollout abort --force`` can tell what to give back).
    """
    claims = holders(session, entity_paths)
    holding: dict[str, str | None] = {}
    busy: dict[str, str] = {}
    stale: list[NodeOp] = []
    for path, (holder, version) in claims.items():
        if holder not in holding:
            holding[holder] = _holding(session, holder)
        if holding[holder] is not None:
            busy[path] = str(holding[holder])
        else:
            stale.append(NodeOp("delete", RolloutZNode.claim(path), version=version))
    return busy, stale


def _holding(session: ZkSession, holder: str) -> str | None:
    """How an open rollout ``holder`` is named in a refusal (with the command that finishes it);
    None when it does not hold its claims any more (finished, gone, or not a rollout id)."""
    node = session.get(RolloutZNode.path(holder)) if _is_id(holder) else None
    if node is None:
        return None
    try:
        record = Record.decode(node[0])
    except InvalidInput as exc:
        salvaged, problems = Record.salvage(holder, node[0])
        if "state" not in problems and not salvaged.open:
            return None  # what can be read of it says it ended: it holds nothing any more
        return (
            f"rollout {holder}, whose record cannot be read ({one_line(exc.message, 120)}); "
            f"finish it first: configctl rollout abort {holder} --force"
        )
    if not record.open:
        return None
    return (
        f"open rollout {record.id} ({record.kind}, {record.state}, by {record.identity}); "
        f"finish it first: configctl rollout show {record.id}"
    )


# -- creating ---------------------------------------------------------------------------------------


def busy_message(busy: dict[str, str]) -> str:
    first_path, holder = next(iter(busy.items()))
    more = f" (and {len(busy) - 1} more of its entities)" if len(busy) > 1 else ""
    return f"{first_path}{more} is part of {holder}; nothing was written"


def open_rollout(
    store: ConfigStore,
    planned: Sequence[Planned],
    *,
    kind: str,
    reason: str,
    options: rec.Options,
    waves: int,
    step: dict[str, Any],
    summary: str,
    entities: tuple[str, ...] = (),
    canary: rec.CanaryPlan | None = None,
) -> Active:
    """A new rollout's record, stamped (id, owner, now, the fleet's change number) and created.

    One home for what every kind of rollout records when it opens, so a canary and a wave
    rollout cannot disagree about it; ``summary`` is the text of its first event.
    """
    now = now_ms()
    record = Record(
        id=new_rollout_id(),
        kind=kind,
        state=rec.RUNNING,
        created_ms=now,
        updated_ms=now,
        identity=store.identity,
        reason=reason,
        options=options,
        waves=waves,
        entities=entities,
        entity_count=len(entities) + len(planned),
        plan_chunks=0,
        baseline_change=store.latest_change_number(),
        step=step,
        canary=canary,
    )
    return create(store, record.with_event(now, f"created by {store.identity}: {summary}"), planned)


def create(store: ConfigStore, record: Record, planned: Sequence[Planned]) -> Active:
    """Record a new rollout (plan, claims, owner) before anything is written; refuse if an open
    rollout claims one of its entities (:class:`Conflict`, nothing written)."""
    session = store.session
    session.ensure_path(RolloutZNode.ROOT)
    session.ensure_path(RolloutZNode.CLAIMS)
    paths = list(dict.fromkeys([*record.entities, *(p.entity.path for p in planned)]))
    busy, stale = open_holders(session, paths)
    if busy:
        raise Conflict(busy_message(busy))
    chunks = _plan_chunks(planned)
    record = replace(record, plan_chunks=len(chunks), state=rec.RUNNING)
    claim = RolloutZNode.encode({"rollout": record.id})
    ops: list[NodeOp] = [
        NodeOp("create", RolloutZNode.owner(record.id), owner_document(store.identity), ephemeral=True),
        *stale,
        *(NodeOp("create", RolloutZNode.claim(p), claim) for p in paths),
        *(NodeOp("create", RolloutZNode.plan(record.id, i), data) for i, data in enumerate(chunks)),
    ]
    groups = _op_groups(ops)
    # A plan too large for one multi is recorded in several: the record says "preparing" until the
    # last one lands, and a rollout left preparing has written nothing (rollout abort clears it).
    head = record if len(groups) == 1 else replace(record, state=rec.PREPARING)
    sent: list[NodeOp] = []
    try:
        for number, group in enumerate(groups):
            batch = list(group)
            if number == 0:
                batch.insert(0, NodeOp("create", RolloutZNode.path(record.id), head.encode()))
            if number == len(groups) - 1 and len(groups) > 1:
                batch.append(NodeOp("set", RolloutZNode.path(record.id), record.encode(), version=0))
            store.commit([], extra=batch)
            sent.extend(batch)
    except VersionConflict:
        _forget(session, sent)
        busy, _ = open_holders(session, paths)
        if busy:
            raise Conflict(busy_message(busy)) from None
        raise Conflict(
            "another rollout claimed one of these entities at the same moment; nothing was written "
            "(configctl rollout list)"
        ) from None
    except CommitInterrupted as exc:
        raise exc.error from None
    return Active(store, Loaded(record, 0 if len(groups) == 1 else 1, list(planned), [], {}))


def _forget(session: ZkSession, sent: Sequence[NodeOp]) -> None:
    """Undo the creation multis already sent when a later one failed (best effort; a record left in
    ``preparing`` is finished by ``rollout abort``)."""
    paths = [op.path for op in reversed(sent) if op.action == "create"]
    with contextlib.suppress(ConfigctlError):
        session.delete_nodes(paths)


def _plan_chunks(planned: Sequence[Planned]) -> list[bytes]:
    chunks: list[bytes] = []
    current: list[Planned] = []
    size = 0
    for item in planned:
        cost = len(json.dumps(item.to_json(), ensure_ascii=False).encode()) + 2
        if current and size + cost > PLAN_CHUNK_BYTES:
            chunks.append(rec.plan_chunk_json(current))
            current, size = [], 0
        current.append(item)
        size += cost
    if current or not chunks:
        chunks.append(rec.plan_chunk_json(current))
    return chunks


def _op_groups(ops: Sequence[NodeOp]) -> list[list[NodeOp]]:
    groups: list[list[NodeOp]] = [[]]
    size = 0
    for op in ops:
        cost = len(op.data) + len(op.path) + 64
        if groups[-1] and (len(groups[-1]) >= MAX_OPS or size + cost > BUDGET_BYTES):
            groups.append([])
            size = 0
        groups[-1].append(op)
        size += cost
    return groups


# -- a rollout this process moves on ----------------------------------------------------------------


def write_cost(target: dict[str, str], previous: bytes | None) -> int:
    """Bytes a write costs in its multi (node, history record, undo entry) and later in its undo's."""
    return 2 * len(encode_entity_config(target)) + 3 * len(previous or b"") + 1000


class Active:
    """A rollout this process works on: every change to it goes through here, version-checked."""

    def __init__(self, store: ConfigStore, loaded: Loaded) -> None:
        self.store = store
        self.session = store.session
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
        cost = sum(write_cost(p.target, n[0] if n else None) for p, n in zip(items, found, strict=True))
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
            raise EntitiesMoved(
                moved,
                f"{', '.join(e.label for e in moved[:5])} changed since the rollout wrote "
                f"{'it' if len(moved) == 1 else 'them'}: restoring would overwrite that change",
            )
        phases = _restore_phases(restores)
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
        within :data:`BUDGET_BYTES` and :data:`MAX_WRITES_PER_MULTI`."""
        result: list[list[Planned]] = []
        batch: list[Planned] = []
        size = 0
        for item in items:
            cost = write_cost(item.target, None)
            if batch and (size + cost > BUDGET_BYTES or len(batch) >= MAX_WRITES_PER_MULTI):
                result.append(batch)
                batch, size = [], 0
            batch.append(item)
            size += cost
        if batch:
            result.append(batch)
        return result

    def restore_groups(self, chunks: Sequence[UndoChunk]) -> list[list[UndoChunk]]:
        """Undo chunks (in the order they go back) grouped into the multis :meth:`restore` sends,
        each within :data:`BUDGET_BYTES` and :data:`MAX_WRITES_PER_MULTI`."""
        groups: list[list[UndoChunk]] = []
        size = count = 0
        for chunk in chunks:
            cost = sum(2 * len(u.previous or b"") + 1000 for u in chunk.entries)
            if groups and size + cost <= BUDGET_BYTES and count + len(chunk.entries) <= MAX_WRITES_PER_MULTI:
                groups[-1].append(chunk)
                size += cost
                count += len(chunk.entries)
            else:
                groups.append([chunk])
                size, count = cost, len(chunk.entries)
        return groups

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
        """The writes that give ``entries`` their previous bytes back, and the entities that moved since."""
        found = self.session.get_many([u.entity.znode for u in entries])
        changes: list[Change] = []
        moved: list[Entity] = []
        for undo, node in zip(entries, found, strict=True):
            current = None if node is None else node[1].version
            if not undo.still_ours(current) and not force:
                moved.append(undo.entity)
                continue
            try:
                now = decode_entity_config(node[0]) if node is not None else {}
            except InvalidInput:
                now = {}
            if undo.previous is None:
                if node is None:
                    continue  # absent before, absent now
                changes.append(Change(undo.entity, {}, current or 0, previous=now, remove_node=True))
                continue
            try:
                config = decode_entity_config(undo.previous)
            except InvalidInput:
                config = {}
            expected = -1 if current is None else current
            changes.append(Change(undo.entity, config, expected, previous=now, exact=undo.previous))
        return _users_last(changes), moved

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


def _users_last(changes: list[Change]) -> list[Change]:
    """Clients before users (a user's node can only go once its clients' have), otherwise as given."""
    return sorted(changes, key=lambda c: c.entity.client is None)


def _restore_phases(changes: Sequence[Change]) -> list[list[Change]]:
    """The multis an undo needs, in order: users re-created before their clients (a client's write
    creates its user's node as a parent), users removed after their clients (a node with children
    cannot be deleted); everything else in the middle one."""
    clients = {c.entity.name for c in changes if c.entity.client is not None}
    users = [c for c in changes if c.entity.type is EntityType.USERS and c.entity.client is None]
    early = [c for c in users if c.entity.name in clients and c.expected_version < 0]
    late = [c for c in users if c.entity.name in clients and c.remove_node]
    middle = [c for c in changes if c not in early and c not in late]
    return [phase for phase in (early, middle, late) if phase] or [[]]


def trim_finished(session: ZkSession, keep: int = FINISHED_KEPT) -> None:
    """Remove the oldest finished rollouts' records beyond ``keep`` (with any children left)."""
    finished = [item for item in listing(session) if item.record is not None and not item.record.open]
    for item in finished[keep:]:
        path = RolloutZNode.path(item.id)
        children = [f"{path}/{c}" for c in session.children(path)]
        session.delete_nodes([*children, path])


def planned_entities(items: Iterable[Planned]) -> list[str]:
    return [p.entity.path for p in items]
