"""``configctl diff --broker A --broker B [--at T]`` or ``configctl diff --broker A --at T1 --at T2``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from configctl import fleet
from configctl.cli.context import open_store
from configctl.cli.moments import APPLIED_LOG_HELP, MOMENT
from configctl.cli.options import global_options
from configctl.cli.render import safe, show
from configctl.entities import Entity, EntityType
from configctl.timeref import TimeRef
from configctl.travel.diff import Diff, Side


@click.command()
@click.option(
    "--broker",
    "brokers",
    multiple=True,
    type=click.IntRange(min=0),
    metavar="ID",
    help="A broker (twice: two brokers).",
)
@click.option(
    "--at",
    "moments",
    multiple=True,
    type=MOMENT,
    metavar="T",
    help="As of T (twice with one --broker: two moments).",
)
@click.option(
    "--topic", metavar="NAME", help="Compare this topic's effective config (default: the broker's own)."
)
@click.option(
    "--entity",
    "entity_path",
    metavar="PATH",
    help="Compare this entity (users/alice, clients/app, ips/10.0.0.1).",
)
@click.option("--applied-log", "applied_logs", multiple=True, metavar="DIR", help=APPLIED_LOG_HELP)
@global_options
@click.pass_context
def diff(
    ctx: click.Context,
    brokers: tuple[int, ...],
    moments: tuple[TimeRef, ...],
    topic: str | None,
    entity_path: str | None,
    applied_logs: tuple[str, ...],
) -> None:
    """Compare effective configs: two brokers (now or --at T), or one broker at two moments.

    One broker with one --at compares that moment with now. Exit 0 when they are equal, 2 when
    they differ (as plan).

    \b
      configctl diff --broker 1 --broker 2
      configctl diff --broker 1 --broker 2 --at -2h --topic orders
      configctl diff --broker 1 --at change:41 --at change:42 -o json
      configctl diff --broker 1 --at -2h                    # what changed on broker 1 since
    """
    from configctl.travel.diff import diff as compare

    if len(brokers) == 2 and len(moments) <= 1:
        at = moments[0] if moments else None
        left, right = Side(brokers[0], at), Side(brokers[1], at)
    elif len(brokers) == 1 and len(moments) == 2:
        left, right = Side(brokers[0], moments[0]), Side(brokers[0], moments[1])
    elif len(brokers) == 1 and len(moments) == 1:  # then against now: what changed since T
        left, right = Side(brokers[0], moments[0]), Side(brokers[0], None)
    else:
        raise click.UsageError("give --broker A --broker B [--at T], or --broker A --at T1 [--at T2]")
    if topic is not None and entity_path is not None:
        raise click.UsageError("name one entity: --topic or --entity")
    target = _target(topic, entity_path)
    with open_store() as store:
        result = compare(store, left, right, target, applied_logs)
    show(DiffView(result))
    if not result.equal:
        ctx.exit(2)


def _target(topic: str | None, entity_path: str | None) -> Entity | None:
    if topic is not None:
        return Entity.of(EntityType.TOPICS, topic)
    if entity_path is not None:
        return Entity.from_path(entity_path)
    return None


@dataclass(frozen=True)
class DiffView:
    result: Diff

    def to_json(self) -> dict[str, Any]:
        return self.result.to_json()

    def render(self, out: Console) -> None:
        r = self.result
        left, right = _side(r.left), _side(r.right)
        if r.equal:
            out.print(f"No difference: {safe(left)} and {safe(right)} run the same effective config.")
            return
        table = Table(title=f"{safe(left)} vs {safe(right)}", title_justify="left", show_edge=False)
        for column in ("entity", "key", "left", "right"):
            table.add_column(column, overflow="fold")
        for item in r.differences:
            table.add_row(
                safe(item["entity_path"]),
                safe(item["key"]),
                safe(_cell(item["left"], item["left_source"])),
                safe(_cell(item["right"], item["right_source"])),
            )
        out.print(table)


def _side(side: dict[str, Any]) -> str:
    when = f" at {side['at']}" if side["at"] is not None else " now"
    truth = side.get("truth")
    rests = f" ({fleet.figures(truth) or truth})" if truth is not None else ""
    return f"broker {side['broker_id']} {side['entity_path']}{when}{rests}"


def _cell(value: str | None, source: str | None) -> str:
    return f"{'null' if value is None else value} ({source})" if source else "(not set)"
