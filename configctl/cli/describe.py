"""``configctl describe``: stored dynamic configs, or a broker's effective config with sources."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from configctl.cli.context import open_store
from configctl.cli.entity_options import EntityCommand, entity_options, pop_selection, select
from configctl.cli.options import global_options, settings
from configctl.cli.render import console, emit_json, entity_json, entity_label, masked


@click.command(cls=EntityCommand)
@entity_options
@click.option(
    "--effective",
    is_flag=True,
    help="With --broker ID: the values that broker ends up with and where each comes from; "
    "add --topic, --user [--client], --client or --ip for that entity as the broker sees it.",
)
@global_options
@click.pass_context
def describe(ctx: click.Context, effective: bool, **kwargs: Any) -> None:
    """Show dynamic configs: one entity, or every entity of a type when no name is given.

    \b
      configctl describe --topic orders
      configctl describe --entity-type users          # every user and user+client entity
      configctl describe --effective --broker 1 --topic orders
    """
    params = pop_selection(kwargs)
    if effective:
        from configctl.cli.effective import describe_effective

        describe_effective(params)
        return
    selection = select(ctx, params, allow_all=True)
    with open_store() as store:
        if selection.entity is not None:
            stored = [store.read(selection.entity)]
        else:
            stored = store.read_type(selection.entity_type)
    documents = [entity_json(s.entity, s.config, s.version if s.exists else None) for s in stored]
    if settings().output == "json":
        emit_json(documents)
        return
    out = console()
    if not stored:
        out.print(f"No {selection.entity_type.value} have dynamic configs.")
    for item in stored:
        version = f"version {item.version}" if item.exists else "no config node"
        title = f"Dynamic configs for {escape(entity_label(item.entity))} ({item.entity.path}, {version})"
        if not item.config:
            out.print(f"{title}: none")
            continue
        table = Table(title=title, title_justify="left", show_edge=False, show_header=False)
        table.add_column("key", style="bold")
        table.add_column("value")
        for key, value in masked(item.entity, item.config).items():
            table.add_row(escape(key), escape(value))
        out.print(table)
