"""A canary for a cluster-wide broker change (see docs/rollout.md): prove it on a few brokers, then promote or abort.

Kafka can already run a broker-wide change on one broker alone: a per-broker override
(``brokers/<id>``) beats ``brokers/<default>``. A canary uses exactly that:

1. the change is written as overrides on the canary brokers, in ONE version-checked multi with the
   undo record (their exact previous bytes);
2. each canary broker must apply it (see docs/reference/state-and-fleet-nodes.md), stay free of new problems for the soak, and the
   health check must pass;
3. promotion is ONE multi: the change set at ``brokers/<default>`` and every canary broker's node
   given back its exact previous bytes (the override was only ever a test); then the fleet is
   followed as ``--wait`` does;
4. any failure aborts: ONE multi restores the canary brokers' exact previous bytes, and
   ``brokers/<default>`` is never touched.

A canary broker that already overrides a changed key (or one of its synonyms: ``log.retention.hours``
hides a default ``log.retention.ms``) is refused: the override would prove nothing about the
default, since that broker would keep its own value after the promotion. ``--delete-config`` is
refused too: a per-broker override can set a key but cannot express "no value at the default"
(to canary a removal, canary the value the brokers would fall back to, then delete it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from configctl import catalogue, fleet, impact, writer
from configctl.changes import ConfigChange, KeyDiff, apply_change, diff
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import Conflict, InvalidInput
from configctl.handlers import validate
from configctl.rollout import brokerwait, refused, steps
from configctl.rollout import record as rec
from configctl.rollout.record import CanaryPlan, EntitiesMoved, Options, Planned, Record, TakenOver
from configctl.rollout.steps import Observer, Report, Run
from configctl.store import ActiveRollout, Change, ConfigStore

DEFAULT_BROKERS = Entity(EntityType.BROKERS, DEFAULT)


@dataclass(frozen=True)
class CanaryStart:
    """A canary checked and ready to go: what it writes where, and what the default becomes."""

    brokers: tuple[int, ...]
    add: dict[str, str]
    default_before: dict[str, str]
    default_version: int
    default_target: dict[str, str]
    diff: tuple[KeyDiff, ...]
    planned: tuple[Planned, ...]


def prepare(
    store: ConfigStore,
    entity: Entity,
    change: ConfigChange,
    brokers: Sequence[int],
    *,
    reason: str = "",
    allow_custom: bool = False,
    allow_running_brokers: bool = False,
    if_version: int | None = None,
) -> CanaryStart | None:
    """Check everything a canary needs before anything is written; None when nothing would change.

    Raises :class:`InvalidInput` for a canary that cannot prove anything (a broker that overrides
    a changed key, a broker with no live listener, a deletion) and the write path's own refusals
    (validation, Kafka's rules, cross-key rules and policies) for the canary writes and the promotion.
    """
    if entity != DEFAULT_BROKERS:
        raise InvalidInput("--canary is for cluster-wide broker changes: use it with --broker-defaults")
    if change.delete:
        raise InvalidInput(
            "--canary cannot test --delete-config: a per-broker override can set a key but not express "
            "'no value at <default>'; canary the value the brokers would fall back to, or delete without --canary"
        )
    steps.require(store, "a canary")
    if steps.asks_brokers(store):
        registered = store.running_brokers() or set()
        missing = [b for b in brokers if b not in registered]
        if missing:
            raise InvalidInput(
                f"canary broker(s) {', '.join(map(str, missing))} are not registered in the cluster: a canary "
                "must be a running broker that reports what it applies (configctl status)"
            )
    else:
        live = fleet.broker_states(store)
        missing = [b for b in brokers if b not in live]
        if missing:
            raise InvalidInput(
                f"canary broker(s) {', '.join(map(str, missing))} have no live listener: a canary must be a "
                "running broker whose listener reports what it applied (configctl status)"
            )
    canaries = [Entity(EntityType.BROKERS, str(b)) for b in brokers]
    found = store.read_many([DEFAULT_BROKERS, *canaries])
    configs = [stored.config for stored in found]
    default_version = found[0].version
    if if_version is not None and default_version != if_version:
        raise Conflict(
            f"the default broker is at version {default_version}, not {if_version} (--if-version); nothing written"
        )
    default_before = configs[0]
    default_target = apply_change(default_before, change, what=DEFAULT_BROKERS.display)
    validate.check(DEFAULT_BROKERS, default_target, changed=list(change.add), allow_custom=allow_custom)
    changes = tuple(diff(default_before, default_target))
    if not changes:
        return None
    add = {d.name: d.new for d in changes if d.new is not None}
    refused = []
    for broker_id, config in zip(brokers, configs[1:], strict=True):
        hidden = sorted({k for name in add for k in catalogue.synonym_group(name)} & set(config))
        if hidden:
            refused.append(f"broker {broker_id} already overrides {', '.join(hidden)}")
    if refused:
        raise InvalidInput(
            f"canary refused: {'; '.join(refused)} (brokers/<id> beats <default>, so the canary would prove "
            "nothing about the default); pick other canary brokers, or remove those overrides first"
        )
    planned = []
    canary_writes = []
    for entity_b, config, stored in zip(canaries, configs[1:], found[1:], strict=True):
        target = {**config, **add}
        validate.check(entity_b, target, changed=list(add), allow_custom=allow_custom)
        planned.append(Planned(entity_b, 1, target, stored.version))
        canary_writes.append(impact.Write(entity_b, config, target))
    writer.check_kafka_rules(store, [DEFAULT_BROKERS, *canaries], allow_running_brokers=allow_running_brokers)
    impact.check_write(store, canary_writes, reason=reason, identity=store.identity)
    impact.check_write(
        store,
        [impact.Write(DEFAULT_BROKERS, default_before, default_target)],
        reason=reason,
        identity=store.identity,
    )
    return CanaryStart(
        tuple(brokers), add, default_before, default_version, default_target, changes, tuple(planned)
    )


def start(
    store: ConfigStore,
    prepared: CanaryStart,
    options: Options,
    *,
    reason: str = "",
    observer: Observer | None = None,
) -> Report:
    """Record the canary (refused if an open rollout holds one of its entities), then run it."""
    active = store.rollouts.open(
        prepared.planned,
        kind=rec.CANARY,
        reason=reason,
        options=options,
        waves=1,
        entities=(DEFAULT_BROKERS.path,),
        step={"step": "canary", "wave": 1, "activity": "writing"},
        canary=CanaryPlan(prepared.brokers, prepared.add, prepared.default_target, prepared.default_version),
        summary=f"canary on broker(s) {_ids(prepared.brokers)}",
    )
    return run(active, observer)


def run(active: ActiveRollout, observer: Observer | None = None) -> Report:
    """Run (or resume) a canary from the step its record reached, to promoted, aborted or stopped."""
    work = Run(active, observer)
    canary = active.record.canary
    assert canary is not None
    work.title = f"canary on broker{'s' if len(canary.brokers) > 1 else ''} {_ids(canary.brokers)}"
    work.report.extra = {
        "entity_path": DEFAULT_BROKERS.path,
        "canary_brokers": list(canary.brokers),
        "changes": {"add": dict(sorted(canary.add.items()))},
    }
    try:
        _run(work, canary)
    except TakenOver as exc:
        _taken_over(work, exc)
    return work.report


def _run(work: Run, canary: CanaryPlan) -> None:
    active = work.active
    step = {"step": "canary", "wave": 1}
    planned = list(active.planned)
    written = active.written()
    todo = [p for p in planned if p.entity not in written]
    committed = []
    if todo:
        work.say("writing", f"{work.title}: writing the override{'s' if len(todo) > 1 else ''}")
        try:
            committed = refused.first_write(
                work,
                lambda: active.write(
                    todo,
                    reason=work.history_reason(f"canary on broker(s) {_ids(canary.brokers)}"),
                    text=refused.event_text(
                        work,
                        f"canary written on broker(s) {_ids(canary.brokers)}",
                        f"canary going out on broker(s) {_ids(canary.brokers)} (recorded before the brokers write it)",
                    ),
                    step={**step, "activity": "waiting"},
                ),
            )
        except EntitiesMoved as exc:
            _abort(work, f"{exc} (a concurrent writer); nothing of the canary was written")
            return
        work.wrote(step, committed)
    follow = steps.to_follow(committed, [p.entity for p in planned], work)
    failure = steps.judge(work, follow, list(canary.brokers), step)
    if failure is None:
        _promote(work, canary)
    else:
        _abort(work, f"the canary failed: {failure}")


def _promote(work: Run, canary: CanaryPlan) -> None:
    active = work.active
    work.say("promoting", f"{work.title}: promoting to brokers/<default>")
    default = active.current(DEFAULT_BROKERS)
    version = default.version
    if version != canary.default_version:
        _abort(
            work,
            f"brokers/<default> changed while the canary ran (version {version}, the canary started from "
            f"{canary.default_version}); nothing was promoted",
        )
        return
    if default.problem is not None:
        raise InvalidInput(default.problem)
    promote = Change(DEFAULT_BROKERS, dict(canary.default_target), version, previous=default.config)
    try:
        committed = active.restore(
            list(active.undo.values()),
            reason=work.history_reason("canary promoted"),
            text="promoted: set at brokers/<default>, canary overrides removed (previous bytes restored)",
            changes={"state": rec.PROMOTED, "step": {"step": "promote", "wave": 1, "activity": "done"}},
            before=[promote],
            finish=True,
        )
    except EntitiesMoved as exc:
        if any(e == DEFAULT_BROKERS for e in exc.entities):
            _abort(
                work, "brokers/<default> changed while promoting (a concurrent writer); nothing was promoted"
            )
        else:
            _stop(work, f"cannot promote: {exc}")
        return
    work.report.outcome = steps.PROMOTED
    work.report.went_out = [DEFAULT_BROKERS.path]
    work.report.restored = [c.entity.path for c in committed if c.entity != DEFAULT_BROKERS]
    work.wrote({"step": "promote"}, committed)
    work.say("promoted", "promoted: brokers/<default> written; waiting for the fleet")
    written = steps.to_follow(committed, [c.entity for c in committed], work)
    work.report.fleet = brokerwait.wait_written(
        active.store,
        written,
        active.record.options.wait_seconds,
        on_update=lambda outcomes: work.say("promoted", brokers=outcomes),
    )


def _abort(work: Run, failure: str) -> None:
    """Give the canary brokers their exact previous bytes back in ONE multi; the default is untouched."""
    active = work.active
    work.report.failure = failure
    work.say("aborting", f"aborting: {failure}")
    chunks = list(active.undo.values())
    try:
        if chunks:
            committed = active.restore(
                chunks,
                reason=work.history_reason("canary aborted, previous bytes restored"),
                text=f"aborted: {failure}; canary brokers restored to their previous bytes",
                changes={
                    "state": rec.ABORTED,
                    "failure": failure,
                    "step": {"step": "abort", "activity": "done"},
                },
                finish=True,
            )
            work.wrote({"step": "abort"}, committed)
            work.report.restored = sorted({u.entity.path for c in chunks for u in c.entries})
        else:
            active.finish(
                f"aborted: {failure}; nothing had been written", {"state": rec.ABORTED, "failure": failure}
            )
    except EntitiesMoved as exc:
        _stop(work, f"{failure}; and the canary could not be undone: {exc}")
        return
    work.report.outcome = steps.ABORTED


def _stop(work: Run, failure: str) -> None:
    """Leave the rollout open, its record saying what is left (exit 12)."""
    work.report.failure = failure
    work.report.outcome = steps.STOPPED
    work.report.went_out = sorted({u.entity.path for c in work.active.undo.values() for u in c.entries})
    work.report.not_out = [DEFAULT_BROKERS.path]
    work.active.release(f"stopped: {failure}", {"state": rec.STOPPED, "failure": failure})


def _taken_over(work: Run, exc: TakenOver) -> None:
    current = work.active.store.rollouts.after_abort(work.active.id, exc.current)
    if current is not None and current.state == rec.ABORTED:
        work.report.outcome = steps.ABORTED
        work.report.failure = f"aborted by someone else ({_last_event(current)})"
        work.report.restored = sorted(p.entity.path for p in work.active.planned)
    else:
        work.report.outcome = steps.STOPPED
        work.report.failure = str(TakenOver(current))


def _last_event(record: Record) -> str:
    return str(record.events[-1].get("text")) if record.events else record.state


def _ids(brokers: Sequence[int]) -> str:
    return ",".join(str(b) for b in brokers)


def describe(prepared: CanaryStart) -> Mapping[str, Any]:
    """The canary as ``--dry-run`` shows it."""
    return {
        "canary_brokers": list(prepared.brokers),
        "add": dict(sorted(prepared.add.items())),
        "default_version": prepared.default_version if prepared.default_version >= 0 else None,
        "canary_entities": [p.entity.path for p in prepared.planned],
    }
