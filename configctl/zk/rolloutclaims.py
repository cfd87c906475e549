"""Which rollout claims an entity: the claim nodes, who holds them, and the refusal that names the holder.

A second rollout touching an entity an open rollout claims is refused when it is created: the
claim nodes (``/configctl/rollout-claims/<entity path>``) are created in the same multi as the
record (:mod:`configctl.zk.rolloutcreate`), so of two racing rollouts exactly one gets them. A
claim whose rollout finished or is gone is stale, and deleted with the new claims; a claim whose
rollout's record cannot be read is held (fail closed: that rollout may have written the entity;
``rollout abort ID --force`` finishes it).
"""

from __future__ import annotations

from collections.abc import Sequence

from configctl.errors import InvalidInput
from configctl.rollout.opening import holder_text, unreadable_holder_text
from configctl.rollout.parsing import is_rollout_id
from configctl.rollout.record import Record
from configctl.store import NodeOp
from configctl.zk.session import ZkSession
from configctl.znodes import RolloutZNode


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


def claimed_by(session: ZkSession, rollout_id: str) -> list[str]:
    """Every entity path whose claim names ``rollout_id`` (all claims read: for a rollout whose
    record or plan cannot say which entities it claims)."""
    names = session.children(RolloutZNode.CLAIMS) if session.exists(RolloutZNode.CLAIMS) else []
    paths = [RolloutZNode.claimed_path(n) for n in names]
    return [path for path, (holder, _) in holders(session, paths).items() if holder == rollout_id]


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
    node = session.get(RolloutZNode.path(holder)) if is_rollout_id(holder) else None
    if node is None:
        return None
    try:
        record = Record.decode(node[0])
    except InvalidInput as exc:
        salvaged, problems = Record.salvage(holder, node[0])
        if "state" not in problems and not salvaged.open:
            return None  # what can be read of it says it ended: it holds nothing any more
        return unreadable_holder_text(holder, exc.message)
    if not record.open:
        return None
    return holder_text(record)
