"""The ``configctl`` entry point: a click group whose subcommands load lazily.

Subcommands are imported only when invoked, so ``configctl --help`` and the write path
never pay for pyspark (the audit) or the listener machinery.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from configctl import __version__
from configctl.cli.habits import hint, no_such_command, no_such_option
from configctl.cli.options import global_options
from configctl.errors import EXIT_CODES, ConfigctlError, one_line, printable

# command name -> ("module:attribute", short help); the module is imported on first use only.
# The short help is what `configctl --help` lists without importing every command (that import
# cost --help about 90 ms); tests/unit/test_cli_main.py holds it equal to each command's own.
_COMMANDS: dict[str, tuple[str, str]] = {
    "alter": ("configctl.cli.alter:alter", "Set or delete dynamic configs of one entity."),
    "describe": (
        "configctl.cli.describe:describe",
        "Show dynamic configs: one entity, or every entity of a type when no name is given.",
    ),
    "zk": ("configctl.cli.zk:zk", "Run a real ZooKeeper (one server or a 3-node ensemble) on this machine."),
    "listener": (
        "configctl.cli.listener:listener",
        "The broker-side listener (Kafka's DynamicConfigManager, embeddable as configctl.listener).",
    ),
    "audit": ("configctl.cli.audit:audit", "Audit the fleet's snapshots for configuration drift with Spark."),
    "plan": (
        "configctl.cli.desired:plan",
        "Show what apply would change: add / change / delete per key, per entity.",
    ),
    "apply": (
        "configctl.cli.desired:apply",
        "Make ZooKeeper match the file, in batched atomic transactions.",
    ),
    "export": ("configctl.cli.desired:export", "Write the current dynamic configs as a desired-state file."),
    "history": ("configctl.cli.history:history", "Show the recorded writes of one entity, newest first."),
    "rollback": (
        "configctl.cli.history:rollback",
        "Restore an entity's config as recorded at version N (see configctl history).",
    ),
    "config": (
        "configctl.cli.config:config",
        "Inspect configctl's own settings (flags, CONFIGCTL_* variables, profiles).",
    ),
    "migration": (
        "configctl.cli.migration:migration",
        "Carry a cluster from ZooKeeper to KRaft: where it is, and whether KRaft holds what ZooKeeper held.",
    ),
    "status": (
        "configctl.cli.status:status",
        "Show every broker: live or not, the change it applied, how far behind, and its problems.",
    ),
    "retire": (
        "configctl.cli.status:retire",
        "Forget a decommissioned broker, so status and --wait stop counting it as down.",
    ),
    "snapshot": (
        "configctl.cli.snapshot:snapshot",
        "Ask every broker (--bootstrap-server) what it runs and write its snapshot lines for the audit.",
    ),
    "rollout": (
        "configctl.cli.rollout:rollout",
        "Canary and wave rollouts: list them, show one, and finish one whose process died.",
    ),
    "blame": (
        "configctl.cli.blame:blame",
        "Show the writes that produced a key's value on one broker, newest first.",
    ),
    "diff": (
        "configctl.cli.diff:diff",
        "Compare effective configs: two brokers (now or --at T), or one broker at two moments.",
    ),
    "serve": (
        "configctl.cli.serve:serve",
        "Serve the fleet console: a live, read-only web view of what every broker runs.",
    ),
}


class LazyGroup(click.Group):
    """A group that resolves its commands from :data:`_COMMANDS` on demand."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in _COMMANDS if _available(name))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attr = entry[0].split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return None
            raise
        return getattr(module, attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from :data:`_COMMANDS`, without importing a single command."""
        rows = [(name, _COMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _available(name: str) -> bool:
    module_name = _COMMANDS[name][0].split(":")[0]
    return importlib.util.find_spec(module_name) is not None


_EPILOG = "Exit status: " + "; ".join(f"{code} {text}" for code, text in EXIT_CODES.items()) + "."


@click.group(cls=LazyGroup, epilog=_EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="configctl")
@global_options
def cli() -> None:
    """Validated, atomic dynamic configuration for Kafka-style broker fleets.

    Writes configs and change notifications to ZooKeeper exactly as kafka-configs.sh does,
    runs the broker-side listener, and audits the fleet for drift with Spark.
    """


def _long_options(ctx: click.Context | None) -> list[str]:
    """Every long option the command that refused an option takes (what a typo may have meant)."""
    if ctx is None:
        return []
    names = [
        name
        for param in ctx.command.get_params(ctx)
        if isinstance(param, click.Option) and not param.hidden
        for name in (*param.opts, *param.secondary_opts)
    ]
    return sorted({name for name in names if name.startswith("--")})


def _subcommands(ctx: click.Context | None) -> list[str]:
    """The commands of the group that did not know a name (the lazy group lists them unimported)."""
    if ctx is None or not isinstance(ctx.command, click.Group):
        return []
    return list(ctx.command.list_commands(ctx))


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; every :class:`ConfigctlError` becomes one line on stderr and its exit status."""
    try:
        # Without standalone mode click returns (rather than raises) the code of ctx.exit().
        returned = cli.main(args=argv, prog_name="configctl", standalone_mode=False)
    except ConfigctlError as exc:
        click.echo(f"error: {printable(exc.message)}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.NoSuchOption as exc:
        arguments = sys.argv[1:] if argv is None else argv
        subcommand = exc.ctx.info_name if exc.ctx is not None and exc.ctx.parent is not None else None
        advice = hint(exc.option_name, arguments, subcommand) or no_such_option(
            exc.option_name, _long_options(exc.ctx)
        )
        click.echo(f"error: {printable(one_line(advice))}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.NoSuchCommand as exc:
        message = no_such_command(exc.command_name, _subcommands(exc.ctx))
        click.echo(f"error: {printable(one_line(message))}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"error: {printable(one_line(exc.format_message()))}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        sys.exit(130)
    sys.exit(returned if isinstance(returned, int) else 0)
