"""``configctl history`` and ``configctl rollback``: who changed an entity, and a one-command undo.

Every write configctl makes records the previous and new config, the time, the identity and the
reason under ``/configctl/history/<entity path>/`` (see :class:`configctl.zk.configstore.ConfigStore`).
``rollback --to N`` restores the config recorded at version N through the normal validated,
version-checked write path, so the undo is itself recorded and can be undone.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from configctl import writer
from configctl.changes import ConfigChange, diff
from configctl.cli.context import open_store
from configctl.cli.entity_options import EntityCommand, entity_options, pop_selection, select
from configctl.cli.options import global_options, settings
from configctl.cli.render import console, diff_json, diff_table, emit_json, entity_label, masked
from configctl.entities import Entity
from configctl.errors import Conflict, InvalidInput, NotFound
from configctl.znodes import HistoryRecord


def _entity(ctx: click.Context, kwargs: dict[str, Any]) -> Entity:
    selection = select(ctx, pop_selection(kwargs))
    assert selection.entity is not None  # select() without allow_all always names one entity
    return selection.entity


def history_json(entity: Entity, entry: HistoryRecord) -> dict[str, Any]:
    """Contract 6's history element, with sensitive values masked."""
    document = entry.to_json()
    document["config"] = masked(entity, entry.config) if entry.config is not None else None
    return document


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


@click.command(cls=EntityCommand)
@entity_options
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Show only the newest N records.")
@global_options
@click.pass_context
def history(ctx: click.Context, limit: int | None, **kwargs: Any) -> None:
    """Show the recorded writes of one entity, newest first.

    \b
      configctl history --topic orders
      configctl history --user User:alice --client app1 --output json
    """
    entity = _entity(ctx, kwargs)
    with open_store() as store:
        entries = store.history(entity)
        current = store.read(entity)
    if limit is not None:
        entries = entries[:limit]
    if settings().output == "json":
        emit_json([history_json(entity, entry) for entry in entries])
        return
    out = console()
    label = escape(entity_label(entity))
    if not entries:
        out.print(f"No history recorded for {label} ({entity.path}).")
        return
    table = Table(title=f"History of {label} ({entity.path})", title_justify="left", show_edge=False)
    for column in ("version", "time", "identity", "reason", "changes"):
        table.add_column(column)
    for entry in entries:
        version = f"{entry.version}" + (" *" if entry.version == current.version else "")
        table.add_row(
            version,
            _when(entry.time_ms),
            escape(entry.identity),
            escape(entry.reason),
            escape(_summary(entry)),
        )
    out.print(table)
    if current.exists:
        out.print(f"[dim]* current version ({current.version}). Undo with: configctl rollback ... --to N[/]")


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
@global_options
@click.pass_context
def rollback(
    ctx: click.Context,
    to_version: int,
    yes: bool,
    dry_run: bool,
    reason: str,
    allow_custom_config: bool,
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
    reason = reason or os.environ.get("CONFIGCTL_REASON", "")
    recorded = f"rollback to {to_version}" + (f": {reason}" if reason else "")
    as_json = settings().output == "json"
    out = console()
    label = entity_label(entity)
    with open_store() as store:
        entries = store.history(entity)
        entry = next((e for e in entries if e.version == to_version), None)
        if entry is None:
            known = ", ".join(str(e.version) for e in entries[:20]) or "none"
            raise NotFound(
                f"no history record of version {to_version} for {label} (recorded versions: {known})"
            )
        if entry.config is None:
            raise NotFound(
                f"version {to_version} of {label} was too large to record in full; it cannot be restored"
            )
        current = store.read(entity)
        changes = diff(current.config, entry.config)
        if not changes:
            _report(entity, to_version, current.version, None, [], as_json=as_json, dry_run=dry_run)
            return
        if not as_json:
            title = (
                f"Rollback of {escape(label)} ({entity.path}) from version {current.version} to {to_version}"
            )
            out.print(diff_table(entity, changes, title=title))
        if dry_run:
            _report(entity, to_version, current.version, None, changes, as_json=as_json, dry_run=True)
            return
        if not yes and not click.confirm(
            f"Restore version {to_version} of {label}?", default=False, err=True
        ):
            raise InvalidInput("rollback cancelled; nothing was written")
        change = ConfigChange(
            add={c.name: c.new for c in changes if c.new is not None},
            delete=tuple(c.name for c in changes if c.new is None),
        )
        try:
            result = writer.alter(
                store,
                entity,
                change,
                if_version=current.version,
                allow_custom=allow_custom_config,
                reason=recorded,
            )
        except Conflict:
            raise Conflict(
                f"{label} changed while rolling back (it was at version {current.version} when the diff "
                "was shown); nothing written; run rollback again"
            ) from None
    _report(entity, to_version, current.version, result, changes, as_json=as_json, dry_run=False)


def _report(
    entity: Entity,
    to_version: int,
    version_before: int,
    result: writer.AlterResult | None,
    changes: list[Any],
    *,
    as_json: bool,
    dry_run: bool,
) -> None:
    committed = result.committed if result is not None else None
    if as_json:
        emit_json(
            {
                "entity_type": entity.type.value,
                "entity_name": entity.name,
                "entity_path": entity.path,
                "rolled_back_to": to_version,
                "dry_run": dry_run,
                "changed": committed is not None,
                "version_before": version_before if version_before >= 0 else None,
                "version": committed.version if committed else None,
                "change_number": committed.change_number if committed else None,
                "changes": diff_json(entity, changes),
            }
        )
        return
    out = console()
    label = escape(entity_label(entity))
    if not changes:
        out.print(f"No change: {label} already has the config of version {to_version}.")
    elif dry_run:
        out.print("Dry run: nothing written.")
    elif committed is not None:
        out.print(
            f"Restored {label} to the config of version {to_version}: now version {committed.version}, "
            f"change {committed.change_number}."
        )
