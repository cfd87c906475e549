"""``--wait [SECONDS]`` on alter, apply and rollback: follow the live listeners until they applied it.

The write is committed first and stays committed whatever the wait finds; the wait only says
what the fleet did with it (Contract 7): every live broker applied it (exit 0), a broker refused
it (exit 9: rejected, ignored or unreadable, with its reason), or the time ran out with brokers
still pending (exit 10). On a terminal the brokers' statuses update live; with ``-o json`` the
command's document gains ``"rollout"``; piped, one line per broker is printed as it answers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table

from configctl import fleet
from configctl.cli.render import as_json, safe
from configctl.fleet import conclude as conclude  # the exit status a wait earned; commands import it here
from configctl.store import Committed, ConfigStore

DEFAULT_WAIT = 60.0
_STYLES = {fleet.APPLIED: "green", fleet.PENDING: "yellow"}


def wait_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--wait",
        "wait",
        type=click.FloatRange(min=0, max=86_400),
        is_flag=False,
        flag_value=DEFAULT_WAIT,
        default=None,
        metavar="[SECONDS]",
        help=f"After the commit, wait until every live broker's listener applied it (default {DEFAULT_WAIT:g}s); "
        "exit 9 if a broker refused it, 10 if the wait timed out (the write stays committed either way).",
    )(func)


def follow(store: ConfigStore, committed: Sequence[Committed], timeout: float) -> fleet.WaitResult:
    """Wait for the live brokers to apply ``committed``, showing their statuses as they arrive."""
    written = [fleet.Written(c.entity, c.change_number) for c in committed if c.change_number is not None]
    if as_json() or not written:
        return fleet.wait(store, written, timeout)
    err = Console(stderr=True, highlight=False)
    if sys.stderr.isatty():
        with Live(_table([]), console=err, transient=False, refresh_per_second=8) as live:
            return fleet.wait(store, written, timeout, on_update=lambda o: live.update(_table(o)))
    printed: dict[int, str] = {}

    def lines(outcomes: list[fleet.BrokerOutcome]) -> None:
        for item in outcomes:
            if item.status != fleet.PENDING and printed.get(item.broker_id) != item.status:
                printed[item.broker_id] = item.status
                err.print(_line(item))

    result = fleet.wait(store, written, timeout, on_update=lines)
    for item in result.pending:
        err.print(_line(item))
    return result


def _line(item: fleet.BrokerOutcome) -> str:
    style = _STYLES.get(item.status, "red")
    reason = f": {safe(item.reason)}" if item.reason and item.status != fleet.APPLIED else ""
    return f"broker {item.broker_id}: [{style}]{item.status}[/]{reason}"


def _table(outcomes: list[fleet.BrokerOutcome]) -> Table:
    table = Table(title="Waiting for the brokers", title_justify="left", show_edge=False)
    table.add_column("broker", justify="right")
    table.add_column("status")
    table.add_column("reason", overflow="fold")
    for item in outcomes:
        style = _STYLES.get(item.status, "red")
        table.add_row(str(item.broker_id), f"[{style}]{item.status}[/]", safe(item.reason or ""))
    return table
