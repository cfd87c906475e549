"""Finishing a rollout from anywhere: ``configctl rollout abort|resume ID`` (and what ``list|show`` read).

A rollout's record holds everything needed to finish it without the process that started it
(killed, its laptop closed): ``abort`` gives every entity it wrote its exact previous bytes back
(version-checked: an entity someone changed since is not overwritten unless ``force``), and
``resume`` takes the rollout over and goes on from the step it reached (a canary is judged
again, then promoted or aborted; waves go on from the wave reached, writing what of it is not
written yet).

Both work on a rollout whose process still runs, too: every multi carries the record's version,
so the first to write wins and the other stops (``resume`` waits for no one: it refuses while the
owner node of a live process exists).

A rollout that cannot be read whole (a field of the wrong type, an unreadable undo chunk) fails
closed: it keeps its claims, ``resume``, ``show`` and a plain ``abort`` refuse it (exit 12, with
the command that ends it), and ``abort --force`` ends it from what can be read of it: every entity
its undo records hold is restored, and the report names what could not be read or restored.
"""

from __future__ import annotations

from configctl import retrying
from configctl.errors import Conflict, one_line
from configctl.rollout import canary, steps, waves
from configctl.rollout import record as rec
from configctl.rollout.record import EntitiesMoved, TakenOver
from configctl.rollout.steps import Observer, Report, Run
from configctl.store import ConfigStore

ABORT_ATTEMPTS = 5
"""A rollout still running moves its record now and then; an abort re-reads it this many times
(:func:`configctl.retrying.conflict_retry`)."""


def abort(
    store: ConfigStore,
    rollout_id: str,
    *,
    force: bool = False,
    reason: str = "",
    observer: Observer | None = None,
) -> Report:
    """Restore every entity the rollout wrote to its exact previous bytes and end it as aborted.

    Returns a report whose outcome is ``aborted``; one whose outcome is ``stopped`` when an entity
    moved since the rollout wrote it (nothing restored then, unless ``force``).
    """
    try:
        return retrying.conflict_retry(ABORT_ATTEMPTS)(
            _abort_once, store, rollout_id, force, reason, observer
        )
    except retrying.RetriesExhausted:
        raise Conflict(
            f"rollout {rollout_id} kept changing while aborting it; try again (configctl rollout show {rollout_id})"
        ) from None


def _abort_once(
    store: ConfigStore, rollout_id: str, force: bool, reason: str, observer: Observer | None
) -> Report:
    """One try of :func:`abort`, from a fresh read of the record; the record moving meanwhile is a retry.

    With ``force`` a rollout that cannot be read whole is salvaged (``store.rollouts.salvage``).
    """
    loaded = store.rollouts.salvage(rollout_id) if force else store.rollouts.load(rollout_id)
    record = loaded.record
    if not record.open:
        raise Conflict(f"rollout {rollout_id} already ended ({record.state}); there is nothing to abort")
    active = store.rollouts.resume(loaded)
    work = Run(active, observer)
    work.title = f"abort of rollout {rollout_id}"
    why = f"aborted by {store.identity}" + (f": {reason}" if reason else "")
    if loaded.problems:
        work.report.extra = {"unreadable": list(loaded.problems), "not_restored": list(loaded.lost)}
    try:
        active.note(
            f"{why}; restoring what it wrote" + _salvaged(loaded.problems),
            state=rec.ABORTING,
            failure=record.failure or why,
        )
        work.report.went_out = sorted(e.path for e in active.written())
        work.report.restored = waves.revert(
            work,
            reason=f"rollout {rollout_id}: {'canary' if record.kind == rec.CANARY else 'wave'} aborted, "
            "previous bytes restored" + (f": {reason}" if reason else ""),
            failure=record.failure or why,
            force=force,
        )
    except TakenOver:
        raise retrying.RetryNow() from None
    except EntitiesMoved as exc:
        stuck = f"{exc}; nothing was restored; check them, then abort with --force to restore anyway"
        active.release(f"abort stopped: {stuck}", {"state": rec.STOPPED, "failure": stuck})
        work.report.outcome = steps.STOPPED
        work.report.failure = stuck
        return work.report
    work.report.outcome = steps.ABORTED
    work.report.failure = record.failure
    return work.report


def _salvaged(problems: list[str]) -> str:
    """The event that says an abort --force ran on a rollout that could not be read whole."""
    if not problems:
        return ""
    shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
    return f" (with --force, from what could be read: unreadable {one_line(shown, 1000)})"


def resume(store: ConfigStore, rollout_id: str, *, observer: Observer | None = None) -> Report:
    """Take the rollout over and run it on from the step its record reached."""
    loaded = store.rollouts.load(rollout_id)
    record = loaded.record
    if not record.open:
        raise Conflict(f"rollout {rollout_id} already ended ({record.state}); there is nothing to resume")
    if record.state == rec.PREPARING:
        raise Conflict(
            f"rollout {rollout_id} died while its plan was being recorded (nothing was written): "
            f"configctl rollout abort {rollout_id} clears it"
        )
    if record.state == rec.ABORTING:
        raise Conflict(
            f"rollout {rollout_id} was being aborted; finish that with configctl rollout abort {rollout_id}"
        )
    if loaded.owner is not None:
        raise Conflict(_running(rollout_id, loaded.owner))
    active = store.rollouts.resume(loaded)
    try:
        active.take_over(f"resumed by {store.identity} at {record.step.get('step')} {record.wave}")
    except (TakenOver, Conflict):
        found = store.rollouts.load(rollout_id)
        raise Conflict(_running(rollout_id, found.owner or {})) from None
    if record.kind == rec.CANARY:
        return canary.run(active, observer)
    return waves.run(active, observer)


def _running(rollout_id: str, owner: dict) -> str:
    who = f"pid {owner.get('pid')} on {owner.get('host')}" if owner else "another process"
    return (
        f"rollout {rollout_id} is still run by {who}; if that process is dead, try again once the store "
        "lets go of it (ZooKeeper: when its session expires; KRaft: at once, from its own host), or abort "
        f"it: configctl rollout abort {rollout_id}"
    )
