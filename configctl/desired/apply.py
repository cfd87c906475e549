"""Applying a plan: batched, version-checked ZooKeeper writes that say exactly what landed.

:func:`apply_plan` writes a plan through :meth:`ZkStore.commit_batches`: each entity's config
node, notification and history record go in one multi with the version seen when planning.
Before the first batch it re-reads the version of every entity the plan looked at, so a change
made since the plan was shown stops the apply before anything is written. Only a write landing
in the milliseconds between that check and a later batch can stop an apply half way; the error
then says exactly which entities were applied, and since applying is idempotent, running
``plan`` again shows what is left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from configctl.desired.plan import Plan, listed
from configctl.entities import Entity, EntityType
from configctl.errors import Conflict
from configctl.zkstore import Change, Committed, VersionConflict, ZkStore


def _listed(entities: Sequence[Entity]) -> str:
    return listed([e.label for e in entities])


def moved_since(store: ZkStore, seen: Mapping[Entity, int]) -> list[Entity]:
    """Entities whose znode version is no longer what the plan saw (pipelined reads)."""
    now = store.read_many(seen)
    return [item.entity for item in now if item.version != seen[item.entity]]


def _phases(changes: list[Change]) -> list[list[Change]]:
    """Users created by this plan go before their clients' configs, in earlier multis.

    A user+client node lives under its user's node; writing the client's config creates the
    user node (empty) first, which would make the user's own version-checked create fail if
    both were in one multi.
    """
    created_users = {
        c.entity.name for c in changes if c.entity.type is EntityType.USERS and c.entity.client is None
    }
    created_users &= {c.entity.name for c in changes if c.expected_version < 0 and c.entity.client is None}
    later = [c for c in changes if c.entity.client is not None and c.entity.name in created_users]
    if not later:
        return [changes]
    first = [c for c in changes if not (c.entity.client is not None and c.entity.name in created_users)]
    return [first, later]


class StalePlan(Conflict):
    """The state moved since the plan; says what was written before that was noticed."""

    def __init__(self, message: str, applied: list[Entity], not_applied: list[Entity]) -> None:
        super().__init__(message)
        self.applied = applied
        self.not_applied = not_applied


@dataclass(frozen=True)
class ApplyResult:
    committed: tuple[Committed, ...]
    batches: int
    seconds: float

    @property
    def entities(self) -> int:
        return len(self.committed)


def apply_plan(
    store: ZkStore,
    plan: Plan,
    *,
    reason: str = "",
    check_first: bool = True,
    on_batch: Callable[[list[Committed]], None] | None = None,
) -> ApplyResult:
    """Write ``plan`` in batched multis, each entity version-checked against the plan.

    Raises :class:`StalePlan` (a :class:`Conflict`) if the state moved since the plan: before
    anything is written when the pre-check sees it, else after the batches already committed,
    naming what was and was not applied.
    """
    started = time.perf_counter()
    if check_first and plan.seen:
        moved = moved_since(store, plan.seen)
        if moved:
            raise StalePlan(
                f"the state moved since the plan: {_listed(moved)} changed; nothing was written; re-run plan",
                [],
                [e.entity for e in plan.entities],
            )
    changes = plan.changes()
    committed: list[Committed] = []
    batches = 0
    try:
        for phase in _phases(changes):
            for batch in store.commit_batches(phase, reason=reason):
                committed.extend(batch)
                batches += 1
                if on_batch is not None:
                    on_batch(batch)
    except VersionConflict:
        done = {c.entity for c in committed}
        applied = [c.entity for c in committed]
        not_applied = [c.entity for c in changes if c.entity not in done]
        moved = moved_since(store, {c.entity: c.expected_version for c in changes if c.entity not in done})
        what = _listed(moved) if moved else "an entity of the next batch"
        if applied:
            message = (
                f"the state moved since the plan: {what} changed; applied {len(applied)} of "
                f"{len(changes)} entities ({_listed(applied)}), not applied {len(not_applied)} "
                f"({_listed(not_applied)}); re-run plan to see what is left"
            )
        else:
            message = f"the state moved since the plan: {what} changed; nothing was written; re-run plan"
        raise StalePlan(message, applied, not_applied) from None
    return ApplyResult(tuple(committed), batches, time.perf_counter() - started)
