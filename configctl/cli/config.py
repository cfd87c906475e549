"""``configctl config show``: the settings a command would use, and where each one came from.

The answer to "which cluster is this going to touch?" before touching it: every global setting
after flags, environment and profile are merged (:mod:`configctl.settings`), passwords masked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from configctl.cli.options import global_options, settings
from configctl.cli.render import safe
from configctl.cli.render import show as show_result
from configctl.errors import InvalidInput
from configctl.settings import GlobalSettings


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
    view = SettingsView(resolved, resolved.shown_rows(), resolved.problem())
    show_result(view, table_on_bad_output=True)  # a bad output setting is the problem, after a table
    if view.problem is not None:
        raise InvalidInput(view.problem)


@dataclass(frozen=True)
class SettingsView:
    """The resolved settings: every one with its value (secrets masked) and source, and the first problem."""

    resolved: GlobalSettings
    rows: list[dict[str, Any]]
    problem: str | None

    def to_json(self) -> dict[str, Any]:
        profile, source = self.resolved.profile, self.resolved.profile_source
        return {
            "config_file": str(self.resolved.config_file),
            "profile": profile.name if profile else None,
            "profile_source": str(source) if source else None,
            "settings": {
                row["setting"]: {k: row[k] for k in ("value", "source", "flag", "env")} for row in self.rows
            },
            "problem": self.problem,
        }

    def render(self, out: Console) -> None:
        profile = self.resolved.profile
        # the profile's name, its path and every value are the operator's text: escaped, so a
        # control character or a markup-like name shows as text and never drives the terminal
        where = f"profile {safe(profile.name)} from {safe(profile.path)}" if profile else "no profile"
        table = Table(title=f"configctl settings ({where})", title_justify="left", show_edge=False)
        for column in ("setting", "value", "source"):
            table.add_column(column, overflow="fold")
        for row in self.rows:
            value = row["value"]
            shown = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
            table.add_row(safe(row["setting"]), safe(shown), safe(row["source"]))
        out.print(table)
