"""A rollout's writes and their undoing, planned without I/O: what each write costs, and the order its undo goes back in.

A rollout writes its entities in transactions that also carry the record of how to undo them,
and restores them from that record, to their exact previous bytes, on abort or failure. What is
decided here needs nothing but the plan, the undo record and the nodes as they were read (the
store reads and writes: :mod:`configctl.zk.activerollout` for ZooKeeper):

* :func:`write_cost` and :func:`write_batches`: the writes cut into transactions within a budget;
* :func:`restore_groups`: undo chunks grouped into the transactions a restore sends;
* :func:`restore_changes`: the writes that give each undone entity its previous bytes back, and
  the entities someone else changed since the rollout wrote them;
* :func:`users_last` and :func:`restore_phases`: the order ZooKeeper's tree needs (a user's node
  re-created before its clients', removed after them).
"""

from __future__ import annotations

from collections.abc import Sequence

from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.rollout.record import Planned, Undo, UndoChunk
from configctl.store import Change
from configctl.znodes import decode_entity_config, encode_entity_config


def write_cost(target: dict[str, str], previous: bytes | None) -> int:
    """Bytes a write costs in its multi (node, history record, undo entry) and later in its undo's."""
    return 2 * len(encode_entity_config(target)) + 3 * len(previous or b"") + 1000


def write_batches(items: Sequence[Planned], *, budget_bytes: int, max_writes: int) -> list[list[Planned]]:
    """``items`` (in the order they must go out) cut into transactions, each within ``budget_bytes``
    (by :func:`write_cost`, the previous bytes not known yet) and ``max_writes`` entities."""
    result: list[list[Planned]] = []
    batch: list[Planned] = []
    size = 0
    for item in items:
        cost = write_cost(item.target, None)
        if batch and (size + cost > budget_bytes or len(batch) >= max_writes):
            result.append(batch)
            batch, size = [], 0
        batch.append(item)
        size += cost
    if batch:
        result.append(batch)
    return result


def restore_groups(
    chunks: Sequence[UndoChunk], *, budget_bytes: int, max_writes: int
) -> list[list[UndoChunk]]:
    """Undo chunks (in the order they go back) grouped into the transactions a restore sends, each
    within ``budget_bytes`` and ``max_writes`` entities (a chunk is never split)."""
    groups: list[list[UndoChunk]] = []
    size = count = 0
    for chunk in chunks:
        cost = sum(2 * len(u.previous or b"") + 1000 for u in chunk.entries)
        if groups and size + cost <= budget_bytes and count + len(chunk.entries) <= max_writes:
            groups[-1].append(chunk)
            size += cost
            count += len(chunk.entries)
        else:
            groups.append([chunk])
            size, count = cost, len(chunk.entries)
    return groups


def restore_changes(
    entries: Sequence[Undo], found: Sequence[tuple[bytes, int] | None], *, force: bool = False
) -> tuple[list[Change], list[Entity]]:
    """The writes that give ``entries`` their previous bytes back (clients before users), and the
    entities that moved since the rollout wrote them (restored anyway with ``force``).

    ``found`` is each entry's node as read now: its bytes and version, None when it is absent.
    """
    changes: list[Change] = []
    moved: list[Entity] = []
    for undo, node in zip(entries, found, strict=True):
        current = None if node is None else node[1]
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
    return users_last(changes), moved


def users_last(changes: list[Change]) -> list[Change]:
    """Clients before users (a user's node can only go once its clients' have), otherwise as given."""
    return sorted(changes, key=lambda c: c.entity.client is None)


def restore_phases(changes: Sequence[Change]) -> list[list[Change]]:
    """The multis an undo needs, in order: users re-created before their clients (a client's write
    creates its user's node as a parent), users removed after their clients (a node with children
    cannot be deleted); everything else in the middle one."""
    clients = {c.entity.name for c in changes if c.entity.client is not None}
    users = [c for c in changes if c.entity.type is EntityType.USERS and c.entity.client is None]
    early = [c for c in users if c.entity.name in clients and c.expected_version < 0]
    late = [c for c in users if c.entity.name in clients and c.remove_node]
    middle = [c for c in changes if c not in early and c not in late]
    return [phase for phase in (early, middle, late) if phase] or [[]]
