"""configctl's history of ``/config`` in ZooKeeper: the record each write leaves, read back, and trimmed to the limit.

Every write's multi carries its history record (:func:`record_of`; built into the multi by
:mod:`configctl.zk.multi`): who, when, why, the config and what changed. An entity's first record
is its history directory's own data (created with that write, one node fewer per entity); every
later one is a sequential child. A record that would not fit beside its config is stored without
the config (its SHA-256 is kept), so no entity ever becomes unchangeable. Reads and trims are
pipelined, so the fleet's change feed reads thousands of entities in a few round trips.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence

from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.store import Change
from configctl.zk.errors import translate_errors
from configctl.zk.multisize import MAX_MULTI_BYTES
from configctl.zk.session import ZkSession
from configctl.znodes import HistoryRecord, HistoryZNodes

log = logging.getLogger(__name__)


def record_of(
    change: Change, version: int, now_ms: int, identity: str, reason: str, config_bytes: int
) -> bytes:
    """The record of one change: the whole config when it fits beside the node, else its digest."""
    changed = {
        key: change.previous.get(key)
        for key in sorted(set(change.previous) | set(change.config))
        if change.previous.get(key) != change.config.get(key)
    }
    record = HistoryRecord(
        change.entity.path, version, now_ms, identity, reason, dict(change.config), changed
    )
    data = HistoryZNodes.encode(record)
    if config_bytes + len(data) <= MAX_MULTI_BYTES:
        return data
    digest = hashlib.sha256(change.data).hexdigest()
    small = HistoryRecord(change.entity.path, version, now_ms, identity, reason, None, {}, digest)
    return HistoryZNodes.encode(small)


def missing_directories(session: ZkSession, changes: Sequence[Change]) -> set[str]:
    """History directories of ``changes`` that do not exist yet (their parents are made here).

    Checked with one multiRead per thousand entities rather than one ``exists`` round trip
    each: a bulk apply of new topics would otherwise spend most of its time here.
    """
    unknown = list(dict.fromkeys(HistoryZNodes.directory(c.entity) for c in changes))
    unknown = [path for path in unknown if not session.knows_path(path)]
    for parent in dict.fromkeys(path.rsplit("/", 1)[0] for path in unknown):
        session.ensure_path(parent)
    missing = set()
    for path, found in zip(unknown, session.get_many(unknown), strict=True):
        if found is None:
            missing.add(path)
        else:
            session.remember_paths([path])
    return missing


def record_alone(
    session: ZkSession, change: Change, version: int, *, identity: str, reason: str, limit: int
) -> None:
    """The history record of a write someone else committed (a broker, through its Admin API), at
    ``version``, written alone as the write's own multi would have written it (-1: the write
    emptied a quota entity and Kafka removed its node, recorded as the multi records a removal)."""
    if limit <= 0:
        return
    entity = change.entity
    directory = HistoryZNodes.directory(entity)
    record = record_of(change, version, int(time.time() * 1000), identity, reason, len(change.data))
    missing = missing_directories(session, [change])
    acls = session.acls
    with translate_errors("record the write in configctl's history"):
        if directory in missing:
            session.client.create(directory, record, acl=acls.acl_for(directory))
            session.remember_paths([directory])
        else:
            session.client.create(
                HistoryZNodes.sequential_path(entity, version),
                record,
                acl=acls.acl_for(directory + "/"),
                sequence=True,
            )
    if version >= limit:
        trim(session, [entity], limit)


def histories(session: ZkSession, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
    """Each entity's recorded writes (by entity path), newest first: every listing pipelined, then
    every record (malformed records are skipped with a warning)."""
    directories = [HistoryZNodes.directory(e) for e in entities]
    listed = session.children_many(directories)
    wanted: list[tuple[int, str, str]] = []  # (entity index, record name, node path)
    for index, (directory, names) in enumerate(zip(directories, listed, strict=True)):
        records = sorted((n for n in names or () if HistoryZNodes.is_record(n)), key=HistoryZNodes.order)
        wanted.append((index, "", directory))
        wanted.extend((index, name, f"{directory}/{name}") for name in records)
    found = session.get_many([path for _, _, path in wanted])
    result: dict[str, list[HistoryRecord]] = {e.path: [] for e in entities}
    for (index, name, _), node in zip(wanted, found, strict=True):
        if node is None or not node[0]:
            continue
        try:
            result[entities[index].path].append(HistoryZNodes.decode(node[0]))
        except InvalidInput:
            log.warning("skipping malformed history record %s/%s", directories[index], name)
    for records in result.values():
        records.reverse()
    return result


def history_entities(session: ZkSession) -> list[Entity]:
    """Every entity with a history directory, deleted ones included (listings pipelined; a
    directory that names no entity is skipped)."""
    root = HistoryZNodes.ROOT
    types = [t for t in EntityType if t.value in session.children(root)]
    listed = session.children_many([f"{root}/{t.value}" for t in types])
    paths: list[str] = []
    users: list[str] = []
    for etype, names in zip(types, listed, strict=True):
        for name in names or ():
            paths.append(f"{etype.value}/{name}")
            if etype.nests_clients:
                users.append(name)
    clients = session.children_many([f"{root}/users/{u}/clients" for u in users])
    for user, names in zip(users, clients, strict=True):
        paths.extend(f"users/{user}/clients/{c}" for c in names or ())
    found = []
    for path in paths:
        try:
            found.append(Entity.from_path(path))
        except InvalidInput:
            continue
    return found


def trim(session: ZkSession, entities: Sequence[Entity], limit: int) -> None:
    """Keep the newest ``limit`` records of each entity (listings and deletes pipelined)."""
    if not entities:
        return
    directories = [HistoryZNodes.directory(e) for e in entities]
    excess: list[str] = []
    cleared: list[str] = []
    listed = session.children_many(directories)
    heads = session.get_many(directories)
    for directory, names, head in zip(directories, listed, heads, strict=True):
        records = sorted((n for n in names or () if HistoryZNodes.is_record(n)), key=HistoryZNodes.order)
        with_head = len(records) + (1 if head is not None and head[0] else 0)
        surplus = max(0, with_head - limit)
        if head is not None and head[0] and surplus:
            cleared.append(directory)  # the directory's own record is the oldest: it goes first
            surplus -= 1
        excess.extend(f"{directory}/{n}" for n in records[:surplus])
    for directory in cleared:
        with translate_errors(f"trim {directory}"):
            session.client.set_async(directory, b"").get(timeout=session.timeout)
    session.delete_nodes(excess)
