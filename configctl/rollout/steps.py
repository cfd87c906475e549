"""What every rollout step shares: judging it (wait, soak, check), telling the operator, the report.

A step (a canary, or one wave) is judged in three parts, each of which can fail it:

1. every broker that must run it has applied it (the wait on the brokers' state nodes):
   a refusal (rejected, ignored, unreadable) or the wait timing out fails the step;
2. the soak: for ``--soak`` no new problem appears on those brokers and none of their listeners stops;
3. the health check (``--check``) exits 0 within its timeout.

The runners (:mod:`configctl.rollout.canary`, :mod:`configctl.rollout.waves`) call :func:`judge`
and report through :class:`Run`, which keeps the steps for the JSON document and tells an
observer (the CLI's live view) what is happening.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from configctl import fleet
from configctl.entities import Entity
from configctl.rollout import brokerwait, health, reportsoak
from configctl.rollout.parsing import format_duration
from configctl.rollout.record import Record, TakenOver
from configctl.store import ActiveRollout, Committed, ConfigStore

NEEDS = ("versioned_writes", "rollout_records")
"""What a rollout needs of its store (:class:`configctl.store.Capabilities`), and a way to judge
each step: the listeners' published states (``watches`` and ``fleet_state``, ZooKeeper) or each
broker asked (``broker_reports``, KRaft). A store without ``extra_nodes`` still runs one, writing
the record before the entities instead of with them."""


def require(store: ConfigStore, what: str) -> None:
    """Refuse ``what`` (a canary, waves) in one line unless ``store`` can keep and judge a rollout."""
    store.capabilities.require(*NEEDS, what=what)
    if not store.capabilities.broker_reports:
        store.capabilities.require("watches", "fleet_state", what=what)


def asks_brokers(store: ConfigStore) -> bool:
    """Whether a step is judged by asking each broker (KRaft) rather than by the listeners' states."""
    return store.capabilities.broker_reports


# outcomes of a rollout, and the exit status each earns (docs/rollout.md)
PROMOTED = "promoted"
COMPLETED = "completed"
ABORTED = "aborted"
STOPPED = "stopped"


@dataclass(frozen=True)
class Progress:
    """What the rollout is doing now, for a live view (or one printed line when ``line`` is set)."""

    rollout_id: str
    title: str
    activity: str
    brokers: tuple[fleet.BrokerOutcome, ...] = ()
    soak_left: float | None = None
    line: str | None = None


Observer = Callable[[Progress], None]


@dataclass
class Report:
    """How a rollout ended, and every step on the way (the ``-o json`` document)."""

    id: str
    kind: str
    outcome: str = ""
    failure: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    went_out: list[str] = field(default_factory=list)
    not_out: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    fleet: fleet.WaitResult | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "outcome": self.outcome,
            "failure": self.failure,
        }
        document.update(self.extra)
        document.update(
            {
                "went_out": self.went_out,
                "not_out": self.not_out,
                "restored": self.restored,
                "steps": self.steps,
                "rollout": self.fleet.to_json() if self.fleet is not None else None,
            }
        )
        return document


class Run:
    """One process's work on a rollout: the active record, the report, and the observer."""

    def __init__(self, active: ActiveRollout, observer: Observer | None = None) -> None:
        self.active = active
        self.observer = observer
        self.report = Report(active.id, active.record.kind)
        self.title = ""

    @property
    def record(self) -> Record:
        return self.active.record

    def say(
        self,
        activity: str,
        line: str | None = None,
        *,
        brokers: Sequence[fleet.BrokerOutcome] = (),
        soak_left: float | None = None,
    ) -> None:
        if self.observer is not None:
            self.observer(Progress(self.active.id, self.title, activity, tuple(brokers), soak_left, line))

    def step(self, document: dict[str, Any]) -> None:
        self.report.steps.append(document)

    def wrote(self, step: dict[str, Any], committed: Sequence[Committed]) -> None:
        """Report a write of ``step``: the entities it committed and their change numbers."""
        self.step(
            {
                **step,
                "part": "write",
                "entities": [c.entity.path for c in committed],
                "change_numbers": [c.change_number for c in committed],
            }
        )

    def history_reason(self, what: str) -> str:
        """The reason in each entity's history: names the rollout and the step (``canary``/``wave``)."""
        reason = self.record.reason
        return f"rollout {self.active.id}: {what}" + (f": {reason}" if reason else "")


def to_follow(committed: Sequence[Committed], entities: Sequence[Entity], run: Run) -> list[fleet.Written]:
    """The writes to wait for; when their change numbers are unknown (a resumed rollout, a write
    settled after a lost connection), every change since the rollout began counts for them."""
    if committed and all(c.change_number is not None for c in committed):
        return [fleet.Written(c.entity, int(c.change_number)) for c in committed]  # type: ignore[arg-type]
    baseline = run.record.baseline_change
    floor = 0 if baseline is None else baseline + 1
    latest = fleet.latest_change_number(run.active.store)
    written = [fleet.Written(e, floor) for e in entities]
    if written:
        written.append(fleet.Written(entities[0], floor if latest is None else max(latest, floor)))
    return written


def check_env(
    run: Run, step: dict[str, Any], brokers: Sequence[int], written: Sequence[fleet.Written]
) -> dict[str, str]:
    """What a health check gets in its environment (documented in docs/rollout.md)."""
    numbers = sorted({w.change_number for w in written})
    env = {
        "CONFIGCTL_ROLLOUT": run.active.id,
        "CONFIGCTL_ROLLOUT_KIND": run.record.kind,
        "CONFIGCTL_ROLLOUT_STEP": str(step.get("step", "")),
        "CONFIGCTL_BROKERS": ",".join(str(b) for b in brokers),
        "CONFIGCTL_CHANGE": str(numbers[-1]) if numbers else "",
        "CONFIGCTL_CHANGES": ",".join(str(n) for n in numbers),
        "CONFIGCTL_ENTITIES": ",".join(dict.fromkeys(w.entity.path for w in written)),
        "CONFIGCTL_ZOOKEEPER": run.active.store.location,
    }
    if run.record.canary is not None:
        env["CONFIGCTL_CANARY_BROKERS"] = ",".join(str(b) for b in run.record.canary.brokers)
    if "wave" in step:
        env["CONFIGCTL_WAVE"] = str(step["wave"])
        env["CONFIGCTL_WAVES"] = str(run.record.waves)
    return env


def judge(
    run: Run, written: Sequence[fleet.Written], brokers: Sequence[int] | None, step: dict[str, Any]
) -> str | None:
    """Wait, soak and check one step; the reason it failed, or None when it is healthy.

    Ctrl-C during any of it fails the step (the runner then undoes it, as for any failure).
    """
    try:
        return _judge(run, written, brokers, step)
    except KeyboardInterrupt:
        return "interrupted (Ctrl-C)"


def _judge(
    run: Run, written: Sequence[fleet.Written], brokers: Sequence[int] | None, step: dict[str, Any]
) -> str | None:
    options = run.record.options
    store = run.active.store
    run.say("waiting", f"{run.title}: waiting for the brokers to apply it")
    result = brokerwait.wait_written(
        store,
        written,
        options.wait_seconds,
        brokers=brokers,
        on_update=lambda outcomes: run.say("waiting", brokers=outcomes),
    )
    run.step(
        {
            **step,
            "part": "wait",
            "timed_out": result.timed_out,
            "change_number": result.change_number,
            "brokers": [b.to_json() for b in result.brokers],
        }
    )
    run.say("waiting", brokers=result.brokers)
    if result.refused:
        first = result.refused[0]
        return first.refusal or f"broker {first.broker_id} refused it ({first.status}: {first.reason})"
    if result.computed:  # its listener applied it without asking its Kafka broker: not proven
        ids = ", ".join(str(b.broker_id) for b in result.computed)
        return (
            f"broker(s) {ids}: computed only, their Kafka broker was not asked, so it is not proven applied"
        )
    gone = [b for b in result.brokers if b.kafka_registered is False]
    if gone:
        ids = ", ".join(str(b.broker_id) for b in gone)
        return f"broker(s) {ids}: {fleet.NOT_REGISTERED}, so nothing runs the change there"
    if result.pending:
        ids = ", ".join(str(b.broker_id) for b in result.pending)
        return f"broker(s) {ids} had not applied it after {options.wait_seconds:g}s"
    ids = [b.broker_id for b in result.brokers]
    applied = ", ".join(str(i) for i in ids) or "none live"
    run.say("waiting", f"{run.title}: applied by broker(s) {applied}", brokers=result.brokers)
    if options.soak_seconds > 0:
        run.active.note(
            f"{run.title}: applied by broker(s) {applied}; soaking {format_duration(options.soak_seconds)}",
            step={**step, "activity": "soaking"},
        )
        run.say("soaking", f"{run.title}: soaking {format_duration(options.soak_seconds)}")
        soaked = _soak(run, written, ids, result.brokers)
        run.step({**step, "part": "soak", **{k: v for k, v in soaked.to_json().items() if k != "step"}})
        if soaked.interrupted_by_record:
            found = store.rollouts.record(run.active.id)
            raise TakenOver(found[0] if found else None)
        if not soaked.ok:
            return soaked.failure
    if options.check:
        run.active.note(f"{run.title}: running the check", step={**step, "activity": "checking"})
        run.say("checking", f"{run.title}: running the check: {options.check}")
        env = check_env(run, step, ids, written)
        checked = health.run_check(options.check, env, options.check_timeout_seconds)
        run.step({**step, "part": "check", **{k: v for k, v in checked.to_json().items() if k != "step"}})
        if not checked.ok:
            return checked.failure
        run.say("checking", f"{run.title}: the check passed ({checked.seconds:.1f}s)")
    return None


def _soak(
    run: Run, written: Sequence[fleet.Written], ids: Sequence[int], shown: Sequence[fleet.BrokerOutcome]
) -> health.SoakResult:
    """The soak of a step's brokers: their listeners' problems watched (ZooKeeper), or each broker
    asked again and again (KRaft: :mod:`configctl.rollout.reportsoak`)."""
    store = run.active.store
    seconds = run.record.options.soak_seconds

    def tick(left: float) -> None:
        run.say("soaking", soak_left=left, brokers=shown)

    if asks_brokers(store):
        expected = brokerwait.expected_after_write(store, [w.entity for w in written])
        return reportsoak.soak_reported(
            store,
            expected,
            ids,
            seconds,
            rollout_id=run.active.id,
            record_version=run.active.version,
            on_tick=tick,
        )
    return health.soak(
        store,
        ids,
        seconds,
        health.problems_now(store, ids),
        rollout_id=run.active.id,
        record_version=run.active.version,
        on_tick=tick,
    )
