"""docs/cli.md lists every command and option `--help` has: its lists are generated from click.

The generated part is rewritten by ``make cli-docs`` (scripts/cli_reference.py); this test fails
while the file differs from what the script writes, so an option cannot land undocumented.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("cli_reference", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return _script()


def test_docs_cli_md_is_what_make_cli_docs_writes(script: ModuleType) -> None:
    current = script.DOC.read_text(encoding="utf-8")
    wanted = script.rewrite(current, script.generate())
    assert current == wanted, (
        "docs/cli.md does not list the commands and options --help has: run `make cli-docs`"
    )


def test_every_command_has_a_section(script: ModuleType) -> None:
    from configctl.cli.main import cli

    text = script.DOC.read_text(encoding="utf-8")
    ctx = click.Context(cli, info_name="configctl")
    for name in cli.list_commands(ctx):
        assert f"### `configctl {name}`" in text, (
            f"configctl {name} is not in docs/cli.md: run `make cli-docs`"
        )


def test_a_new_option_changes_the_generated_part(script: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from configctl.cli.main import cli

    before = script.generate()
    command = cli.get_command(click.Context(cli), "status")
    assert command is not None
    extra = click.Option(["--brand-new-option"], is_flag=True, help="Not documented yet.")
    monkeypatch.setattr(command, "params", [*command.params, extra])
    after = script.generate()
    assert "--brand-new-option" not in before
    assert "`--brand-new-option` | Not documented yet. |" in after


def test_the_generated_part_does_not_depend_on_the_machine(script: ModuleType) -> None:
    generated = script.generate()
    assert str(Path.home()) not in generated
    assert generated == script.generate()
