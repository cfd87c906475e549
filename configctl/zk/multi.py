"""The one multi a write is: built from changes (config node, notification, history record per entity), and its results read back.

Writing one entity is ONE ZooKeeper multi (docs/reference/zookeeper-nodes.md): the config node, set
with the version that was read (or created when absent; deleted where Kafka 3.5+ would remove an
emptied quota node, :mod:`configctl.zk.quotacleanup`), its change notification, and its history
record (:mod:`configctl.zk.history`). A reader never sees a config without its notification; two
writers never silently overwrite each other (the loser gets :class:`VersionConflict`, nothing
written); and the record of who wrote what cannot be lost the way a second write could.

:func:`prepare` does no I/O: everything it needs was read before (:class:`Reads`, by the store's
``_before_writes``), so the next multi of a bulk commit is built while ZooKeeper applies the last.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kazoo.exceptions import BadVersionError, NoAuthError, NodeExistsError, NoNodeError, RolledBackError

from configctl.entities import Entity
from configctl.errors import PermissionDenied, ZooKeeperUnavailable
from configctl.migration import CONTROLLER_EPOCH_PATH
from configctl.store import Change, Committed, NodeOp, VersionConflict, version_after
from configctl.zk import history
from configctl.zk.session import ZkSession
from configctl.znodes import (
    CHANGES_PATH,
    NOTIFICATION_PATH_PREFIX,
    HistoryZNodes,
    change_number,
    encode_notification,
)


@dataclass(frozen=True)
class Reads:
    """What a multi needs to know before it is built: missing history directories, and the empty
    quota nodes (with their emptied parents) to delete rather than keep, as Kafka 3.5+ does."""

    missing_history_dirs: set[str] = field(default_factory=set)
    removals: dict[Entity, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    controller_epoch: int | None = None
    """``/controller_epoch``'s version when ownership was checked; the multi checks it is unchanged."""


@dataclass(frozen=True)
class Prepared:
    """A multi built by :func:`prepare`, not yet sent."""

    changes: list[Change]
    transaction: Any
    notification_ops: list[int]
    new_history_dirs: set[str]
    removals: dict[Entity, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    controller_checked: bool = False
    """The multi's first operation checks ``/controller_epoch`` (see :class:`Reads`)."""


def prepare(
    session: ZkSession,
    changes: Sequence[Change],
    reason: str,
    reads: Reads,
    extra: Sequence[NodeOp] = (),
    *,
    history_limit: int,
    identity: str,
) -> Prepared:
    """Build the multi for ``changes`` and ``extra`` (no I/O: ``reads`` holds what was read)."""
    now_ms = int(time.time() * 1000)
    acls = session.acls
    new_history_dirs: set[str] = set()
    transaction = session.transaction()
    if reads.controller_epoch is not None:
        transaction.check(CONTROLLER_EPOCH_PATH, reads.controller_epoch)
    notification_ops: list[int] = []
    for change in changes:
        entity = change.entity
        data = change.data
        removal = reads.removals.get(entity)
        if removal is not None:
            for path, version in removal:
                transaction.delete(path, version=version)
            new_version = -1
        elif change.expected_version < 0:
            transaction.create(entity.znode, data, acl=acls.acl_for(entity.znode))
            new_version = version_after(change.expected_version)
        else:
            transaction.set_data(entity.znode, data, version=change.expected_version)
            new_version = version_after(change.expected_version)
        notification_ops.append(len(transaction.operations))
        transaction.create(
            NOTIFICATION_PATH_PREFIX,
            encode_notification(entity),
            acl=acls.acl_for(CHANGES_PATH + "/"),
            sequence=True,
        )
        if history_limit > 0:
            directory = HistoryZNodes.directory(entity)
            record = history.record_of(change, new_version, now_ms, identity, reason, len(data))
            if directory in reads.missing_history_dirs:
                new_history_dirs.add(directory)
                # Created in the same multi, holding this first record itself (one node fewer per
                # entity): an entity's history directory only ever appears with a write to that
                # entity, which this multi's version check also guards.
                transaction.create(directory, record, acl=acls.acl_for(directory))
            else:
                transaction.create(
                    HistoryZNodes.sequential_path(entity, new_version),
                    record,
                    acl=acls.acl_for(directory + "/"),
                    sequence=True,
                )
    for op in extra:
        if op.action == "create":
            transaction.create(op.path, op.data, acl=acls.acl_for(op.path), ephemeral=op.ephemeral)
        elif op.action == "set":
            transaction.set_data(op.path, op.data, version=op.version)
        elif op.action == "delete":
            transaction.delete(op.path, version=op.version)
        elif op.action == "check":
            transaction.check(op.path, op.version)
        else:
            raise ValueError(f"unknown node operation {op.action!r}")
    return Prepared(
        list(changes),
        transaction,
        notification_ops,
        new_history_dirs,
        reads.removals,
        reads.controller_epoch is not None,
    )


def failure(prepared: Prepared, results: list[Any]) -> Exception | None:
    """The error a multi failed with, as configctl names it (None when it committed).

    :class:`VersionConflict` when a node moved (or a create found its node there): nothing was
    written, and a retry reads again; a moved ``/controller_epoch`` says the controller changed.
    """
    failures = [r for r in results if isinstance(r, Exception)]
    if not failures:
        return None
    real = [f for f in failures if not isinstance(f, RolledBackError)]
    first = real[0] if real else failures[0]
    if isinstance(first, (BadVersionError, NodeExistsError, NoNodeError)):
        if prepared.controller_checked and results[0] is first:
            # A controller election since the ownership read: the retry reads it again.
            return VersionConflict(f"{CONTROLLER_EPOCH_PATH} moved: the cluster's controller changed")
        return VersionConflict(str(first))
    if isinstance(first, NoAuthError):
        return PermissionDenied(
            "ZooKeeper refused the write: no permission (check --zk-auth / --zk-sasl); nothing was written"
        )
    return ZooKeeperUnavailable(f"ZooKeeper rejected the write: {type(first).__name__}")


def committed(prepared: Prepared, results: list[Any]) -> list[Committed]:
    """What a multi that committed wrote: each entity's new version (-1 where its emptied node was
    removed) and the change number its notification got."""
    done = []
    for index, change in zip(prepared.notification_ops, prepared.changes, strict=True):
        notification_path = results[index]
        new_version = -1 if change.entity in prepared.removals else version_after(change.expected_version)
        done.append(Committed(change.entity, new_version, change_number(notification_path.rsplit("/", 1)[1])))
    return done
