"""``configctl history`` and ``configctl rollback``: who changed an entity, and a one-command undo.

Every write configctl makes records the previous and new config, the time, the identity and the
reason under ``/configctl/history/<entity path>/`` (see :class:`configctl.zk.configstore.ZooKeeperStore`).
``rollback --to N`` restores the config recorded at version N through the normal validated,
version-checked write path (:mod:`configctl.rollback`), so the undo is itself recorded and can be
undone; this module asks, shows and follows.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from configctl import fleet, writer
from configctl import rollback as rollbacks
from configctl.changes import KeyDiff, diff
from configctl.cli.context import open_store
from configctl.cli.entity_options import EntityCommand, entity_options, pop_selection, select
from configctl.cli.moments import MOMENT
from configctl.cli.options import global_options, settings
from configctl.cli.render import (
    change_phrase,
    diff_json,
    diff_table,
    entity_label,
    preview,
    safe,
    show,
    show_written,
)
from configctl.cli.waiting import follow, raise_for_wait, wait_option
from configctl.documents.history import Entry, FeedDocument, HistoryDocument, entity_history
from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.store import Stored
from configctl.timeref import TimeRef
from configctl.travel.outside import OutsideWrite
from configctl.znodes import HistoryRecord


def _entity(ctx: click.Context, kwargs: dict[str, Any]) -> Entity:
    selection = select(ctx, pop_selection(kwargs))
    assert selection.entity is not None  # select() without allow_all always names one entity
    return selection.entity


def _when(time_ms: int) -> str:
    return datetime.fromtimestamp(time_ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def _summary(entry: HistoryRecord) -> str:
    if entry.config is None:
        return "(config too large to record; sha256 " + (entry.config_sha256 or "?")[:12] + ")"
    marks = {"add": "+", "change": "~", "delete": "-"}
    before = {k: v for k, v in entry.changed.items() if v is not None}
    after = {k: entry.config[k] for k in entry.changed if k in entry.config}
    changes = diff(before, after)
    return " ".join(f"{marks[c.kind]}{c.name}" for c in changes) or "(no key changed)"


def _version_cell(entry: HistoryRecord) -> str:
    """The version column: a write that removed the node (Kafka's rule for an emptied quota) left
    no version, and says so instead of showing the store's -1."""
    return "deleted" if entry.version < 0 else str(entry.version)


def _records_current(entry: HistoryRecord, current: Stored) -> bool:
    """Whether ``entry`` (the newest record) is what the entity holds now.

    Only configctl's own writes are recorded: kafka-configs.sh, the Admin API and Kafka itself
    (a topic created or deleted, an emptied quota node removed) write beside it. The newest
    record is current only if the node is still at its version with its config; a node deleted
    and created again starts at version 0 again, so the version alone would claim an old record.
    """
    if entry.version != current.version:
        return False
    if not current.exists or entry.config is None:
        return True
    return entry.config == current.config


def _outside_version(write: OutsideWrite) -> str:
    if write.removed:
        return "deleted"
    return str(write.version) if write.writes == 1 else f"{write.first_version}-{write.version}"


def _outside_time(write: OutsideWrite) -> str:
    if write.time_ms is not None:
        return _when(write.time_ms)
    low = _when(write.not_before_ms) if write.not_before_ms is not None else "?"
    high = _when(write.not_after_ms) if write.not_after_ms is not None else "now"
    return f"between {low} and {high}"


def _outside_changes(write: OutsideWrite) -> str:
    if write.changed is None or write.config is None:
        keys = write.moved_keys()
        return " ".join(f"~{k}" for k in keys) if keys else "(what it changed is unknown)"
    marks = {"add": "+", "change": "~", "delete": "-"}
    before = {k: v for k, v in write.changed.items() if v is not None}
    after = {k: write.config[k] for k in write.changed if k in write.config}
    return " ".join(f"{marks[c.kind]}{c.name}" for c in diff(before, after)) or "(no key changed)"


@dataclass(frozen=True)
class HistoryView(HistoryDocument):
    """``history`` for people: the writes as a table (those outside configctl marked), and whether
    the entity holds the newest record now."""

    current: Stored
    newest: Entry | None = None  # the newest entry, also when --limit leaves it out

    def render(self, out: Console) -> None:
        label = safe(entity_label(self.entity))
        path = safe(self.entity.path)
        newest = self.newest if self.newest is not None else (self.entries[0] if self.entries else None)
        if not self.entries:
            out.print(f"No history recorded for {label} ({path}).")
            return
        current = (
            isinstance(newest, HistoryRecord)
            and _records_current(newest, self.current)
            and self.current.exists
        )
        table = Table(title=f"History of {label} ({path})", title_justify="left", show_edge=False)
        for column in ("version", "time", "identity", "reason", "changes"):
            table.add_column(column, overflow="fold")
        for entry in self.entries:
            if isinstance(entry, OutsideWrite):
                table.add_row(
                    _outside_version(entry),
                    _outside_time(entry),
                    "[bold]outside configctl[/]",
                    safe(entry.summary()),
                    safe(_outside_changes(entry)),
                )
                continue
            version = _version_cell(entry) + (" *" if current and entry is newest else "")
            table.add_row(
                version, _when(entry.time_ms), safe(entry.identity), safe(entry.reason), safe(_summary(entry))
            )
        out.print(table)
        outside = self.outside
        if outside:
            gaps = sum(w.writes for w in outside if w.changed is None and not w.applied)
            unknown = f"; for {gaps} of them nothing says what they changed" if gaps else ""
            out.print(
                f"[dim]{sum(w.writes for w in outside)} write(s) outside configctl (kafka-configs.sh, the Admin "
                f"API or another tool), from the versions configctl's history does not account for{unknown}.[/]"
            )
        if isinstance(newest, HistoryRecord) and newest.version < 0 and not self.current.exists:
            out.print(
                "[dim]The entity has no config node now: its newest write deleted the last key and "
                "removed the emptied node, as Kafka does for quotas.[/]"
            )
        elif current:
            out.print(
                f"[dim]* current version ({self.current.version}). Undo with: configctl rollback ... --to N[/]"
            )


@click.command(cls=EntityCommand)
@entity_options
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Show only the newest N records.")
@click.option(
    "--since",
    type=MOMENT,
    metavar="T",
    help="Without an entity: every change across the fleet since T (ISO-8601, -2h, -3d, change:N), "
    "deleted entities included; with one: its records since T.",
)
@click.option("--until", type=MOMENT, metavar="T", help="With --since: up to T (default: now).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="With 'archive': the directory to write (default: the history-archive setting).",
)
@click.argument("action", required=False, type=click.Choice(["archive"]))
@global_options
@click.pass_context
def history(
    ctx: click.Context,
    limit: int | None,
    since: TimeRef | None,
    until: TimeRef | None,
    out_dir: str | None,
    action: str | None,
    **kwargs: Any,
) -> None:
    """Show the recorded writes of one entity, newest first.

    With --since and no entity: every change across the fleet in that window. `history archive
    --out DIR` copies every entity's records from ZooKeeper into DIR (idempotent, safe from cron);
    history, --at, blame and diff read it too with --history-archive DIR (or CONFIGCTL_HISTORY_ARCHIVE,
    or a profile; docs/investigating.md).

    \b
      configctl history --topic orders
      configctl history --user alice --client app1 --output json
      configctl history --since -2h                  # every change in the fleet in the last 2 hours
      configctl history archive --out /var/lib/configctl/history
    """
    params = pop_selection(kwargs)
    if action == "archive":
        chosen = settings(ctx).history_archive
        _archive(out_dir or (str(chosen) if chosen else None), params, since, limit)
        return
    if out_dir is not None:
        raise click.UsageError("--out is for 'history archive'")
    if until is not None and since is None:
        raise click.UsageError("--until needs --since")
    if since is not None and not any(params.values()):
        _fleet_feed(since, until, limit)
        return
    entity = _entity(ctx, params)
    with open_store() as store:
        current = store.read(entity, strict=False)
        entries = list(entity_history(store, entity).entries)
        if since is not None:
            entries = _window(store, entries, since, until)
    newest = entries[0] if entries else None
    show(HistoryView(entity, entries[:limit] if limit is not None else entries, current, newest))


def _window(store: Any, entries: list[Entry], since: TimeRef, until: TimeRef | None) -> list[Entry]:
    """The writes of one entity within [since, until] (an undated gap: any part of its span)."""
    from configctl.travel.feed import within
    from configctl.travel.past import History, resolve

    moments = History(store)
    start = resolve(since, moments)
    end = resolve(until, moments) if until is not None else None
    return [
        e
        for e in entries
        if (
            within(e, start, end)
            if isinstance(e, OutsideWrite)
            else start <= e.time_ms and (end is None or e.time_ms <= end)
        )
    ]


def _archive(out_dir: str | None, params: dict[str, Any], since: TimeRef | None, limit: int | None) -> None:
    """``history archive --out DIR``: every entity's records from ZooKeeper into the archive.

    The directory is made ready (owner-only, this cluster's) before anything is read: a refusal
    comes before a long read, and the first run with the history-archive setting creates the
    directory that setting then reads."""
    from configctl.archive import archive, prepare

    if not out_dir:
        raise click.UsageError("history archive needs --out DIR (or the history-archive setting)")
    if any(params.values()) or since is not None or limit is not None:
        raise click.UsageError("history archive takes every entity: no entity, --since or --limit")
    directory = Path(out_dir)
    with open_store() as store:
        cluster, cluster_id = store.location, store.cluster_id()
        prepare(directory, cluster, cluster_id)
        histories = store.histories(store.history_entities())
    show(archive(histories, directory, cluster=cluster, cluster_id=cluster_id))


def _fleet_feed(since: TimeRef, until: TimeRef | None, limit: int | None) -> None:
    from configctl.travel.feed import feed
    from configctl.travel.past import History, resolve

    with open_store() as store:
        moments = History(store)
        start = resolve(since, moments)
        end = resolve(until, moments) if until is not None else None
        entries = feed(store, start, end)
    show(FeedView(entries[:limit] if limit is not None else entries, start, end))


@dataclass(frozen=True)
class FeedView(FeedDocument):
    """``history --since`` for people: the fleet's writes in the window, as a table."""

    since_ms: int
    until_ms: int | None

    def render(self, out: Console) -> None:
        window = f"since {_when(self.since_ms)}" + (f" until {_when(self.until_ms)}" if self.until_ms else "")
        if not self.entries:
            out.print(f"No change recorded {window}.")
            return
        table = Table(title=f"Changes across the fleet {window}", title_justify="left", show_edge=False)
        for column in ("time", "entity", "version", "identity", "reason", "keys"):
            table.add_column(column, overflow="fold")
        for entry in self.entries:
            write = entry.outside
            if write is not None:
                table.add_row(
                    _outside_time(write),
                    safe(entry.entity_path),
                    _outside_version(write),
                    "[bold]outside configctl[/]",
                    safe(write.summary()),
                    safe(", ".join(entry.keys) or "?"),
                )
                continue
            table.add_row(
                _when(entry.time_ms or 0),
                safe(entry.entity_path),
                "deleted" if entry.version < 0 else str(entry.version),
                safe(entry.identity or ""),
                safe(entry.reason or ""),
                safe(", ".join(entry.keys)),
            )
        out.print(table)


@dataclass
class RollbackView:
    """What a rollback did (or would do), and what the brokers did with it."""

    entity: Entity
    to_version: int
    version_before: int
    changes: list[KeyDiff]
    result: writer.AlterResult | None = None
    dry_run: bool = False
    rollout: fleet.WaitResult | None = None

    def to_json(self) -> dict[str, Any]:
        committed = self.result.committed if self.result is not None else None
        document: dict[str, Any] = {
            "entity_type": self.entity.type.value,
            "entity_name": self.entity.name,
            "entity_path": self.entity.path,
            "rolled_back_to": self.to_version,
            "dry_run": self.dry_run,
            "changed": committed is not None,
            "version_before": self.version_before if self.version_before >= 0 else None,
            "version": committed.version if committed else None,
            "change_number": committed.change_number if committed else None,
            "changes": diff_json(self.entity, self.changes),
        }
        if self.rollout is not None:
            document["rollout"] = self.rollout.to_json()
        return document

    def render(self, out: Console) -> None:
        label = safe(entity_label(self.entity))
        committed = self.result.committed if self.result is not None else None
        if not self.changes:
            out.print(f"No change: {label} already has the config of version {self.to_version}.")
            return
        title = f"Rollback of {label} ({safe(self.entity.path)}) from version {self.version_before} to {self.to_version}"
        out.print(diff_table(self.entity, self.changes, title=title))
        if self.dry_run:
            out.print("Dry run: nothing written.")
        elif committed is not None:
            out.print(
                f"Restored {label} to the config of version {self.to_version}: now version {committed.version}"
                f"{change_phrase(committed.change_number)}."
            )


@click.command(cls=EntityCommand)
@entity_options
@click.option("--to", "to_version", type=int, required=True, metavar="N", help="The version to restore.")
@click.option("--yes", "-y", is_flag=True, help="Roll back without asking (needed when not on a terminal).")
@click.option("--dry-run", is_flag=True, help="Show the diff; write nothing.")
@click.option("--reason", default="", metavar="TEXT", help="Why; recorded with 'rollback to N'.")
@click.option(
    "--allow-custom-config",
    is_flag=True,
    help="Accept broker keys the schema does not know (if version N had a plugin's custom key).",
)
@click.option(
    "--allow-running-brokers",
    is_flag=True,
    help="Write broker configs even while Kafka brokers are registered in /brokers/ids.",
)
@wait_option
@global_options
@click.pass_context
def rollback(
    ctx: click.Context,
    to_version: int,
    yes: bool,
    dry_run: bool,
    reason: str,
    allow_custom_config: bool,
    allow_running_brokers: bool,
    wait: float | None,
    **kwargs: Any,
) -> None:
    """Restore an entity's config as recorded at version N (see configctl history).

    Shows the diff from the current config, asks for confirmation (unless --yes), then writes
    through the normal validated path, checked against the version the diff was made from.

    \b
      configctl rollback --topic orders --to 3
      configctl rollback --broker-defaults --to 7 --yes --reason "revert OPS-42"
    """
    entity = _entity(ctx, kwargs)
    if not (yes or dry_run) and not sys.stdin.isatty():
        raise InvalidInput("rollback asks for confirmation: run it in a terminal, or pass --yes")
    reason = reason or settings().reason
    label = entity_label(entity)
    with open_store() as store:
        prepared = rollbacks.prepare(store, entity, to_version, label=label)
        current, changes = prepared.current, prepared.changes
        view = RollbackView(entity, to_version, current.version, changes, dry_run=dry_run)
        if not changes or dry_run:
            show(view)
            return
        preview(view.render)  # the diff from the current config
        if not yes and not click.confirm(
            f"Restore version {to_version} of {label}?", default=False, err=True
        ):
            raise InvalidInput("rollback cancelled; nothing was written")
        view.result = rollbacks.restore(
            store,
            prepared,
            reason=reason,
            allow_custom=allow_custom_config,
            allow_running_brokers=allow_running_brokers,
            label=label,
        )
        committed = [view.result.committed] if view.result.committed is not None else []

        def brokers_answer() -> None:
            assert wait is not None
            view.rollout = follow(store, committed, wait)

        following = wait is not None and bool(committed)
        show_written(
            [entity] if committed else [], _Restored(view), follow=brokers_answer if following else None
        )
    if view.rollout is not None and wait is not None:
        raise_for_wait(view.rollout, wait)


@dataclass(frozen=True)
class _Restored:
    """A rollback once people saw its diff (:func:`preview`): one line for them; the whole document for JSON."""

    view: RollbackView

    def to_json(self) -> dict[str, Any]:
        return self.view.to_json()

    def render(self, out: Console) -> None:
        committed = self.view.result.committed if self.view.result is not None else None
        if committed is not None:
            out.print(
                f"Restored {safe(entity_label(self.view.entity))} to the config of version {self.view.to_version}: "
                f"now version {committed.version}{change_phrase(committed.change_number)}."
            )
