"""``--wait [SECONDS]`` on alter, apply and rollback: follow the live listeners until they applied it.

The write is committed first and stays committed whatever the wait finds; the wait only says
what the fleet did with it (Contract 7): every live broker applied it (exit 0), a broker refused
it (exit 9: rejected, ignored or unreadable, with its reason), or the time ran out with brokers
still pending (exit 10). On a terminal the brokers' statuses update live; with ``-o json`` the
command's document gains ``"rollout"``; piped, one line per broker is printed as it answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click
from rich.table import Table

from configctl import fleet
from configctl.cli.render import progress, safe
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
    if not written:
        return fleet.wait(store, written, timeout)
    view = _Waiting()
    with progress(view) as on_update:
        result = view.result = fleet.wait(store, written, timeout, on_update=on_update)
    return result


class _Waiting:
    """The brokers' statuses while waiting (:func:`configctl.cli.render.progress`): a live table on a
    terminal; piped, one line per broker as it answers, then one per broker still pending."""

    def __init__(self) -> None:
        self.outcomes: list[fleet.BrokerOutcome] = []
        self.printed: dict[int, str] = {}
        self.result: fleet.WaitResult | None = None

    def update(self, outcomes: list[fleet.BrokerOutcome]) -> list[str]:
        self.outcomes = outcomes
        lines = []
        for item in outcomes:
            if item.status != fleet.PENDING and self.printed.get(item.broker_id) != item.status:
                self.printed[item.broker_id] = item.status
                lines.append(_line(item))
        return lines

    def render(self) -> Table:
        return _table(self.outcomes)

    def closing(self) -> list[str]:
        return [_line(item) for item in self.result.pending] if self.result is not None else []


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
