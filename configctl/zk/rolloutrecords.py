"""Rollout records read back from ZooKeeper: one record whole (with its plan and undo chunks), the listing, and the finished ones trimmed.

A rollout is ``/configctl/rollouts/<id>`` (the record) with its children: ``plan-NNNN`` chunks,
``undo-NNNN`` chunks and the ``owner`` node of the process running it (docs/rollout.md). A part
that cannot be read makes the whole rollout unreadable (:func:`unreadable`, exit 12): it is never
run on, nor undone, from half of what it recorded (``rollout abort --force`` reads what it can:
:mod:`configctl.zk.rolloutsalvage`).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from configctl.errors import InvalidInput, NotFound
from configctl.rollout import record as rec
from configctl.rollout.opening import unreadable
from configctl.rollout.parsing import is_rollout_id
from configctl.rollout.record import Listed, Loaded, Planned, Record
from configctl.zk.session import ZkSession
from configctl.znodes import RolloutZNode

FINISHED_KEPT = 50
"""Finished rollouts whose records are kept for ``rollout list|show`` (older ones are removed)."""
SETTLE_PAUSE = 0.25


def read_record(session: ZkSession, rollout_id: str) -> tuple[Record, int] | None:
    found = session.get(RolloutZNode.path(rollout_id))
    if found is None:
        return None
    return Record.decode(found[0]), found[1].version


def after_abort(
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
        names, nodes, owner = children(session, rollout_id)
        planned = [p for name in names if is_plan(name) and nodes[name] for p in plan_of(nodes[name])]
        undo = [rec.decode_undo_chunk(undo_index(n), nodes[n][0]) for n in names if is_undo(n) and nodes[n]]
        rec.check_plan(record, planned)
    except InvalidInput as exc:
        raise unreadable(rollout_id, exc.message) from None
    undo.sort(key=lambda c: c.index)
    return Loaded(record, node[1].version, planned, undo, owner, names)


def children(
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


def is_plan(name: str) -> bool:
    return name.startswith(RolloutZNode.PLAN_PREFIX)


def is_undo(name: str) -> bool:
    return name.startswith(RolloutZNode.UNDO_PREFIX) and name[len(RolloutZNode.UNDO_PREFIX) :].isdigit()


def undo_index(name: str) -> int:
    return int(name[len(RolloutZNode.UNDO_PREFIX) :])


def plan_of(node: tuple[bytes, Any]) -> list[Planned]:
    return rec.decode_plan_chunk(node[0])


def listing(session: ZkSession) -> list[Listed]:
    """Every rollout with a record, newest first."""
    ids = [n for n in session.children(RolloutZNode.ROOT) if is_rollout_id(n)]
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


def trim_finished(session: ZkSession, keep: int = FINISHED_KEPT) -> None:
    """Remove the oldest finished rollouts' records beyond ``keep`` (with any children left)."""
    finished = [item for item in listing(session) if item.record is not None and not item.record.open]
    for item in finished[keep:]:
        path = RolloutZNode.path(item.id)
        kids = [f"{path}/{c}" for c in session.children(path)]
        session.delete_nodes([*kids, path])
