"""Generate the command and option lists of docs/cli.md from the click commands themselves.

A new option documents itself: ``make cli-docs`` rewrites the part of docs/cli.md between the
markers below from what ``configctl ... --help`` knows (every command, its usage, each option
with its help), and ``tests/unit/test_cli_reference.py`` fails while the file differs from what
this script writes. The prose around the markers is written by hand and kept as it is.

Deterministic (commands and options in click's order, nothing taken from the machine: no
terminal width, no home directory, no default read from the environment) and fast (no server,
no ZooKeeper: the commands are only imported).

    python scripts/cli_reference.py            # rewrite docs/cli.md
    python scripts/cli_reference.py --check    # exit 1 if docs/cli.md is not what it would write
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cli.md"
BEGIN = "<!-- generated: every command and option, by scripts/cli_reference.py; edit with make cli-docs -->"
END = "<!-- end of generated part -->"


def _main_group() -> click.Group:
    sys.path.insert(0, str(ROOT))
    from configctl.cli.main import cli

    return cli


HOME = str(Path.home())


def _cell(text: str) -> str:
    """One Markdown table cell: one line, pipes escaped, this machine's home directory as ``~``."""
    return " ".join(text.replace(HOME, "~").split()).replace("|", "\\|")


def _options(ctx: click.Context, skip: frozenset[str]) -> list[tuple[str, str]]:
    """(spelling, meaning) of every visible option of ``ctx.command`` not in ``skip``."""
    rows = []
    for param in ctx.command.get_params(ctx):
        if (
            not isinstance(param, click.Option)
            or param.hidden
            or param.name in skip
            or "--help" in param.opts
        ):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        spelling, meaning = record
        rows.append((spelling, meaning))
    return rows


def _arguments(ctx: click.Context) -> list[str]:
    return [
        param.human_readable_name
        for param in ctx.command.get_params(ctx)
        if isinstance(param, click.Argument)
    ]


def _commands(ctx: click.Context) -> Iterator[click.Context]:
    """Every subcommand's context below ``ctx``, depth first, in name order."""
    command = ctx.command
    if not isinstance(command, click.Group):
        return
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is None or sub.hidden:
            continue
        sub_ctx = click.Context(sub, info_name=name, parent=ctx)
        yield sub_ctx
        yield from _commands(sub_ctx)


def _table(rows: list[tuple[str, str]]) -> list[str]:
    lines = ["| option | meaning |", "|---|---|"]
    lines += [f"| `{_cell(spelling)}` | {_cell(meaning)} |" for spelling, meaning in rows]
    return lines


def generate() -> str:
    """The generated part of docs/cli.md (without its markers)."""
    group = _main_group()
    root = click.Context(group, info_name="configctl")
    global_names = frozenset(p.name for p in group.get_params(root) if isinstance(p, click.Option) and p.name)
    lines = [
        "### Global options",
        "",
        "Accepted by every command, before or after its name.",
        "",
        *_table(_options(root, frozenset())),
    ]
    for ctx in _commands(root):
        command = ctx.command
        path = ctx.command_path
        usage = " ".join([path, *command.collect_usage_pieces(ctx)])
        lines += ["", f"### `{path}`", ""]
        short = command.get_short_help_str(limit=10_000)
        if short:
            lines += [_cell(short), ""]
        lines += [f"`{_cell(usage)}`"]
        arguments = _arguments(ctx)
        if arguments:
            lines += ["", "Arguments: " + ", ".join(f"`{a}`" for a in arguments) + "."]
        rows = _options(ctx, global_names)
        if rows:
            lines += ["", *_table(rows)]
    return "\n".join(lines) + "\n"


def rewrite(text: str, generated: str) -> str:
    """``text`` with what lies between the markers replaced by ``generated``."""
    start = text.find(BEGIN)
    end = text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{DOC}: the markers {BEGIN!r} ... {END!r} are missing")
    return text[: start + len(BEGIN)] + "\n\n" + generated + "\n" + text[end:]


def main(argv: list[str]) -> int:
    os.environ["COLUMNS"] = "100"  # no width-dependent text, whatever the terminal
    for name in [name for name in os.environ if name.startswith("CONFIGCTL_")]:
        del os.environ[name]  # the operator's settings are not the documented defaults
    current = DOC.read_text(encoding="utf-8")
    wanted = rewrite(current, generate())
    if "--check" in argv:
        if current != wanted:
            print(f"{DOC.relative_to(ROOT)} is out of date: run `make cli-docs`", file=sys.stderr)
            return 1
        return 0
    if current != wanted:
        DOC.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
