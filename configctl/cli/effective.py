"""``configctl describe --effective --broker N [--topic T | --user U [--client C] | --client C | --ip IP]``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from configctl.cli.context import open_store
from configctl.cli.render import safe, show
from configctl.effective import EffectiveReport, effective_config
from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput


def effective_target(params: dict[str, Any]) -> tuple[int, Entity | None]:
    """The broker id and the entity (None: the broker itself) the options name."""
    if params.get("entity_types") or params.get("entity_names") or params.get("entity_default"):
        raise InvalidInput(
            "--effective takes --broker ID, optionally with --topic, --user [--client], --client or --ip "
            "(not --entity-type/--entity-name)"
        )
    if params.get("broker_defaults"):
        raise InvalidInput("--effective describes one broker: give --broker ID, not --broker-defaults")
    broker = params.get("broker")
    if broker is None:
        raise InvalidInput("--effective needs --broker ID: effective values depend on the broker")
    text = str(broker).strip()
    if not text.isdigit():
        raise InvalidInput(
            f"--broker {broker!r} must be a broker id (a non-negative integer) with --effective"
        )
    broker_id = int(text)

    def named(key: str) -> str | None:
        """The name given (literally), "" for the default entity, None when not given."""
        value, default = params.get(key), bool(params.get(f"{key}_defaults"))
        if value is not None and default:
            raise InvalidInput(f"--{key} and --{key}-defaults cannot be combined")
        return "" if default else value

    topic, user, client, ip = params.get("topic"), named("user"), named("client"), named("ip")
    given = [flag for flag, value in (("--topic", topic), ("--ip", ip)) if value is not None]
    if user is not None or client is not None:
        given.append("--user/--client")
    if len(given) > 1:
        raise InvalidInput(f"name one entity besides --broker (got {', '.join(given)})")
    if topic is not None:
        return broker_id, Entity.of(EntityType.TOPICS, topic)
    if ip is not None:
        return broker_id, Entity.named(EntityType.IPS, ip)
    if user is not None:
        return broker_id, Entity.named(EntityType.USERS, user, client)
    if client is not None:
        return broker_id, Entity.named(EntityType.CLIENTS, client)
    return broker_id, None


def describe_effective(params: dict[str, Any]) -> None:
    broker_id, target = effective_target(params)
    with open_store() as store:
        report = effective_config(store, broker_id, target)
    show(EffectiveView(report))


@dataclass(frozen=True)
class EffectiveView:
    report: EffectiveReport

    def to_json(self) -> dict[str, Any]:
        return self.report.to_json()

    def render(self, out: Console) -> None:
        render_table(out, self.report)


def render_table(out: Console, report: EffectiveReport) -> None:
    change = "unknown" if report.last_applied_change is None else str(report.last_applied_change)
    progress = f"its listener has applied up to change {change}"
    if report.pending:
        progress += "; [yellow]changes to it are still pending[/]"
    if report.problems:
        progress += f"; [red]{len(report.problems)} problem(s)[/]"
    table = Table(
        title=f"Effective config of {safe(report.entity_path)} on broker {report.broker_id} ({progress})",
        title_justify="left",
        show_edge=False,
    )
    table.add_column("key", style="bold", no_wrap=True, overflow="fold")
    table.add_column("value", overflow="fold")
    table.add_column("source", no_wrap=True)
    table.add_column("synonyms", style="dim", overflow="fold")
    differ = bool(report.stored)
    if differ:
        table.add_column("stored (not in force)", style="yellow", overflow="fold")
    for value in report.values:
        shown = value.to_json(mask=True)
        synonyms = "; ".join(f"{s['name']}={_cell(s['value'])} ({s['source']})" for s in shown["synonyms"])
        row = [safe(value.name), safe(_cell(shown["value"])), safe(value.source), safe(synonyms)]
        if differ:
            row.append(safe(_cell(report.stored[value.name])) if value.name in report.stored else "")
        table.add_row(*row)
    out.print(table)
    for item in report.ignored:
        out.print(f"[yellow]ignored[/] {safe(item.entity_path)} {safe(item.name)}: {safe(item.reason)}")
    for problem in report.problems:
        where = problem.entity_path or problem.notification or "?"
        out.print(
            f"[red]{problem.kind}[/] {safe(where)} (change {problem.change_number}): {safe(problem.reason)}"
        )


def _cell(value: str | None) -> str:
    return "null" if value is None else value
