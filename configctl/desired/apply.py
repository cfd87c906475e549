"""Applying a plan: batched, version-checked ZooKeeper writes that say exactly what landed.

:func:`apply_plan` writes a plan through :meth:`ZkStore.commit_batches`: each entity's config
node, notification and history record go in one multi with the version seen when planning.
Before the first batch it re-reads the version of every entity the plan looked at, so a change
made since the plan was shown stops the apply before anything is written (:class:`StalePlan`).

Once a multi has been sent, "nothing was written" may no longer be true, so any failure after
that point (a write landing between the check and a later batch, ZooKeeper dying, a permission
error, Ctrl-C) ends in :class:`ApplyInterrupted` (exit 8) unless it is certain nothing landed.
It names the entities whose batch was committed, those whose batch was never sent or refused,
and those whose multi was sent but never answered. Those unknown ones are re-read (version and
config) if ZooKeeper answers again within the session timeout; an entity at the version its
write would give, holding what it would hold, is committed, one still at the planned version is
not. Since applying is idempotent, running ``plan`` again shows what is left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from configctl.desired.plan import LISTED_SHOWN, Plan, listed
from configctl.entities import Entity, EntityType
from configctl.errors import ConfigctlError, Conflict, PartiallyWritten, ZooKeeperUnavailable, one_line
from configctl.zkstore import Change, Committed, VersionConflict, ZkStore, batches

IN_FLIGHT = 2
"""Multis outstanding at once: the next is built while ZooKeeper applies the previous one.

It is also what apply knows about a failure: past the last batch answered, at most this many
were sent (and may have landed); none after them was."""
_RETRY_PAUSE = 0.25
_NAMED = 3
"""Entities named per list in an interruption's one-line message (``--output json`` has them all)."""


def _listed(entities: Sequence[Entity], limit: int = LISTED_SHOWN) -> str:
    return listed([e.label for e in entities], limit)


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
    """The state moved since the plan, and nothing was written (exit 5)."""

    def __init__(self, message: str, applied: list[Entity], not_applied: list[Entity]) -> None:
        super().__init__(message)
        self.applied = applied
        self.not_applied = not_applied


class ApplyInterrupted(PartiallyWritten):
    """Apply stopped after sending a multi: what was committed, not committed, and unknown (exit 8).

    The lists of :class:`PartiallyWritten` hold entity paths (as ``plan --output json`` writes
    them); the ``*_entities`` attributes hold the entities themselves, in plan order.
    """

    def __init__(
        self,
        message: str,
        *,
        committed: Sequence[Entity],
        not_committed: Sequence[Entity],
        unknown: Sequence[Entity],
    ) -> None:
        super().__init__(
            message,
            committed=[e.path for e in committed],
            not_committed=[e.path for e in not_committed],
            unknown=[e.path for e in unknown],
        )
        self.committed_entities = list(committed)
        self.not_committed_entities = list(not_committed)
        self.unknown_entities = list(unknown)

    def to_json(self) -> dict[str, list[str]]:
        return {"committed": self.committed, "not_committed": self.not_committed, "unknown": self.unknown}


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

    Raises :class:`StalePlan` if the pre-check finds that the state moved (nothing written), and
    :class:`ApplyInterrupted` if anything may have been written before a failure (see the
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
        groups = list(batches(phase))  # the multis commit_batches sends, in order
        done = 0
        in_callback = False
        try:
            for batch in store.commit_batches(phase, reason=reason, in_flight=IN_FLIGHT):
                committed.extend(batch)
                done += 1
                count += 1
                if on_batch is not None:
                    in_callback = True
                    on_batch(batch)
                    in_callback = False
        except VersionConflict:
            # commit_batches waited for every multi it had sent: what it yielded is all that landed.
            _stale(store, changes, committed)
        except (Exception, KeyboardInterrupt) as exc:
            # Past the last batch answered, the next IN_FLIGHT were sent (one fewer if the failure
            # is ours, in on_batch, as the generator had not moved on); nothing after them was.
            sent = groups[done : done + IN_FLIGHT - (1 if in_callback else 0)]
            _interrupted(store, changes, committed, [c for group in sent for c in group], exc)
    return ApplyResult(tuple(committed), count, time.perf_counter() - started)


def _stale(store: ZkStore, changes: list[Change], committed: list[Committed]) -> NoReturn:
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
    raise ApplyInterrupted(
        _report(
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


def _interrupted(
    store: ZkStore,
    changes: list[Change],
    committed: list[Committed],
    sent: list[Change],
    cause: BaseException,
) -> NoReturn:
    """Raise what an apply that failed after sending ``sent`` (answers never read) really did."""
    landed, _not_landed, unknown = _resolve(store, sent)
    done = {c.entity for c in committed} | {c.entity for c in landed}
    unknown_entities = {c.entity for c in unknown}
    not_committed = [c.entity for c in changes if c.entity not in done and c.entity not in unknown_entities]
    committed_entities = [c.entity for c in changes if c.entity in done]
    if not committed_entities and not unknown:
        raise cause  # certainly nothing was written: the error as it is says so truthfully
    what = one_line(cause.message if isinstance(cause, ConfigctlError) else cause) or "interrupted"
    if isinstance(cause, KeyboardInterrupt):
        what = "interrupted"
    if sent and not unknown:
        what += " (the batches in flight were re-read after reconnecting)"
    raise ApplyInterrupted(
        _report(what, len(changes), committed_entities, not_committed, [c.entity for c in unknown]),
        committed=committed_entities,
        not_committed=not_committed,
        unknown=[c.entity for c in unknown],
    ) from None


def _report(
    what: str, total: int, committed: list[Entity], not_committed: list[Entity], unknown: list[Entity]
) -> str:
    parts = [
        f"{what}; committed {len(committed)} of {total} entities ({_listed(committed, _NAMED) or 'none'})"
    ]
    if not_committed:
        parts.append(f"not committed {len(not_committed)} ({_listed(not_committed, _NAMED)})")
    if unknown:
        parts.append(
            f"unknown {len(unknown)}: sent but never answered, ZooKeeper did not come back in time "
            f"({_listed(unknown, _NAMED)})"
        )
    return "; ".join(parts) + "; run plan to see what is left (--output json lists every entity)"


def _resolve(store: ZkStore, sent: list[Change]) -> tuple[list[Change], list[Change], list[Change]]:
    """Split multis sent but never answered into committed, not committed and unknown, by re-reading.

    Reads are retried until the store's timeout: ZooKeeper answers them only after the requests
    sent before them, so a read that succeeds sees the outcome of every multi sent earlier.
    """
    if not sent:
        return [], [], []
    deadline = time.monotonic() + store.timeout
    while True:
        try:
            now = {item.entity: item for item in store.read_many([c.entity for c in sent])}
            break
        except ZooKeeperUnavailable:
            if time.monotonic() + _RETRY_PAUSE >= deadline:
                return [], [], sent
            time.sleep(_RETRY_PAUSE)
        except (ConfigctlError, KeyboardInterrupt):
            return [], [], sent
    landed, missed, unknown = [], [], []
    for change in sent:
        item = now[change.entity]
        written_version = 0 if change.expected_version < 0 else change.expected_version + 1
        if item.version == change.expected_version:
            missed.append(change)
        elif item.version == written_version and item.config == change.config:
            landed.append(change)
        else:
            unknown.append(change)  # someone else wrote it since: whose write is it? say so
    return landed, missed, unknown
