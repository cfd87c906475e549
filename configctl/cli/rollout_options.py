"""The rollout options of ``alter`` and ``apply`` (``--canary``, ``--waves``, ``--soak``, ``--check``, ...).

Apart from :mod:`configctl.cli.rollout` so that declaring them costs a command's start nothing:
the rollout machinery is imported only when one is asked for.

Each value is parsed as the command line is read (:func:`_remember`), so a mistyped one is a
usage error (exit 2, one line) like any invalid option, before anything else happens: ``apply
--waves 0`` is refused whether or not its plan has changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from configctl.errors import InvalidInput

_META = "configctl.rollout"
DEFAULT_CHECK_TIMEOUT = 60.0


def _parsed(name: str, value: Any) -> Any:
    """``value`` of the rollout option ``name`` as the rollout uses it (seconds, broker ids, a
    :class:`~configctl.rollout.parsing.WaveSpec`); :class:`click.UsageError` when it is not one."""
    from configctl.rollout import parsing  # pure and small; imported only when an option is given

    parsers: dict[str, Callable[[str], Any]] = {
        "canary": parsing.parse_broker_ids,
        "waves": parsing.parse_waves,
        "soak": lambda text: parsing.parse_duration(text, option="--soak"),
        "check_timeout": lambda text: parsing.parse_duration(text, option="--check-timeout"),
    }
    parser = parsers.get(name)
    if parser is None:
        return value
    try:
        return parser(value)
    except InvalidInput as exc:
        raise click.UsageError(exc.message) from None


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None and value is not False:
        assert param.name is not None
        ctx.meta.setdefault(_META, {})[param.name] = _parsed(param.name, value)
    return value


def given_options() -> dict[str, Any]:
    """The rollout options given to the running command, by name, parsed (:func:`_parsed`)."""
    return dict(click.get_current_context().meta.get(_META, {}))


def requested() -> bool:
    """Were rollout options given to this command (``alter --canary``, ``apply --waves``, ...)?"""
    return bool(given_options())


def _option(*decls: str, **attrs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(*decls, expose_value=False, callback=_remember, default=None, **attrs)


def _step_options(what: str) -> list[Callable[[Callable[..., Any]], Callable[..., Any]]]:
    return [
        _option(
            "--soak",
            "soak",
            metavar="DURATION",
            help=f"After {what} is applied, watch it this long (30s, 5m, 1h; a number is seconds): "
            "a new problem on those brokers fails it.",
        ),
        _option(
            "--check",
            "check",
            metavar="CMD",
            help=f"A shell command that must exit 0 for {what} to count as healthy (its environment names "
            "the brokers, the change numbers and the rollout; see docs/rollout.md).",
        ),
        _option(
            "--check-timeout",
            "check_timeout",
            metavar="DURATION",
            help=f"Kill the check after this long and count it as a failure [default: {DEFAULT_CHECK_TIMEOUT:g}s].",
        ),
    ]


def _with_options(
    func: Callable[..., Any], options: list[Callable[[Callable[..., Any]], Callable[..., Any]]], lead: str
) -> Callable[..., Any]:
    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        given = given_options()
        loose = sorted(name for name in given if name != lead)
        if loose and lead not in given:
            flags = ", ".join("--" + name.replace("_", "-") for name in loose)
            raise InvalidInput(f"{flags} only appl{'y' if len(loose) > 1 else 'ies'} with --{lead}")
        return func(*args, **kwargs)

    for option in reversed(options):
        checked = option(checked)
    return checked


def canary_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--canary IDS``, ``--soak``, ``--check``, ``--check-timeout`` on ``alter``."""
    lead = _option(
        "--canary",
        "canary",
        metavar="IDS",
        help="With --broker-defaults: first write the change as overrides on these brokers (comma-separated "
        "ids), judge it there, then promote it to <default> in one transaction or abort (docs/rollout.md).",
    )
    return _with_options(func, [lead, *_step_options("the canary")], "canary")


def wave_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--waves N|P%``, ``--soak``, ``--check``, ``--check-timeout``, ``--revert-on-failure`` on ``apply``."""
    lead = _option(
        "--waves",
        "waves",
        metavar="N|P%",
        help="Write the plan in N waves (or waves of P%% of its entities), each applied by every live broker "
        "(and healthy) before the next (docs/rollout.md).",
    )
    revert = click.option(
        "--revert-on-failure",
        "revert_on_failure",
        is_flag=True,
        default=False,
        expose_value=False,
        callback=_remember,
        help="If a wave fails, restore every entity already written to its exact previous bytes.",
    )
    return _with_options(func, [lead, *_step_options("each wave"), revert], "waves")
