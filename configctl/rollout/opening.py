"""What every store records when a rollout opens, and the words for one that holds an entity or cannot be read. Pure.

ZooKeeper (:mod:`configctl.zk.rolloutcreate`) and a KRaft cluster (:mod:`configctl.kraft.rollouts`)
keep a rollout's record differently, but a canary and a wave rollout must record the same things
when they open, whichever store keeps them, and an operator must read the same refusal when an
open rollout holds an entity or a record cannot be read. Those have their one home here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from configctl.errors import RolloutStuck, one_line
from configctl.rollout import record as rec
from configctl.rollout.parsing import new_rollout_id
from configctl.rollout.record import Planned, Record


def new_record(
    planned: Sequence[Planned],
    *,
    identity: str,
    kind: str,
    reason: str,
    options: rec.Options,
    waves: int,
    step: dict[str, Any],
    summary: str,
    entities: tuple[str, ...] = (),
    canary: rec.CanaryPlan | None = None,
    baseline_change: int | None = None,
) -> Record:
    """A new rollout's record, stamped (a new id, now, ``identity``, the fleet's change number),
    its first event ``created by <identity>: <summary>``."""
    now = int(time.time() * 1000)
    record = Record(
        id=new_rollout_id(),
        kind=kind,
        state=rec.RUNNING,
        created_ms=now,
        updated_ms=now,
        identity=identity,
        reason=reason,
        options=options,
        waves=waves,
        entities=entities,
        entity_count=len(entities) + len(planned),
        plan_chunks=0,
        baseline_change=baseline_change,
        step=step,
        canary=canary,
    )
    return record.with_event(now, f"created by {identity}: {summary}")


def holder_text(record: Record) -> str:
    """How an open rollout is named in a refusal, with the command that shows it."""
    return (
        f"open rollout {record.id} ({record.kind}, {record.state}, by {record.identity}); "
        f"finish it first: configctl rollout show {record.id}"
    )


def unreadable_holder_text(rollout_id: str, problem: str) -> str:
    """How an open rollout whose record cannot be read is named in a refusal."""
    return (
        f"rollout {rollout_id}, whose record cannot be read ({one_line(problem, 120)}); "
        f"finish it first: configctl rollout abort {rollout_id} --force"
    )


def busy_message(busy: Mapping[str, str]) -> str:
    """The refusal of a rollout some of whose entities (path → holder's text) an open one holds."""
    first_path, holder = next(iter(busy.items()))
    more = f" (and {len(busy) - 1} more of its entities)" if len(busy) > 1 else ""
    return f"{first_path}{more} is part of {holder}; nothing was written"


def unreadable(rollout_id: str, problem: str) -> RolloutStuck:
    """The one-line error for a rollout that cannot be read whole, and the one command that ends it."""
    return RolloutStuck(
        f"rollout {rollout_id} cannot be read ({one_line(problem, 200)}); it keeps every entity it "
        f"claims until it is finished: configctl rollout abort {rollout_id} --force restores what its "
        "undo records hold and ends it, naming what it could not restore"
    )


__all__ = ["busy_message", "holder_text", "new_record", "unreadable", "unreadable_holder_text"]
