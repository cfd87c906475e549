"""The options that name a moment (``--at``, ``--since``, ``--until``) and where applied logs are.

A light module (click and :mod:`configctl.timeref` only): ``describe`` imports it at startup.
A moment that is not one of the three spellings is a usage error (exit 2), one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from configctl.errors import InvalidInput
from configctl.timeref import TimeRef, parse

F = TypeVar("F", bound=Callable[..., Any])


class MomentType(click.ParamType):
    """``2026-11-24T14:05:00Z`` (local time without a zone), ``-90s``/``-2h``/``-3d``, ``change:N``."""

    name = "T"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> TimeRef:
        if isinstance(value, TimeRef):
            return value
        try:
            return parse(str(value))
        except InvalidInput as exc:
            self.fail(str(exc), param, ctx)


MOMENT = MomentType()

APPLIED_LOG_HELP = (
    "A listener's --state-dir (or its applied/ directory): read what the broker ran from its applied "
    "log there. Repeatable."
)


def effective_moment_options(command: F) -> F:
    """``describe --effective``'s ``--at``, ``--applied-log`` and ``--only-overrides``."""
    for option in reversed(
        [
            click.option(
                "--at",
                "at",
                type=MOMENT,
                default=None,
                metavar="T",
                help="With --effective: the config as of T (ISO-8601, local time without a zone; -90s, -2h, "
                "-3d; or change:N), rebuilt from history; exit 13 beyond what history covers.",
            ),
            click.option(
                "--applied-log", "applied_logs", multiple=True, metavar="DIR", help=APPLIED_LOG_HELP
            ),
            click.option(
                "--only-overrides",
                is_flag=True,
                help="With --effective: only values set dynamically (not server.properties or Kafka's defaults).",
            ),
        ]
    ):
        command = option(command)
    return command


def refuse_without_effective(kwargs: dict[str, Any]) -> None:
    """``--at`` and friends answer about effective values only."""
    given = [
        flag
        for flag, name in (
            ("--at", "at"),
            ("--applied-log", "applied_logs"),
            ("--only-overrides", "only_overrides"),
        )
        if kwargs.get(name)
    ]
    if given:
        raise click.UsageError(f"{', '.join(given)} needs --effective --broker ID")
