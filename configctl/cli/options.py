"""Options shared by every command, accepted before or after the subcommand name.

``configctl --zookeeper H:P describe ...`` and ``configctl describe --zookeeper H:P ...``
mean the same; a value given on the subcommand wins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

DEFAULT_ZOOKEEPER = "127.0.0.1:2181"


@dataclass
class GlobalSettings:
    zookeeper: str = DEFAULT_ZOOKEEPER
    output: str = "table"
    zk_auth: str | None = None
    zk_timeout: float = 10.0
    # True when --zookeeper or CONFIGCTL_ZOOKEEPER named a server (not just the default);
    # the audit consults ZooKeeper only then.
    zookeeper_explicit: bool = False


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    settings = ctx.find_object(GlobalSettings)
    if settings is None:
        settings = ctx.ensure_object(GlobalSettings)
    source = ctx.get_parameter_source(param.name)  # type: ignore[arg-type]
    explicit = source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")
    if param.name == "zookeeper" and explicit:
        settings.zookeeper_explicit = True
    if value is not None and (explicit or getattr(settings, param.name) in (None, _defaults[param.name])):
        setattr(settings, param.name, value)
    return value


_defaults = {"zookeeper": DEFAULT_ZOOKEEPER, "output": "table", "zk_auth": None, "zk_timeout": 10.0}


def global_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --zookeeper/--zk-auth/--zk-timeout/--output; values land in :class:`GlobalSettings`."""
    options = [
        click.option(
            "--zookeeper",
            envvar="CONFIGCTL_ZOOKEEPER",
            default=DEFAULT_ZOOKEEPER,
            show_default=True,
            metavar="HOST:PORT[,HOST:PORT][/chroot]",
            help="ZooKeeper connect string (env CONFIGCTL_ZOOKEEPER).",
            callback=_store,
            expose_value=False,
            is_eager=True,
        ),
        click.option(
            "--zk-auth",
            envvar="CONFIGCTL_ZK_AUTH",
            default=None,
            metavar="digest:USER:PASSWORD",
            help="Authenticate to ZooKeeper; nodes created are then writable only by this identity "
            "(env CONFIGCTL_ZK_AUTH).",
            callback=_store,
            expose_value=False,
            is_eager=True,
        ),
        click.option(
            "--zk-timeout",
            type=click.FloatRange(min=0.1),
            default=10.0,
            show_default=True,
            metavar="SECONDS",
            help="How long to wait for ZooKeeper before giving up.",
            callback=_store,
            expose_value=False,
            is_eager=True,
        ),
        click.option(
            "--output",
            "-o",
            type=click.Choice(["table", "json"]),
            default="table",
            show_default=True,
            help="Render as a rich table or as one JSON document on stdout.",
            callback=_store,
            expose_value=False,
            is_eager=True,
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def settings() -> GlobalSettings:
    """The merged global settings of the running command."""
    ctx = click.get_current_context()
    return ctx.ensure_object(GlobalSettings)
