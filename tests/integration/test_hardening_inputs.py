"""Issue 23, inputs: every path is looked at before it is opened, nesting never becomes a
traceback, and an operator's profile name reaches the terminal escaped.

Each test is one observed case that failed before the fix. Commands run as real processes with
a timeout, so a case that would block for ever fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers import run_cli

pytestmark = pytest.mark.zk

NO_HANG = 30.0
"""Seconds a refused input may take at most: it is refused before anything is opened."""


def one_line_error(result) -> str:
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    """A named pipe nobody writes to: opening it for reading would block until a writer came."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def run(*args: str, env: dict[str, str] | None = None):
    """The command, failing the test (not hanging it) if it does not return in time."""
    try:
        return run_cli(*args, env=env, timeout=NO_HANG)
    except subprocess.TimeoutExpired:
        pytest.fail(f"configctl {' '.join(args)} blocked for {NO_HANG:g}s")


def test_a_fifo_as_the_profile_file_is_refused_at_once(fifo):
    result = run("--profile", "prod", "config", "show", env={"CONFIGCTL_CONFIG": str(fifo)})
    assert result.returncode == 1
    assert "named pipe" in one_line_error(result) and str(fifo) in result.stderr


def test_a_fifo_as_the_digest_key_file_is_refused_at_once(fifo, tmp_path):
    result = run(
        "audit", "desired-state", "--out", str(tmp_path / "out.json"), "--digest-key-file", str(fifo)
    )
    assert result.returncode == 1
    assert "digest key file" in one_line_error(result) and "named pipe" in result.stderr
    assert not (tmp_path / "out.json").exists()


def test_a_fifo_as_the_listeners_digest_key_file_is_refused_at_once(fifo, tmp_path, zk_connect):
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\n")
    result = run(
        "--zookeeper", zk_connect, "listener", "run", "--broker-id", "1",
        "--server-properties", str(props), "--digest-key-file", str(fifo),
    )  # fmt: skip
    assert result.returncode == 1
    assert "named pipe" in one_line_error(result)


@pytest.mark.parametrize(
    ("variable", "needs"),
    [
        ("CONFIGCTL_ZK_SASL_PASSWORD_FILE", {"CONFIGCTL_ZK_SASL": "digest:someone"}),
        ("CONFIGCTL_ZK_AUTH_PASSWORD_FILE", {"CONFIGCTL_ZK_AUTH": "digest:someone"}),
        ("CONFIGCTL_ZK_TLS_CA", {"CONFIGCTL_ZK_TLS": "true"}),
    ],
)
def test_a_fifo_as_any_file_setting_is_refused_at_once(fifo, variable, needs):
    result = run("config", "show", env={variable: str(fifo), **needs})
    assert result.returncode == 1, result.stderr
    assert "named pipe" in result.stderr and "Traceback" not in result.stderr


def test_a_fifo_as_a_desired_state_file_is_refused_at_once(fifo, zk_connect):
    result = run("--zookeeper", zk_connect, "plan", "-f", str(fifo))
    assert result.returncode == 1
    assert "named pipe" in one_line_error(result)


def test_a_fifo_as_the_audits_desired_state_is_refused_at_once(fifo, tmp_path):
    (tmp_path / "snapshots").mkdir()
    result = run("audit", "--snapshots", str(tmp_path / "snapshots"), "--desired-state", str(fifo))
    assert result.returncode == 1
    assert "desired state" in one_line_error(result) and "named pipe" in result.stderr


def test_a_fifo_as_the_command_config_file_is_refused_at_once(fifo):
    result = run(
        "--bootstrap-server", "127.0.0.1:1", "--command-config", str(fifo), "describe", "--topic", "t"
    )
    assert result.returncode == 1
    assert "--command-config" in one_line_error(result) and "named pipe" in result.stderr


def test_a_pipe_the_shell_holds_open_is_still_read(tmp_path):
    profile = "[profiles.p]\nzookeeper = 'zk9:2181'\n"
    result = subprocess.run(
        ["bash", "-c", 'CONFIGCTL_CONFIG=<(printf "%s" "$P") exec "$@"', "bash",
         *_configctl(), "--profile", "p", "config", "show", "-o", "json"],
        env={**_env(), "P": profile}, capture_output=True, text=True, timeout=NO_HANG,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "zk9:2181" in result.stdout


@pytest.mark.parametrize(
    "nested",
    [
        "zookeeper = " + "[" * 5000 + "]" * 5000,
        "zookeeper = " + "{a = " * 3000 + "1" + "}" * 3000,
    ],
    ids=["arrays", "inline-tables"],
)
def test_a_deeply_nested_profile_file_is_one_line_exit_1(tmp_path, nested):
    config = tmp_path / "config.toml"
    config.write_text(f"[profiles.p]\n{nested}\n")
    result = run("--profile", "p", "config", "show", env={"CONFIGCTL_CONFIG": str(config)})
    assert result.returncode == 1
    assert "nesting too deep" in one_line_error(result) and str(config) in result.stderr


def test_a_profile_name_with_control_characters_is_shown_escaped(tmp_path):
    name = "p\x1b[31mred\x07"
    config = tmp_path / "config.toml"
    config.write_text('[profiles."p\\u001b[31mred\\u0007"]\nzookeeper = "zk1:2181"\n')
    result = run("--profile", name, "config", "show", env={"CONFIGCTL_CONFIG": str(config)})
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "p\\e[31mred\\x07" in result.stdout


def _configctl() -> list[str]:
    import sys

    return [sys.executable, "-m", "configctl"]


def _env() -> dict[str, str]:
    from helpers import child_env

    return child_env()


def test_a_deeply_nested_desired_state_for_the_audit_is_one_line_exit_1(tmp_path):
    (tmp_path / "snapshots").mkdir()
    desired = tmp_path / "desired.json"
    desired.write_text("[" * 100_000 + "]" * 100_000)
    result = run("audit", "--snapshots", str(tmp_path / "snapshots"), "--desired-state", str(desired))
    assert result.returncode == 1
    assert "nesting too deep" in one_line_error(result)


def test_a_deeply_nested_saved_plan_is_one_line_exit_1(tmp_path, zk_connect):
    desired = tmp_path / "desired.yaml"
    desired.write_text("topics:\n  orders: {retention.ms: 86400000}\n")
    saved = tmp_path / "plan.json"
    saved.write_text("[" * 100_000 + "]" * 100_000)
    result = run("--zookeeper", zk_connect, "apply", "-f", str(desired), "--plan", str(saved), "--yes")
    assert result.returncode == 1
    assert "nesting too deep" in one_line_error(result)
