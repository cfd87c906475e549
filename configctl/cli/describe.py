"""``configctl describe``: stored dynamic configs, or a broker's effective config with sources."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table

from configctl.cli.context import open_store
from configctl.cli.entity_options import EntityCommand, entity_options, pop_selection, select
from configctl.cli.moments import effective_moment_options, refuse_without_effective
from configctl.cli.options import global_options
from configctl.cli.render import entity_label, safe, show, warning
from configctl.documents.describe import DescribeDocument
from configctl.documents.masking import masked
from configctl.writer import check_kafka_rules


@click.command(cls=EntityCommand)
@entity_options
@click.option(
    "--effective",
    is_flag=True,
    help="With --broker ID: the values that broker ends up with and where each comes from; "
    "add --topic, --user [--client], --client or --ip for that entity as the broker sees it.",
)
@effective_moment_options
@global_options
@click.pass_context
def describe(ctx: click.Context, effective: bool, **kwargs: Any) -> None:
    """Show dynamic configs: one entity, or every entity of a type when no name is given.

    \b
      configctl describe --topic orders
      configctl describe --entity-type users          # every user and user+client entity
      configctl describe --effective --broker 1 --topic orders

    A topic Kafka does not have is refused, as alter refuses it (exit 1).
    """
    params = pop_selection(kwargs)
    if effective:
        from configctl.cli.effective import describe_effective

        describe_effective(params, **kwargs)
        return
    refuse_without_effective(kwargs)
    selection = select(ctx, params, allow_all=True)
    with open_store() as store:
        if selection.entity is not None:
            # An entity Kafka does not have (a topic typo) is refused as alter refuses it, by the
            # same rule, not shown as an entity with no configs; running brokers do not matter to a read.
            check_kafka_rules(store, [selection.entity], allow_running_brokers=True)
            stored = [store.read(selection.entity, strict=False)]
        else:
            stored = store.read_type(selection.entity_type, strict=False)
        caveat = store.metadata_owner().stale_read
    if caveat is not None:
        warning(caveat)
    for item in stored:
        if item.problem is not None:  # reported, and the others still shown (repair: alter --replace)
            warning(f"{item.entity.znode} is not a Kafka config node: {item.problem}")
    show(DescribeView(selection.entity_type, stored))


class DescribeView(DescribeDocument):
    """``describe`` for people: one table of keys and values per entity, secrets masked."""

    def render(self, out: Console) -> None:
        if not self.stored:
            out.print(f"No {self.entity_type.value} have dynamic configs.")
        for item in self.stored:
            version = f"version {item.version}" if item.exists else "no config node"
            title = (
                f"Dynamic configs for {safe(entity_label(item.entity))} ({safe(item.entity.path)}, {version})"
            )
            if item.problem is not None:
                out.print(f"{title}: [red]not a Kafka config node[/] ({safe(item.problem)})")
                continue
            if not item.config:
                out.print(f"{title}: none")
                continue
            table = Table(title=title, title_justify="left", show_edge=False, show_header=False)
            table.add_column("key", style="bold", no_wrap=True, overflow="fold")
            table.add_column("value", overflow="fold")
            for key, value in masked(item.entity, item.config).items():
                table.add_row(safe(key), safe(value))
            out.print(table)
            if item.entity.type.in_broker_memory:
                out.print(
                    f"Broker {safe(item.entity.name)} keeps these levels in its memory only: "
                    "a restart of the broker forgets them (its log4j configuration rules again)."
                )
