"""Waves for many entities (see docs/rollout.md): a plan goes out a slice at a time, each proven before the next.

The plan's entities go out in the plan's own order (entity type in the usual order, then name:
``<default>`` first, brokers by id, a user before its clients), cut into waves by ``--waves N``
(N waves as equal as possible, the smaller first) or ``--waves P%`` (P percent of the entities
per wave). Each wave is written in as few multis as ZooKeeper's request size allows, each with
its undo record; then every live broker must apply it, the soak must pass and the health check
must exit 0 before the next wave goes out.

The first failure stops the rollout, naming what went out and what did not. With
``--revert-on-failure`` every entity already written gets its exact previous bytes back
(exit 11); without it the rollout is left open (exit 12) for ``configctl rollout abort`` (undo)
or ``resume`` (judge the failed wave again, then go on).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from configctl.desired.apply import StalePlan, _phases, moved_since
from configctl.desired.plan import Plan, listed
from configctl.rollout import record as rec
from configctl.rollout import refused, steps
from configctl.rollout.parsing import WaveSpec
from configctl.rollout.record import EntitiesMoved, Options, Planned, TakenOver, waves_of
from configctl.rollout.steps import Observer, Report, Run
from configctl.store import ActiveRollout, Change, ConfigStore


def prepare(store: ConfigStore, plan: Plan, spec: WaveSpec) -> list[Planned]:
    """The plan's writes, each with its wave; :class:`StalePlan` if the state moved since the plan."""
    steps.require(store, "a rollout in waves")
    if plan.seen:
        moved = moved_since(store, plan.seen)
        if moved:
            raise StalePlan(
                f"the state moved since the plan: {listed([e.label for e in moved])} changed; "
                "nothing was written; re-run plan",
                [],
                [e.entity for e in plan.entities],
            )
    waves = spec.split(list(plan.entities))
    return [
        Planned(item.entity, number, dict(item.target), item.version)
        for number, wave in enumerate(waves, start=1)
        for item in wave
    ]


def start(
    store: ConfigStore,
    planned: Sequence[Planned],
    options: Options,
    *,
    reason: str = "",
    observer: Observer | None = None,
) -> Report:
    """Record the rollout (refused if an open rollout holds one of its entities), then run it."""
    count = max((p.wave for p in planned), default=0)
    active = store.rollouts.open(
        planned,
        kind=rec.WAVES,
        reason=reason,
        options=options,
        waves=count,
        step={"step": "wave", "wave": 1, "activity": "writing"},
        summary=f"{len(planned)} entities in {count} waves",
    )
    return run(active, observer)


def run(active: ActiveRollout, observer: Observer | None = None) -> Report:
    """Run (or resume) a wave rollout from the wave its record reached."""
    work = Run(active, observer)
    work.report.extra = {"waves": _waves_json(active, None)}
    try:
        _run(work)
    except TakenOver as exc:
        current = active.store.rollouts.after_abort(active.id, exc.current)
        aborted = current is not None and current.state == rec.ABORTED
        work.report.outcome = steps.ABORTED if aborted else steps.STOPPED
        if aborted:
            work.report.restored = sorted(e.path for e in active.written())
        work.report.failure = (
            f"the rollout was taken over by someone else (now {current.state if current else 'gone'})"
        )
    if not work.report.restored:
        _went_out(work)
    return work.report


def _run(work: Run) -> None:
    active = work.active
    total = active.record.waves
    waves = waves_of(active.planned)
    for number in range(active.record.wave, total + 1):
        items = waves[number - 1]
        work.title = f"wave {number} of {total} ({len(items)} entit{'y' if len(items) == 1 else 'ies'})"
        step = {"step": "wave", "wave": number}
        written = active.written()
        todo = [p for p in items if p.entity not in written]
        committed = []
        if todo:
            work.say("writing", f"{work.title}: writing")
        try:
            for batch in _batches(active, todo):
                entities = f"{len(batch)} entit{'y' if len(batch) == 1 else 'ies'}"
                committed += refused.first_write(
                    work,
                    partial(
                        active.write,
                        batch,
                        reason=work.history_reason(f"wave {number} of {total}"),
                        text=refused.event_text(
                            work,
                            f"wave {number} of {total}: wrote {entities}",
                            f"wave {number} of {total}: sending {entities} (recorded before the brokers write them)",
                        ),
                        step={**step, "activity": "writing"},
                    ),
                )
        except EntitiesMoved as exc:
            _fail(work, number, f"{exc} (a concurrent writer)")
            return
        if committed:
            work.wrote(step, committed)
        follow = steps.to_follow(committed, [p.entity for p in items], work)
        failure = steps.judge(work, follow, None, step)
        if failure is not None:
            _fail(work, number, failure)
            return
        if number < total:
            active.note(
                f"wave {number} of {total} is healthy",
                step={"step": "wave", "wave": number + 1, "activity": "writing"},
            )
    active.finish(
        f"completed: {len(active.planned)} entities in {total} waves",
        {"state": rec.COMPLETED, "step": {"step": "wave", "wave": total, "activity": "done"}},
    )
    work.report.outcome = steps.COMPLETED
    work.say("completed", f"completed: {len(active.planned)} entities in {total} waves")


def _fail(work: Run, number: int, failure: str) -> None:
    active = work.active
    total = active.record.waves
    message = f"wave {number} of {total} failed: {failure}"
    work.report.failure = message
    _went_out(work)
    if not active.record.options.revert_on_failure:
        work.say("stopped", f"stopped: {message}")
        stopped = {"step": "wave", "wave": number, "activity": "failed"}
        active.release(f"stopped: {message}", {"state": rec.STOPPED, "failure": message, "step": stopped})
        work.report.outcome = steps.STOPPED
        return
    work.say("reverting", f"reverting: {message}")
    try:
        work.report.restored = revert(
            work, reason=work.history_reason("wave revert, previous bytes restored"), failure=message
        )
    except EntitiesMoved as exc:
        stuck = f"{message}; and the revert stopped: {exc}"
        work.report.failure = stuck
        active.release(f"stopped: {stuck}", {"state": rec.STOPPED, "failure": stuck})
        work.report.outcome = steps.STOPPED
        return
    work.report.outcome = steps.ABORTED


def revert(work: Run, *, reason: str, failure: str | None, force: bool = False) -> list[str]:
    """Restore every entity the rollout wrote, newest first, and end it as aborted; the paths restored."""
    active = work.active
    chunks = sorted(active.undo.values(), key=lambda c: c.index, reverse=True)
    restored = [u.entity.path for c in chunks for u in c.entries]
    groups = active.restore_groups(chunks)
    if not groups:
        active.finish(
            f"aborted: {failure or 'by request'}; nothing had been written",
            {"state": rec.ABORTED, "failure": failure},
        )
        return []
    for number, group in enumerate(groups, start=1):
        last = number == len(groups)
        committed = active.restore(
            group,
            reason=reason,
            text=f"restored {sum(len(c.entries) for c in group)} entities to their previous bytes"
            + (f" ({number} of {len(groups)})" if len(groups) > 1 else ""),
            changes={"state": rec.ABORTED if last else rec.ABORTING, "failure": failure}
            | ({"step": {"step": "abort", "activity": "done"}} if last else {}),
            force=force,
            finish=last,
        )
        work.wrote({"step": "revert"}, committed)
    return sorted(restored)


def _batches(active: ActiveRollout, items: Sequence[Planned]) -> list[list[Planned]]:
    """The multis a wave is written in: users created by it before their clients (as ``apply`` does:
    a client's write creates its user's node), each within the store's transaction size."""
    if not items:
        return []
    by_entity = {p.entity: p for p in items}
    phases = _phases([Change(p.entity, dict(p.target), p.expected_version) for p in items])
    return [batch for phase in phases for batch in active.write_batches([by_entity[c.entity] for c in phase])]


def _went_out(work: Run) -> None:
    """What went out (written, not undone) and what did not, in plan order."""
    active = work.active
    written = {e.path for e in active.written()}
    if work.report.outcome == steps.COMPLETED:
        written = {p.entity.path for p in active.planned}
    work.report.went_out = [p.entity.path for p in active.planned if p.entity.path in written]
    work.report.not_out = [p.entity.path for p in active.planned if p.entity.path not in written]
    work.report.extra = {"waves": _waves_json(active, work.report)}


def _waves_json(active: ActiveRollout, report: Report | None) -> list[dict[str, object]]:
    went = set(report.went_out) if report is not None else set()
    return [
        {
            "wave": number,
            "entities": [p.entity.path for p in wave],
            "went_out": all(p.entity.path in went for p in wave),
        }
        for number, wave in enumerate(waves_of(active.planned), start=1)
    ]
