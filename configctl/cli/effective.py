"""``configctl describe --effective --broker N [--topic T | --user U [--client C] | --client C | --ip IP]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from configctl import fleet
from configctl.cli.context import open_store
from configctl.cli.render import safe, show
from configctl.effective import EffectiveReport, effective_config
from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.timeref import TimeRef, iso


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


def describe_effective(
    params: dict[str, Any],
    at: TimeRef | None = None,
    applied_logs: Sequence[str] = (),
    only_overrides: bool = False,
    **_: Any,
) -> None:
    """Now, or as of ``at`` (rebuilt from history: :mod:`configctl.travel.at`)."""
    broker_id, target = effective_target(params)
    with open_store() as store:
        if at is None:
            report = effective_config(store, broker_id, target)
        else:
            from configctl.travel.at import effective_at

            report = effective_at(store, broker_id, target, at, applied_logs)
    show(EffectiveView(report.only_overrides() if only_overrides else report))


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
    if report.at_ms is not None:
        log = report.applied_log
        covered = "its applied log covers it" if log and log.get("covered") else "no applied log covers it"
        progress = f"as of {iso(report.at_ms)}, from history; {covered}; applied up to change {change}"
    if report.truth == fleet.REPORTED:
        progress = fleet.figures(report.truth)
    elif report.truth is not None:
        said = fleet.figures(report.truth) or report.truth
        good = report.truth in (fleet.OBSERVED, fleet.CONFIG_MANAGER)
        progress = (f"{said}; " if good else f"[red]{said}[/]; ") + progress
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
    for item in (report.applied_log or {}).get("differences", ()):
        by = "reported by the broker" if item["reported_by_broker"] else "applied"
        out.print(
            f"[yellow]differs[/] {safe(item['name'])}: history says {safe(_cell(item['written']))}, the broker ran "
            f"{safe(_cell(item['ran']))} ({by}, change {item['change_number']})"
        )
    for problem in report.problems:
        where = problem.entity_path or problem.notification or "?"
        change = f" (change {problem.change_number})" if problem.change_number is not None else ""
        out.print(f"[red]{problem.kind}[/] {safe(where)}{change}: {safe(problem.reason)}")


def _cell(value: str | None) -> str:
    return "null" if value is None else value
