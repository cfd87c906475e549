"""Applying a plan: batched, version-checked ZooKeeper writes that say exactly what landed.

:func:`apply_plan` writes a plan through :meth:`ConfigStore.commit_batches`: each entity's config
node, notification and history record go in one multi with the version seen when planning.
Before the first batch it re-reads the version of every entity the plan looked at, so a change
made since the plan was shown stops the apply before anything is written (:class:`StalePlan`).

Once a multi has been sent, "nothing was written" may no longer be true, so any failure after
that point (a write landing between the check and a later batch, ZooKeeper dying, a permission
error, Ctrl-C) ends in :class:`configctl.interrupted.WriteInterrupted` (exit 8) unless it is certain nothing landed.
It names the entities whose batch was committed, those whose batch was never sent or refused,
and those whose multi was sent but never answered: the store says which, by its own batching
(:class:`~configctl.store.CommitInterrupted`; a failure of apply's own, between two batches, is
thrown into the store's batches so that it says so then too). Those unknown ones are re-read
(version and config) if ZooKeeper answers again within the session timeout; an entity at the
version its write would give, holding what it would hold, is committed, one still at the planned
version is not. Since applying is idempotent, running ``plan`` again shows what is left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from configctl import interrupted
from configctl.desired.plan import LISTED_SHOWN, Plan, listed
from configctl.entities import Entity, EntityType
from configctl.errors import ConfigctlError, Conflict
from configctl.gcpause import collector_paused
from configctl.store import Change, CommitInterrupted, Committed, ConfigStore, VersionConflict, version_after

if TYPE_CHECKING:
    from configctl.fleet import WaitResult

IN_FLIGHT = 2
"""Multis outstanding at once: the next is built while ZooKeeper applies the previous one."""


def _listed(entities: Sequence[Entity], limit: int = LISTED_SHOWN) -> str:
    return listed([e.label for e in entities], limit)


def moved_since(store: ConfigStore, seen: Mapping[Entity, int]) -> list[Entity]:
    """Entities whose znode version is no longer what the plan saw (pipelined reads)."""
    now = store.read_many(seen, strict=False)
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
    """The state moved since the plan, and nothing was written (exit 5)."""

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


@dataclass
class ApplyReport:
    """What ``apply`` did with a plan: the plan, then what was committed, not committed and unknown
    (``stopped``: the write was cut off), and what the brokers did with it (``--wait``)."""

    plan: Plan
    applied: ApplyResult | None = None
    stopped: interrupted.WriteInterrupted | None = None
    rollout: WaitResult | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``apply --output json`` document: the plan's, each entity with its new version and change."""
        document = self.plan.to_json()
        applied = self.applied
        committed = {c.entity: c for c in applied.committed} if applied else {}
        for entry, entity_plan in zip(document["entities"], self.plan.entities, strict=True):
            done = committed.get(entity_plan.entity)
            entry["new_version"] = done.version if done else None
            entry["change_number"] = done.change_number if done else None
        if self.stopped is not None:
            document["applied_entities"] = len(self.stopped.committed)
            document.update(self.stopped.to_json())
            document["error"] = self.stopped.message
            return document
        document["applied_entities"] = applied.entities if applied else 0
        document["batches"] = applied.batches if applied else 0
        document["seconds"] = round(applied.seconds, 3) if applied else 0.0
        document["committed"] = [c.entity.path for c in applied.committed] if applied else []
        document["not_committed"] = []
        document["unknown"] = []
        if self.rollout is not None:
            document["rollout"] = self.rollout.to_json()
        return document


@collector_paused()  # what it reads, plans and commits stays alive: collections find nothing
def apply_plan(
    store: ConfigStore,
    plan: Plan,
    *,
    reason: str = "",
    check_first: bool = True,
    on_batch: Callable[[list[Committed]], None] | None = None,
) -> ApplyResult:
    """Write ``plan`` in batched multis, each entity version-checked against the plan.

    Raises :class:`StalePlan` if the pre-check finds that the state moved (nothing written), and
    :class:`~configctl.interrupted.WriteInterrupted` if anything may have been written before a failure (see the
    module docstring). ``on_batch`` is called with each committed batch.
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
    count = 0
    for phase in _phases(changes):
        before = len(committed)
        batches = store.commit_batches(phase, reason=reason, in_flight=IN_FLIGHT)
        try:
            for batch in batches:
                try:
                    committed.extend(batch)
                    count += 1
                    if on_batch is not None:
                        on_batch(batch)
                except (Exception, KeyboardInterrupt) as exc:
                    # Ours, with the store's next multis in flight: it says which (CommitInterrupted).
                    batches.throw(exc)
                    raise
        except VersionConflict:
            # commit_batches waited for every multi it had sent: what it yielded is all that landed.
            _stale(store, changes, committed)
        except CommitInterrupted as exc:
            # The store's own account of this phase: what committed, what was in flight (unknown),
            # what was never sent. A failure other than a lost connection is its cause.
            del committed[before:]
            committed.extend(exc.committed)
            cause = exc.failure if exc.failure is not None else exc.error
            landed = interrupted.settle(store, changes, [c.entity for c in committed], exc.unknown, cause)
            committed.extend(Committed(c.entity, version_after(c.expected_version), None) for c in landed)
        except (Exception, KeyboardInterrupt) as exc:
            # No account: the store failed before any multi of this phase went out, so none is in flight.
            interrupted.settle(store, changes, [c.entity for c in committed], [], exc)
    return ApplyResult(tuple(committed), count, time.perf_counter() - started)


def _stale(store: ConfigStore, changes: list[Change], committed: list[Committed]) -> NoReturn:
    done = {c.entity for c in committed}
    rest = [c for c in changes if c.entity not in done]
    try:
        moved = moved_since(store, {c.entity: c.expected_version for c in rest})
    except ConfigctlError:
        moved = []
    what = _listed(moved) if moved else "an entity of the next batch"
    if not committed:
        raise StalePlan(
            f"the state moved since the plan: {what} changed; nothing was written; re-run plan",
            [],
            [c.entity for c in changes],
        ) from None
    raise interrupted.WriteInterrupted(
        interrupted.report(
            f"the state moved since the plan: {what} changed",
            len(changes),
            [c.entity for c in committed],
            [c.entity for c in rest],
            [],
        ),
        committed=[c.entity for c in committed],
        not_committed=[c.entity for c in rest],
        unknown=[],
    ) from None
