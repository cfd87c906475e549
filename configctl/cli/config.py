"""``configctl config show``: the settings a command would use, and where each one came from.

The answer to "which cluster is this going to touch?" before touching it: every global setting
after flags, environment and profile are merged (:mod:`configctl.settings`), passwords masked.
"""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from configctl.cli.options import global_options, settings
from configctl.cli.render import console, emit_json
from configctl.errors import ConfigctlError, InvalidInput


@click.group()
def config() -> None:
    """Inspect configctl's own settings (flags, CONFIGCTL_* variables, profiles)."""


@config.command("show")
@global_options
def show() -> None:
    """Print the resolved global settings, secrets masked, and where each came from.

    Sources, strongest first: flag (before or after the subcommand), environment, profile NAME,
    default. The settings are then checked as a command would check them (password files read,
    TLS files loaded, no connection made): a problem is reported after the table, with exit 1.

    \b
      configctl --profile prod config show
      CONFIGCTL_ZOOKEEPER=zk1:2181 configctl config show -o json
    """
    resolved = settings()
    rows = resolved.shown_rows()
    problem = _problem(resolved)
    as_json = _output_or_json(resolved)
    profile = resolved.profile
    if as_json:
        document: dict[str, Any] = {
            "config_file": str(resolved.config_file),
            "profile": profile.name if profile else None,
            "profile_source": str(resolved.profile_source) if resolved.profile_source else None,
            "settings": {
                row["setting"]: {k: row[k] for k in ("value", "source", "flag", "env")} for row in rows
            },
            "problem": problem,
        }
        emit_json(document)
    else:
        out = console()
        where = f"profile {profile.name} from {profile.path}" if profile else "no profile"
        table = Table(title=f"configctl settings ({where})", title_justify="left", show_edge=False)
        for column in ("setting", "value", "source"):
            table.add_column(column, overflow="fold")
        for row in rows:
            value = row["value"]
            shown = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
            table.add_row(escape(row["setting"]), escape(shown), escape(row["source"]))
        out.print(table)
    if problem is not None:
        raise InvalidInput(problem)


def _output_or_json(resolved: Any) -> bool:
    try:
        return resolved.output == "json"
    except ConfigctlError:
        return False  # the bad output setting is reported as the problem, after a table


def _problem(resolved: Any) -> str | None:
    """The first thing a command would refuse in these settings (None when all is well)."""
    try:
        _ = resolved.output
        resolved.connection().check_local()
    except ConfigctlError as exc:
        return exc.message
    return None
