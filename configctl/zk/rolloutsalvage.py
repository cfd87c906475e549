"""What can be read of a damaged rollout, and what could not: the one way ``rollout abort --force`` ends it.

A rollout with an unreadable part cannot be run on nor undone as usual
(:func:`configctl.zk.rolloutrecords.unreadable`); its claims keep its entities until it is ended.
This reads it part by part instead, keeping every entry of every undo chunk that can be read, so
the abort restores what can be restored and names the rest.
"""

from __future__ import annotations

from configctl.errors import InvalidInput, NotFound
from configctl.rollout import record as rec
from configctl.rollout.record import Loaded, Planned, Record, UndoChunk
from configctl.zk.rolloutclaims import claimed_by
from configctl.zk.rolloutrecords import children, is_plan, is_undo, plan_of, undo_index
from configctl.zk.session import ZkSession
from configctl.znodes import RolloutZNode


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
    names, nodes, owner = children(session, rollout_id)
    planned: list[Planned] = []
    undo: list[UndoChunk] = []
    broken: list[str] = []
    lost: list[str] = []
    for name in names:
        found = nodes[name]
        if found is None:
            continue
        try:
            if is_plan(name):
                planned.extend(plan_of(found))
            elif is_undo(name):
                undo.append(rec.decode_undo_chunk(undo_index(name), found[0]))
        except InvalidInput:
            if is_undo(name):
                chunk, missing = UndoChunk.salvage(undo_index(name), found[0])
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
