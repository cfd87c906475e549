"""``--wait [SECONDS]`` on alter, apply and rollback: follow the brokers until they applied it.

The write is committed first and stays committed whatever the wait finds; the wait only says
what the fleet did with it: every known broker applied it (exit 0), a broker refused
it (exit 9: ignored, unreadable or, beside a real broker, mismatch, with its reason; a configctl
plugin's veto, worded as the plugin's, not the broker's), a Kafka broker was not asked (exit 10:
``computed``, its listener applied it without asking the broker), or the time ran out with brokers
not there yet (exit 10: pending, down, ``down (not registered)`` for a Kafka broker that Kafka no
longer registers while its listener runs, or unreachable). Every known
broker counts: a live listener, one whose listener is down (``down``, until it comes back or the
operator retires it with ``configctl retire``), and one Kafka registers. An ``alter`` that changes
nothing still reports where the fleet stands with what was asked. On a terminal the brokers'
statuses update live; with ``-o json`` the command's document gains ``"rollout"``; piped, one
line per broker is printed as it answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import click
from rich.table import Table

from configctl import fleet
from configctl.cli.render import progress, safe
from configctl.entities import Entity
from configctl.fleet import (
    raise_for_wait as raise_for_wait,  # the exit status a wait earned; commands import it here
)
from configctl.rollout import brokerwait
from configctl.store import Committed, ConfigStore

DEFAULT_WAIT = 60.0
MAX_WAIT = 86_400.0
_STYLES = {fleet.APPLIED: "green", fleet.COMPUTED: "yellow", **dict.fromkeys(fleet.UNANSWERED, "yellow")}


class Seconds(click.ParamType):
    """A wait in seconds: a finite number from 0 to a day (``nan``, ``inf`` and negatives refused
    as what they are, not as an unknown option)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(number) or not 0 <= number <= MAX_WAIT:
            self.fail(f"{value!r} is not a number of seconds from 0 to {MAX_WAIT:g}", param, ctx)
        return number


def wait_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--wait",
        "wait",
        type=Seconds(),
        is_flag=False,
        flag_value=DEFAULT_WAIT,
        default=None,
        metavar="[SECONDS]",
        help=f"After the commit, wait until every known broker applied it (default {DEFAULT_WAIT:g}s); "
        "exit 9 if a broker refused it, 10 if the wait ended first. A broker whose listener is down "
        "counts as not applied until it comes back or is retired (configctl retire ID); beside a real "
        "broker, applied means the broker itself reports it. The write stays committed either way.",
    )(func)


def follow(store: ConfigStore, committed: Sequence[Committed], timeout: float) -> fleet.WaitResult:
    """Wait for every known broker to apply ``committed``, showing their statuses as they arrive."""
    if store.capabilities.broker_reports:
        return _ask(store, brokerwait.expected_after_write(store, [c.entity for c in committed]), timeout)
    written = [fleet.Written(c.entity, c.change_number) for c in committed if c.change_number is not None]
    return _follow(store, written, timeout)


def follow_unchanged(store: ConfigStore, entities: Sequence[Entity], timeout: float) -> fleet.WaitResult:
    """After a write that changed nothing: where every known broker stands with ``entities`` as
    they are stored now (applied up to the newest change, no problem with them left)."""
    if store.capabilities.broker_reports:
        return _ask(store, brokerwait.expected_after_write(store, entities), timeout)
    newest = store.latest_change_number()
    number = -1 if newest is None else newest
    return _follow(store, [fleet.Written(e, number, refused_from=-1) for e in entities], timeout)


def _follow(store: ConfigStore, written: Sequence[fleet.Written], timeout: float) -> fleet.WaitResult:
    if not written:
        return fleet.wait(store, written, timeout, every_known=True)
    view = _Waiting()
    with progress(view) as on_update:
        result = view.result = fleet.wait(store, written, timeout, on_update=on_update, every_known=True)
    return result


def _ask(store: ConfigStore, expected: Sequence[brokerwait.Expected], timeout: float) -> fleet.WaitResult:
    """Where no listener publishes a fleet state (KRaft): every registered broker asked until it
    reports what was written (:mod:`configctl.rollout.brokerwait`)."""
    if not expected:
        return brokerwait.wait_reported(store, expected, timeout)
    view = _Waiting()
    with progress(view) as on_update:
        result = view.result = brokerwait.wait_reported(store, expected, timeout, on_update=on_update)
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
            if item.status not in fleet.UNANSWERED and self.printed.get(item.broker_id) != item.label:
                self.printed[item.broker_id] = item.label
                lines.append(_line(item))
        return lines

    def render(self) -> Table:
        return _table(self.outcomes)

    def closing(self) -> list[str]:
        if self.result is None:
            return []
        return [_line(item) for item in self.result.pending if item.status in fleet.UNANSWERED]


def _line(item: fleet.BrokerOutcome) -> str:
    style = _STYLES.get(item.status, "red")
    said = item.refusal or item.reason
    reason = f": {safe(said)}" if said and item.status != fleet.APPLIED else ""
    return f"broker {item.broker_id}: [{style}]{item.label}[/]{reason}"


def _table(outcomes: list[fleet.BrokerOutcome]) -> Table:
    table = Table(title="Waiting for the brokers", title_justify="left", show_edge=False)
    table.add_column("broker", justify="right")
    table.add_column("status")
    table.add_column("reason", overflow="fold")
    for item in outcomes:
        style = _STYLES.get(item.status, "red")
        table.add_row(
            str(item.broker_id), f"[{style}]{item.label}[/]", safe(item.refusal or item.reason or "")
        )
    return table
