"""A new rollout recorded in ZooKeeper before anything is written: its record, plan, claims and owner.

Every kind of rollout opens here (:func:`open_rollout`), so a canary and a wave rollout cannot
disagree about what is recorded. The claims on its entities (:mod:`configctl.zk.rolloutclaims`)
are created in the same multi as the record, so of two racing rollouts exactly one gets them and
the other is refused (:class:`Conflict`, nothing written). A plan too large for one multi is
recorded in several, the record saying ``preparing`` until the last one lands.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from configctl.errors import ConfigctlError, Conflict
from configctl.rollout import record as rec
from configctl.rollout.opening import busy_message, new_record
from configctl.rollout.record import Loaded, Planned, Record
from configctl.store import CommitInterrupted, ConfigStore, NodeOp, VersionConflict
from configctl.zk.activerollout import ZooKeeperActiveRollout, owner_document
from configctl.zk.multisize import BUDGET_BYTES, MAX_OPS, PLAN_CHUNK_BYTES
from configctl.zk.rolloutclaims import open_holders
from configctl.zk.session import ZkSession
from configctl.znodes import RolloutZNode


def open_rollout(
    store: ConfigStore,
    session: ZkSession,
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
) -> ZooKeeperActiveRollout:
    """A new rollout's record, stamped (id, owner, now, the fleet's change number) and created.

    One home for what every kind of rollout records when it opens, so a canary and a wave
    rollout cannot disagree about it; ``summary`` is the text of its first event.
    """
    record = new_record(
        planned,
        identity=store.identity,
        kind=kind,
        reason=reason,
        options=options,
        waves=waves,
        step=step,
        summary=summary,
        entities=entities,
        canary=canary,
        baseline_change=store.latest_change_number(),
    )
    return create(store, session, record, planned)


def create(
    store: ConfigStore, session: ZkSession, record: Record, planned: Sequence[Planned]
) -> ZooKeeperActiveRollout:
    """Record a new rollout (plan, claims, owner) before anything is written, through ``store``'s
    multi; refuse if an open rollout claims one of its entities (:class:`Conflict`, nothing written)."""
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
    return ZooKeeperActiveRollout(
        store, session, Loaded(record, 0 if len(groups) == 1 else 1, list(planned), [], {})
    )


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
