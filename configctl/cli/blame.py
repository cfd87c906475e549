"""``configctl blame --broker ID [--topic T | --user U [--client C] | --client C | --ip IP] --key K [--at T]``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from configctl.cli.context import open_store
from configctl.cli.effective import effective_target
from configctl.cli.entity_options import EntityCommand, entity_options, pop_selection
from configctl.cli.moments import APPLIED_LOG_HELP, MOMENT
from configctl.cli.options import global_options
from configctl.cli.render import safe, show
from configctl.timeref import TimeRef, iso
from configctl.travel.blame import Blame


@click.command(cls=EntityCommand)
@entity_options
@click.option("--key", "key", required=True, metavar="K", help="The config key to explain.")
@click.option(
    "--at", "at", type=MOMENT, metavar="T", help="As of T (ISO-8601, -2h, -3d, change:N); default: now."
)
@click.option("--applied-log", "applied_logs", multiple=True, metavar="DIR", help=APPLIED_LOG_HELP)
@global_options
def blame(key: str, at: TimeRef | None, applied_logs: tuple[str, ...], **kwargs: Any) -> None:
    """Show the writes that produced a key's value on one broker, newest first.

    Each write says its change number, version, time, who and why, the layer it wrote
    (per-broker, <default>, a topic, a quota entity) and when that broker applied it.

    \b
      configctl blame --broker 1 --topic orders --key retention.ms
      configctl blame --broker 1 --key log.retention.ms --at 2026-11-24T14:05:00Z -o json
    """
    from configctl.travel.blame import blame as explain

    broker_id, target = effective_target(pop_selection(kwargs))
    with open_store() as store:
        result = explain(store, broker_id, target, key, at, applied_logs)
    show(BlameView(result))


@dataclass(frozen=True)
class BlameView:
    result: Blame

    def to_json(self) -> dict[str, Any]:
        return self.result.to_json()

    def render(self, out: Console) -> None:
        r = self.result
        value = "null" if r.value is None else r.value
        out.print(
            f"{safe(r.entity_path)} {safe(r.key)} = {safe(value)} ({safe(r.source)}, layer {safe(r.layer)}) "
            f"as of {iso(r.at_ms)}"
        )
        if not r.chain:
            out.print("No recorded write produced it: it comes from server.properties or Kafka's default.")
            return
        table = Table(show_edge=False)
        for column in ("change", "version", "time", "identity", "reason", "layer", "value", "applied"):
            table.add_column(column, overflow="fold")
        for link in r.chain:
            outside = link.get("written_outside_configctl", False)
            table.add_row(
                "?" if link["change_number"] is None else str(link["change_number"]),
                str(link["version"]),
                _time(link),
                "[bold]outside configctl[/]" if outside else safe(link["identity"]),
                safe(link["reason"] or ""),
                safe(link["layer"]),
                safe("null" if link["value"] is None else link["value"]),
                "unknown" if link["applied_at_ms"] is None else iso(link["applied_at_ms"]),
            )
        out.print(table)
        newest = r.chain[0]
        if newest.get("written_outside_configctl"):
            number = "" if newest["change_number"] is None else f" (change {newest['change_number']})"
            out.print(
                f"The value in force came from a write outside configctl{number}, {_time(newest)}: "
                "kafka-configs.sh, the Admin API or another tool; configctl has no record of who or why."
            )


def _time(link: dict[str, Any]) -> str:
    """A link's time, or for a write outside configctl nothing dates, the span it lies in."""
    if link["time_ms"] is not None:
        return iso(link["time_ms"])
    low = iso(link["not_before_ms"]) if link.get("not_before_ms") is not None else "?"
    high = iso(link["not_after_ms"]) if link.get("not_after_ms") is not None else "now"
    return f"between {low} and {high}"
