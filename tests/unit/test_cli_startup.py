"""The command line starts fast: ``--help`` lists every command without paying for pyspark."""

from __future__ import annotations

import pytest
from helpers import run_cli

pytestmark = pytest.mark.unit


def _imported_modules(importtime_log: str) -> set[str]:
    """Module names from ``-X importtime`` lines: ``import time: self | cumulative | name``."""
    names = set()
    for line in importtime_log.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


@pytest.mark.parametrize("args", [("--help",), ("zk", "--help"), ("zk", "start", "--help")])
def test_help_exits_0_without_importing_pyspark(args: tuple[str, ...]) -> None:
    code, out, err = run_cli(*args, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert code == 0, err
    assert out.startswith("Usage: configctl")
    modules = _imported_modules(err)
    assert "configctl.cli.main" in modules  # the import log is really there
    assert not {m for m in modules if m == "pyspark" or m.startswith("pyspark.")}


def test_top_level_help_lists_the_zk_command() -> None:
    code, out, _err = run_cli("--help")
    assert code == 0
    assert any(line.split()[:1] == ["zk"] for line in out.splitlines())


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("no-such-command",), "no-such-command"),
        (("zk", "bogus"), "bogus"),
        (("zk", "start", "--nodes", "2"), "--nodes"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    code, out, err = run_cli(*args)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err


def test_help_lists_each_command_with_its_own_short_help() -> None:
    """`--help` lists commands from a table (no command imported); the table must say what each
    command says of itself, or the two drift."""
    import click

    from configctl.cli.main import _COMMANDS, cli

    ctx = click.Context(cli)
    for name, (_target, short) in _COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None, name
        assert command.get_short_help_str(limit=200) == short, name


def test_help_imports_no_command_module() -> None:
    code, _out, err = run_cli("--help", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert code == 0
    modules = _imported_modules(err)
    assert "configctl.cli.main" in modules
    assert not {m for m in modules if m.startswith("configctl.cli.") and m not in ALLOWED_AT_HELP}


ALLOWED_AT_HELP = {
    "configctl.cli.main",
    "configctl.cli.options",
    "configctl.cli.habits",
    "configctl.cli.__main__",
}


def test_a_listener_that_is_no_sidecar_carries_no_kafka_client_spark_or_web_server() -> None:
    """What every broker's listener imports stays small: the Kafka client (a sidecar's), Spark (the
    audit's) and the console's web stack are loaded only by what uses them (about 8 MB of RSS for
    the Kafka client alone, in every listener of a fleet)."""
    import subprocess
    import sys

    probe = (
        "import sys, configctl.cli.main, configctl.cli.listener, configctl.listener.runtime\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & {'kafka', 'pyspark', 'starlette', 'uvicorn'})))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
