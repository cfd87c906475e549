"""A rollout's first write refused by a broker: the rollout wrote nothing, is closed, and says so.

Through the Admin API (``--bootstrap-server``) a broker write shares no ZooKeeper transaction, so
a rollout's record, with the undo entry of the write, goes first and the brokers write after it
(:class:`configctl.store.Capabilities` ``extra_nodes``). When the broker refuses that write (its
reason: a reconfiguration it vetoes), the record would claim a write that never happened and hold
its entities, blocking the next rollout until ``rollout abort --force``. Here, when nothing had
been written before: the record is read again, the entities checked to be as they were, and the
rollout closed as aborted with the broker's reason and no undo entry; the refusal is the
command's error (exit 1: nothing was written, as for any write a broker refuses).

A refusal after earlier writes went out is not this case: the rollout stops, left open, its
record saying what to undo (exit 12).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from configctl.errors import BrokerRefused, RolloutStuck, one_line
from configctl.rollout import record as rec
from configctl.rollout.steps import Run
from configctl.store import Committed


def event_text(work: Run, written: str, sent: str) -> str:
    """The record's event for a write: ``written`` where the record lands with the entities (one
    ZooKeeper transaction), ``sent`` where it goes first and the brokers write after it."""
    return written if work.active.store.capabilities.extra_nodes else sent


def first_write(work: Run, write: Callable[[], Sequence[Committed]]) -> list[Committed]:
    """``write()``, the rollout's write; a broker's refusal of its first write closes it (see above)."""
    first = not work.active.written()
    try:
        return list(write())
    except BrokerRefused as refused:
        if not first:
            raise RolloutStuck(
                f"rollout {work.active.id}: {one_line(refused.message)}; what went out before is left "
                f"as it is, the rollout open: configctl rollout show {work.active.id}, then abort or resume it"
            ) from None
        raise close(work, refused) from None


def close(work: Run, refused: BrokerRefused) -> BrokerRefused:
    """Close the rollout whose first write ``refused`` turned down; the error to raise."""
    store = work.active.store
    rollout_id = work.active.id
    fresh = store.rollouts.resume(store.rollouts.load(rollout_id))  # the record as it went first
    entries = [u for u in fresh.written().values()]
    moved = [u.entity.path for u in entries if fresh.current(u.entity).version != u.previous_version]
    if moved:  # another of its writes went out before the refusal: not "nothing written"
        raise RolloutStuck(
            f"rollout {rollout_id}: {one_line(refused.message)}; {', '.join(moved)} went out before it: "
            f"the rollout is left open: configctl rollout abort {rollout_id} restores it"
        )
    failure = f"{one_line(refused.message)}; nothing was written"
    fresh.finish(f"aborted: {failure}", {"state": rec.ABORTED, "failure": failure})
    work.active = fresh
    work.report.failure = failure
    return BrokerRefused(f"{failure}; rollout {rollout_id} is closed (aborted)")
