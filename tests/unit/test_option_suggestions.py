"""A mistyped option suggests the options it was close to, and only those."""

from __future__ import annotations

import pytest
from helpers import run_cli

from configctl.cli.habits import close_options

ALTER_LIKE = ["--wait", "--zk-auth", "--add-config", "--add-config-file", "--command-config", "--dry-run"]


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("--watch", ["--wait"]),
        ("--add-confg", ["--add-config"]),
        ("--dry", ["--dry-run"]),
        ("--nonsense", []),
    ],
)
def test_only_close_matches_are_suggested(typed: str, expected: list[str]) -> None:
    assert close_options(typed, ALTER_LIKE) == expected


@pytest.mark.parametrize(
    ("args", "suggested", "not_suggested"),
    [
        (["alter", "--topic", "orders", "--watch"], "'--wait'", "--zk-auth"),
        (["describe", "--watch"], None, "--zk-auth"),
        (
            ["alter", "--topic", "orders", "--add-confg", "retention.ms=1"],
            "'--add-config'",
            "--command-config",
        ),
    ],
)
def test_the_cli_suggests_close_matches_only(
    args: list[str], suggested: str | None, not_suggested: str
) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: No such option")
    assert not_suggested not in line
    if suggested is None:
        assert "Did you mean" not in line
    else:
        assert suggested in line


def test_describe_all_points_to_the_effective_config() -> None:
    result = run_cli("describe", "--all", "--broker", "1")
    assert result.returncode == 2
    assert "configctl describe --effective --broker ID" in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["statsu"], "No such command 'statsu'. Did you mean 'status'?"),
        (["rollout", "lsit"], "No such command 'lsit'. Did you mean 'list'?"),
        (["frobnicate"], "No such command 'frobnicate'."),
    ],
)
def test_a_mistyped_command_suggests_close_commands(args: list[str], expected: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {expected}"
