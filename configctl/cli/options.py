"""Options shared by every command, accepted before or after the subcommand name.

``configctl --zookeeper H:P describe ...`` and ``configctl describe --zookeeper H:P ...``
mean the same. The options only record what was typed; :func:`settings` merges it with the
environment and the profile by one rule (:mod:`configctl.settings`): a flag beats the
environment, which beats the profile, which beats the default, whatever the flag's position.
Given both before and after the subcommand, the one after wins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource
from click.shell_completion import CompletionItem

from configctl.errors import InvalidInput
from configctl.settings import (
    BY_NAME,
    DEFAULT_ZOOKEEPER,
    ENVIRONMENT,
    OUTPUTS,
    PROFILE_FLAG,
    SETTINGS,
    GlobalSettings,
    configctl_environment,
    environment_entry,
    resolve,
)

__all__ = [
    "DEFAULT_ZOOKEEPER",
    "GlobalSettings",
    "bootstrap_controller",
    "digest_key_file_option",
    "environment_option",
    "global_options",
    "settings",
]

_FLAGS = "configctl.flags"  # ctx.meta key: setting name -> value typed on the command line
_CACHE = "configctl.settings"


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep a value only when it was typed: the environment and defaults are merged later, by rank.

    ``ctx.meta`` is shared by a command and its subcommands, and options are processed in
    command-line order, group first: a flag after the subcommand overwrites one before it.
    """
    if ctx.get_parameter_source(param.name or "") is ParameterSource.COMMANDLINE:
        name = "profile" if param.name == "profile" else (param.name or "").replace("_", "-")
        ctx.meta.setdefault(_FLAGS, {})[name] = value
    return value


def _option(*decls: str, **attrs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(*decls, callback=_remember, expose_value=False, is_eager=True, **attrs)


def _complete_profile(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``--profile``: the profiles of the profile file (the other completions, which may ask the
    store, are :mod:`configctl.cli.completion`'s)."""
    from configctl.profiles import config_file, profile_names

    return [CompletionItem(name) for name in profile_names(config_file()) if name.startswith(incomplete)]


def _options() -> list[Callable[[Callable[..., Any]], Callable[..., Any]]]:
    options = [
        _option(
            PROFILE_FLAG,
            "profile",
            default=None,
            metavar="NAME",
            help="Take settings from this profile of the profile file (env CONFIGCTL_PROFILE).",
            shell_complete=_complete_profile,
        )
    ]
    for setting in SETTINGS:
        if setting.flag is None:
            continue
        env = f"env {setting.env}"
        if setting.kind == "switch":
            options.append(
                _option(
                    f"{setting.flag}/--no-{setting.name}",
                    setting.param,
                    default=None,
                    help=f"{setting.help} ({env}=true)",
                )
            )
        elif setting.kind == "choice":
            decls = [setting.flag, setting.short] if setting.short else [setting.flag]
            options.append(
                _option(
                    *decls,
                    setting.param,
                    type=click.Choice(OUTPUTS),
                    default=None,
                    help=f"{setting.help} [default: {setting.default}] ({env})",
                )
            )
        else:
            default = f" [default: {setting.default:g}]" if setting.kind == "seconds" else ""
            default = default or (f" [default: {setting.default}]" if setting.default else "")
            options.append(
                _option(
                    setting.flag,
                    setting.param,
                    default=None,
                    metavar=setting.metavar,
                    type=_BootstrapServers(setting.flag)
                    if setting.kind == "brokers"
                    else _CLICK_TYPES.get(setting.kind),
                    help=f"{setting.help}{default} ({env})",
                )
            )
        if setting.name == "bootstrap-server" and CONTROLLER not in BY_NAME:
            options.append(_controller_option())
    return options


CONTROLLER = "bootstrap-controller"


def _controller_option() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--bootstrap-controller``: a flag only, until :mod:`configctl.settings` lists it as a
    setting (then its variable and profile key come with it, and this option is that setting's)."""
    return _option(
        f"--{CONTROLLER}",
        CONTROLLER.replace("-", "_"),
        default=None,
        metavar="HOST:PORT[,HOST:PORT]",
        type=_BootstrapServers(f"--{CONTROLLER}"),
        help="A KRaft cluster's controllers to ask instead of its brokers (as kafka-configs.sh "
        "--bootstrap-controller); not with --bootstrap-server. configctl's history lives on the "
        "brokers, so only what needs no history works there (docs/kraft.md).",
    )


def bootstrap_controller(ctx: click.Context | None = None) -> str | None:
    """The controllers ``--bootstrap-controller`` names, or None (checked by the Admin API edge)."""
    ctx = ctx or click.get_current_context()
    chosen = settings(ctx)
    if CONTROLLER in chosen.entries:
        value = chosen.entries[CONTROLLER].value
    else:
        value = ctx.meta.get(_FLAGS, {}).get(CONTROLLER)
    return str(value).strip() or None if value else None


class _BootstrapServers(click.ParamType):
    """``--bootstrap-server`` as typed: brokers' ``HOST:PORT[,HOST:PORT...]``, checked by the Admin
    API edge's own rule, so a bad one is a usage error (exit 2) before anything is opened; the same
    value from the environment or a profile is refused when the store is built (exit 1)."""

    name = "HOST:PORT[,HOST:PORT]"

    def __init__(self, what: str = "--bootstrap-server") -> None:
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from configctl.adminapi.connection import bootstrap_servers

        try:
            bootstrap_servers(value, self.what)
        except InvalidInput as exc:
            self.fail(exc.message.removeprefix(f"{self.what} "), param, ctx)
        return value


_CLICK_TYPES = {
    "file": click.Path(dir_okay=False),
    "directory": click.Path(file_okay=False),
}
"""Each kind's click type; "brokers" is :class:`_BootstrapServers`, naming its own flag."""


def global_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the global options (``--zookeeper``, ``--zk-*``, ``--bootstrap-server``,
    ``--bootstrap-controller``, ``--output``, ``--profile``)."""
    for option in reversed(_options()):
        func = option(func)
    return func


class _EnvironmentOption(click.Option):
    """An option that falls back to an environment-only setting (:data:`configctl.settings.ENVIRONMENT_SETTINGS`).

    click treats the variable as it treats its own ``envvar`` (an empty one is unset; the value is
    converted and checked as if typed), but reads it through :mod:`configctl.settings`.
    """

    def __init__(self, *args: Any, setting: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.setting = setting

    def resolve_envvar_value(self, ctx: click.Context) -> str | None:
        entry = environment_entry(self.setting)
        return str(entry.value) if entry.source.level == ENVIRONMENT else None


def environment_option(
    *decls: str, setting: str, **attrs: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command option whose default is the environment-only setting ``setting`` (its variable)."""
    return click.option(*decls, cls=_EnvironmentOption, setting=setting, **attrs)


def environment_variable(setting: str) -> str:
    """The variable of the environment-only setting ``setting``, as help texts name it."""
    return BY_NAME[setting].env


def digest_key_file_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--digest-key-file`` (else ``$CONFIGCTL_DIGEST_KEY_FILE``), the same for the listener and
    the audit: the fleet's key is read from a file, never from argv; ``help`` says what it does there."""
    return environment_option(
        "--digest-key-file",
        setting="digest-key-file",
        type=click.Path(dir_okay=False),
        metavar="FILE",
        help=help,
    )


def settings(ctx: click.Context | None = None) -> GlobalSettings:
    """The merged global settings of the running command (``ctx``: another context, e.g. while
    completing). Resolved again when the flags or the ``CONFIGCTL_*`` environment changed."""
    ctx = ctx or click.get_current_context()
    flags = dict(ctx.meta.get(_FLAGS, {}))
    environ = configctl_environment()
    key = (tuple(sorted(flags.items(), key=lambda item: item[0])), tuple(sorted(environ.items())))
    cached = ctx.meta.get(_CACHE)
    if cached is not None and cached[0] == key:
        return cached[1]
    resolved = resolve(flags, environ)
    ctx.meta[_CACHE] = (key, resolved)
    return resolved
