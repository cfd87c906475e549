"""Safe rollout on the command line (see docs/rollout.md): ``alter --canary``, ``apply --waves``, ``configctl rollout``.

``alter`` and ``apply`` take the rollout options through :func:`canary_options` and
:func:`wave_options` and hand over to :func:`canary_alter` and :func:`apply_in_waves` when they
are given; ``configctl rollout list|show|abort|resume`` finishes rollouts whose process died.

On a terminal a live view on stderr says what the rollout is doing (the step, the brokers'
statuses, the soak time left); piped, one line per event; with ``-o json`` one document at the end.
Exit statuses: 0 promoted or completed (and, after a promotion, every live broker applied it;
9 or 10 otherwise, as ``--wait``), 11 aborted with every entity restored, 12 stopped with the
rollout left open (its record says what is left to do), 5 refused because an open rollout holds
one of the entities, 2 a rollout option whose value is not one (:mod:`.rollout_options`).
``rollout abort --force`` ends a rollout that cannot be read whole, and exits 8 when part of its
undo could not be read (named).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import click
from rich.console import Console, Group
from rich.table import Table

from configctl import fleet
from configctl.changes import ConfigChange
from configctl.cli.context import open_store
from configctl.cli.options import global_options
from configctl.cli.render import after_commit, diff_json, diff_table, preview, progress, safe, show
from configctl.cli.rollout_options import DEFAULT_CHECK_TIMEOUT, given_options
from configctl.cli.waiting import DEFAULT_WAIT
from configctl.desired.plan import listed
from configctl.documents.rollouts import RolloutListDocument, RolloutShowDocument
from configctl.entities import Entity
from configctl.errors import one_line
from configctl.rollout import canary, control, outcome, steps, waves
from configctl.rollout.parsing import check_rollout_id, format_duration
from configctl.rollout.record import Options, Record
from configctl.rollout.steps import Progress, Report

_STYLES = {fleet.APPLIED: "green", fleet.PENDING: "yellow"}


def _options(wait: float | None) -> Options:
    given = given_options()
    return Options(
        soak_seconds=given.get("soak", 0.0),
        check=given.get("check") or None,
        check_timeout_seconds=given.get("check_timeout", DEFAULT_CHECK_TIMEOUT),
        wait_seconds=DEFAULT_WAIT if wait is None else wait,
        revert_on_failure=bool(given.get("revert_on_failure")),
    )


# -- alter --canary ---------------------------------------------------------------------------------


def canary_alter(entity: Entity, change: ConfigChange, reason: str, kwargs: dict[str, Any]) -> None:
    """``alter --broker-defaults ... --canary IDS``: the hand-off from ``alter``."""
    given = given_options()
    brokers = given["canary"]
    options = _options(kwargs.get("wait"))
    with open_store() as store:
        prepared = canary.prepare(
            store,
            entity,
            change,
            brokers,
            reason=reason,
            allow_custom=kwargs.get("allow_custom_config", False),
            allow_running_brokers=kwargs.get("allow_running_brokers", False),
            if_version=kwargs.get("if_version"),
        )
        if prepared is None:
            show(_Nothing(entity))
            return
        if kwargs.get("dry_run"):
            show(_CanaryPlanView(prepared, options))
            return
        preview(lambda out: out.print(_CanaryPlanView(prepared, options).table()))
        with observing() as observer:
            report = outcome.guarded(
                lambda: canary.start(store, prepared, options, reason=reason, observer=observer)
            )
    show_and_exit(report)


@dataclass(frozen=True)
class _Nothing:
    entity: Entity

    def to_json(self) -> dict[str, Any]:
        return {"entity_path": self.entity.path, "changed": False, "id": None, "outcome": None}

    def render(self, out: Console) -> None:
        out.print("No change: the default broker already has these configs; no rollout was started.")


@dataclass(frozen=True)
class _CanaryPlanView:
    prepared: canary.CanaryStart
    options: Options

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "entity_path": canary.DEFAULT_BROKERS.path,
            "changes": diff_json(canary.DEFAULT_BROKERS, self.prepared.diff),
            **canary.describe(self.prepared),
            "options": self.options.to_json(),
        }

    def table(self) -> Table:
        ids = ", ".join(str(b) for b in self.prepared.brokers)
        return diff_table(
            canary.DEFAULT_BROKERS,
            list(self.prepared.diff),
            title=f"Canary on broker(s) {ids}, then brokers/<default>",
        )

    def render(self, out: Console) -> None:
        out.print(self.table())
        out.print(
            f"Dry run: would write overrides on {', '.join(p.entity.path for p in self.prepared.planned)}, "
            f"soak {format_duration(self.options.soak_seconds)}"
            + (f", run the check {safe(self.options.check)!s}" if self.options.check else "")
            + ", then promote to brokers/<default> or abort. Nothing written."
        )


# -- apply --waves ----------------------------------------------------------------------------------


def apply_in_waves(store: Any, plan: Any, reason: str, wait: float | None) -> None:
    """``apply --waves``: the hand-off from ``apply`` once the plan is shown and confirmed."""
    spec = given_options()["waves"]
    options = _options(wait)
    planned = waves.prepare(store, plan, spec)
    with observing() as observer:
        report = outcome.guarded(
            lambda: waves.start(store, planned, options, reason=reason, observer=observer)
        )
    show_and_exit(report)


# -- the end of a rollout: one document, then the exit status it earned ------------------------------


def show_and_exit(report: Report) -> None:
    """Show the report (a document on stdout), then exit as the outcome says (one line on stderr)."""
    written = [Entity.from_path(p) for p in report.went_out or report.restored]
    after_commit(written, lambda: show(RolloutView(report)), what=f"rollout {report.id}")
    outcome.raise_for_rollout(report)


@dataclass
class RolloutView:
    """A rollout's report, for people and for scripts."""

    report: Report

    def to_json(self) -> dict[str, Any]:
        return self.report.to_json()

    def render(self, out: Console) -> None:
        report = self.report
        styles = {
            steps.PROMOTED: "green",
            steps.COMPLETED: "green",
            steps.ABORTED: "yellow",
            steps.STOPPED: "red",
        }
        style = styles.get(report.outcome, "white")
        out.print(f"Rollout {report.id} ({report.kind}): [{style}]{report.outcome}[/]")
        if report.failure:
            out.print(f"  why: {safe(report.failure)}")
        table = Table(show_edge=False, title_justify="left")
        for column in ("step", "part", "result"):
            table.add_column(column, overflow="fold")
        for item in report.steps:
            where = item.get("step", "")
            if "wave" in item and item.get("step") == "wave":
                where = f"wave {item['wave']}"
            table.add_row(safe(where), safe(item.get("part", "")), safe(_result(item)))
        if report.steps:
            out.print(table)
        if report.outcome == steps.PROMOTED:
            out.print("  promoted to brokers/<default>; the canary overrides were removed")
        elif report.went_out and report.outcome != steps.COMPLETED:
            out.print(f"  went out: {safe(listed(report.went_out))}")
        if report.not_out and report.outcome != steps.ABORTED:
            out.print(f"  not out: {safe(listed(report.not_out))}")
        if report.restored:
            out.print(f"  restored to their previous bytes: {safe(listed(report.restored))}")
        unreadable = report.extra.get("unreadable") or []
        if unreadable:
            out.print(f"  could not be read (ended with --force all the same): {safe(listed(unreadable))}")
        lost = report.extra.get("not_restored") or []
        if lost:
            out.print(f"  [red]not restored[/] (their undo could not be read): {safe(listed(lost))}")
        if report.fleet is not None and report.fleet.brokers:
            applied = sum(1 for b in report.fleet.brokers if b.status == fleet.APPLIED)
            out.print(
                f"  fleet: {applied} of {len(report.fleet.brokers)} live broker(s) applied the promotion"
            )


def _result(item: dict[str, Any]) -> str:
    part = item.get("part")
    if part == "write":
        numbers = [n for n in item.get("change_numbers") or [] if n is not None]
        changes = (
            f" (change{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))})" if numbers else ""
        )
        return f"{listed(item.get('entities') or [])}{changes}"
    if part == "wait":
        statuses = ", ".join(f"{b['broker_id']}: {b['status']}" for b in item.get("brokers") or [])
        return (statuses or "no live broker") + (" (timed out)" if item.get("timed_out") else "")
    if part == "soak":
        return "healthy" if item.get("ok") else f"failed: {item.get('failure')}"
    if part == "check":
        if item.get("ok"):
            return f"passed ({item.get('seconds', 0):.1f}s)"
        return "timed out, killed" if item.get("timed_out") else f"failed: exit {item.get('exit_code')}"
    return ""


# -- live view ---------------------------------------------------------------------------------------


@contextmanager
def observing() -> Iterator[Callable[[Progress], None] | None]:
    """A live view on a terminal's stderr, one line per event when piped, nothing with ``-o json``
    (:func:`configctl.cli.render.progress`)."""
    with progress(_Live(), soft_wrap=True) as observer:
        yield observer


class _Live:
    """The live view: the step, what it is doing, each broker's status, and the last events;
    piped, one line per event."""

    def __init__(self) -> None:
        self.progress: Progress | None = None
        self.brokers: Sequence[fleet.BrokerOutcome] = ()
        self.events: list[str] = []

    def update(self, progress: Progress) -> list[str]:
        if self.progress is not None and progress.title != self.progress.title:
            self.brokers = ()
        self.progress = progress
        if progress.brokers:
            self.brokers = progress.brokers
        if progress.line:
            self.events = [*self.events, progress.line][-4:]
        return [f"rollout {progress.rollout_id}: {safe(progress.line)}"] if progress.line else []

    def closing(self) -> list[str]:
        return []

    def render(self) -> Any:
        progress = self.progress
        if progress is None:
            return "starting the rollout…"
        head = f"[bold]rollout {progress.rollout_id}[/]: {safe(progress.title)} — {safe(progress.activity)}"
        if progress.soak_left is not None and progress.activity == "soaking":
            head += f", {format_duration(progress.soak_left)} left"
        table = Table(show_edge=False)
        table.add_column("broker", justify="right")
        table.add_column("status")
        table.add_column("reason", overflow="fold")
        for item in self.brokers:
            style = _STYLES.get(item.status, "red")
            table.add_row(str(item.broker_id), f"[{style}]{item.status}[/]", safe(item.reason or ""))
        applied = sum(1 for b in self.brokers if b.status == fleet.APPLIED)
        parts: list[Any] = [head]
        if self.brokers:
            parts.append(f"brokers applied: {applied} of {len(self.brokers)}")
            parts.append(table)
        parts.extend(f"[dim]{safe(line)}[/]" for line in self.events)
        return Group(*parts)


# -- configctl rollout list|show|abort|resume --------------------------------------------------------


def _when(ms: int | None) -> str:
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _step_text(record: Record) -> str:
    step = record.step
    name = step.get("step", "")
    if name == "wave":
        name = f"wave {step.get('wave')} of {record.waves}"
    activity = step.get("activity")
    return f"{name} ({activity})" if activity else str(name)


def _running(owner: dict[str, Any] | None) -> str:
    if owner is None:
        return ""
    return f"pid {owner.get('pid')} on {owner.get('host')}" if owner else "yes"


class RolloutListView(RolloutListDocument):
    """``rollout list`` for people: the rollouts as a table, and how to finish an orphaned one."""

    def render(self, out: Console) -> None:
        if not self.items:
            out.print("No rollouts.")
            return
        table = Table(title="Rollouts (newest first)", title_justify="left", show_edge=False)
        for column in ("id", "kind", "state", "step", "entities", "started", "by", "running", "failure"):
            table.add_column(column, overflow="fold")
        for item in self.items:
            record = item.record
            if record is None:
                table.add_row(
                    safe(item.id), "", "[red]unreadable[/]", "", "", "", "", "", safe(item.problem or "")
                )
                continue
            state = {True: "[yellow]", False: "[green]"}[record.open] + record.state + "[/]"
            if record.open and item.owner is None:
                state += " [red](no process)[/]"
            table.add_row(
                safe(record.id),
                record.kind,
                state,
                safe(_step_text(record)),
                str(record.entity_count),
                _when(record.created_ms),
                safe(record.identity),
                safe(_running(item.owner)),
                safe(one_line(record.failure or "", 120)),
            )
        out.print(table)
        if any(i.record is not None and i.record.open and i.owner is None for i in self.items):
            out.print("An open rollout with no process is finished with: configctl rollout abort|resume ID")
        if any(i.record is None for i in self.items):
            out.print(
                "An unreadable rollout keeps its claims; it is finished with: configctl rollout abort ID --force"
            )


class RolloutShowView(RolloutShowDocument):
    """``rollout show ID`` for people: its state, options, plan and newest events."""

    def render(self, out: Console) -> None:
        loaded = self.loaded
        record = loaded.record
        out.print(
            f"[bold]Rollout {safe(record.id)}[/] ({record.kind}): {record.state}, at {safe(_step_text(record))}; "
            f"started {_when(record.created_ms)} by {safe(record.identity)}"
            + (f"; reason: {safe(record.reason)}" if record.reason else "")
        )
        if loaded.owner is not None:
            out.print(f"Running now: {safe(_running(loaded.owner))}.")
        elif record.open:
            out.print(
                f"No process runs it: finish it with configctl rollout abort {record.id} (restore) or "
                f"resume {record.id} (go on)."
            )
        if record.failure:
            out.print(f"Failure: {safe(record.failure)}")
        options = record.options
        out.print(
            f"Soak {format_duration(options.soak_seconds)}, wait {options.wait_seconds:g}s"
            + (
                f", check {safe(options.check)} (timeout {options.check_timeout_seconds:g}s)"
                if options.check
                else ""
            )
            + (", revert on failure" if options.revert_on_failure else "")
        )
        if record.canary is not None:
            adds = ", ".join(f"{k}={v}" for k, v in sorted(record.canary.add.items()))
            out.print(f"Canary brokers {', '.join(map(str, record.canary.brokers))}; change: {safe(adds)}")
        written = {u.entity for chunk in loaded.undo for u in chunk.entries}
        table = Table(title="Plan", title_justify="left", show_edge=False)
        for column in ("wave", "entity", "written, not undone"):
            table.add_column(column, overflow="fold")
        for item in loaded.planned:
            table.add_row(
                str(item.wave), safe(item.entity.label), "[yellow]yes[/]" if item.entity in written else ""
            )
        if loaded.planned:
            out.print(table)
        events = Table(title="Events", title_justify="left", show_edge=False)
        events.add_column("time")
        events.add_column("event", overflow="fold")
        for event in record.events[-30:]:
            events.add_row(_when(event.get("at_ms")), safe(event.get("text", "")))
        out.print(events)


@click.group()
def rollout() -> None:
    """Canary and wave rollouts: list them, show one, and finish one whose process died.

    \b
      configctl rollout list
      configctl rollout show 20250612-142233-3f9a
      configctl rollout abort 20250612-142233-3f9a     # restore what it wrote
      configctl rollout resume 20250612-142233-3f9a    # go on from the step it reached
    """


@rollout.command("list")
@click.option("--open", "only_open", is_flag=True, help="Only rollouts that are not finished.")
@global_options
def list_rollouts(only_open: bool) -> None:
    """Every rollout with a record (open ones, and the last finished ones), newest first."""
    with open_store() as store:
        items = store.rollouts.listing()
    if only_open:
        items = [i for i in items if i.record is None or i.record.open]
    show(RolloutListView(items))


@rollout.command("show")
@click.argument("rollout_id", metavar="ID")
@global_options
def show_rollout(rollout_id: str) -> None:
    """One rollout: its state, plan, what it wrote (and would undo), and its events."""
    check_rollout_id(rollout_id)
    with open_store() as store:
        loaded = store.rollouts.load(rollout_id)
    show(RolloutShowView(loaded))


@rollout.command("abort")
@click.argument("rollout_id", metavar="ID")
@click.option(
    "--force",
    is_flag=True,
    help="Restore the previous bytes even of entities changed since the rollout wrote them (those changes are "
    "lost); also ends a rollout whose record cannot be read, from what can be read of it.",
)
@click.option("--reason", default="", metavar="TEXT", help="Why; recorded in the entities' history.")
@global_options
def abort_rollout(rollout_id: str, force: bool, reason: str) -> None:
    """Restore every entity the rollout wrote to its exact previous bytes, and end it.

    Exit 0 when everything is restored; 12 when an entity changed since the rollout wrote it, or
    when the rollout cannot be read whole (nothing restored: check it, then --force); 8 when
    --force ended it but part of its undo could not be read (named).
    """
    check_rollout_id(rollout_id)
    with open_store() as store, observing() as observer:
        report = control.abort(store, rollout_id, force=force, reason=reason, observer=observer)
    written = [Entity.from_path(p) for p in report.restored]
    after_commit(written, lambda: show(RolloutView(report)), what=f"rollout {rollout_id}")
    outcome.raise_for_abort(report, rollout_id)


@rollout.command("resume")
@click.argument("rollout_id", metavar="ID")
@global_options
def resume_rollout(rollout_id: str) -> None:
    """Go on with a rollout from the step its record reached (a canary is judged again from its wait).

    Exits as the rollout would have: 0 promoted or completed, 11 aborted, 12 stopped.
    """
    check_rollout_id(rollout_id)
    with open_store() as store, observing() as observer:
        report = outcome.guarded(lambda: control.resume(store, rollout_id, observer=observer))
    show_and_exit(report)
