"""Profiles: the TOML file, its errors (one line, exit 1), paths relative to the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli

from configctl.errors import InvalidInput
from configctl.profiles import DEFAULT_FILE, config_file, load_profile, profile_names
from configctl.settings import PROFILE_KEYS, resolve

pytestmark = pytest.mark.unit


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_where_the_file_is(tmp_path: Path) -> None:
    assert config_file({"CONFIGCTL_CONFIG": str(tmp_path / "x.toml")}) == tmp_path / "x.toml"
    assert config_file({}) == DEFAULT_FILE.expanduser()
    assert str(DEFAULT_FILE) == "~/.config/configctl/config.toml"


def test_a_profile_with_every_kind_of_value(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        [profiles.prod]
        zookeeper = "zk1:2181,zk2:2181/kafka"
        zk_timeout = 2.5             # underscores work as well as dashes
        zk-tls = true
        zk-tls-ca = "tls/ca.pem"     # relative to this file
        zk-sasl = "digest:configctl"
        zk-sasl-password-file = "~/zk-password"
        output = "json"

        [profiles.dev]
        zookeeper = "127.0.0.1:2181"
        """,
    )
    assert profile_names(path) == ["dev", "prod"]
    resolved = resolve({}, {"CONFIGCTL_CONFIG": str(path), "CONFIGCTL_PROFILE": "prod"})
    assert resolved.zookeeper == "zk1:2181,zk2:2181/kafka"
    assert resolved.zk_timeout == 2.5 and resolved.output == "json" and resolved.zk_tls
    assert resolved.entry("zk-tls-ca").value == str(tmp_path / "tls" / "ca.pem")
    assert resolved.entry("zk-sasl-password-file").value == str(Path("~/zk-password").expanduser())
    assert str(resolved.entry("zookeeper").source) == "profile prod"


@pytest.mark.parametrize(
    ("text", "profile", "message"),
    [
        (None, "prod", "profile 'prod': there is no profile file"),
        ("[profiles.prod\n", "prod", "not valid TOML"),
        (
            "zookeeper = 'x:1'\n",
            "prod",
            "unknown top-level key 'zookeeper' (profiles go in [profiles.NAME] tables)",
        ),
        ("profiles = 3\n", "prod", "'profiles' must be a table"),
        ("[profiles]\nprod = 3\n", "prod", "profiles.prod must be a table"),
        ("[profiles.dev]\n", "prod", "profile 'prod' is not in"),
        (
            "[profiles.prod]\nzookeper = 'x:1'\n",
            "prod",
            "unknown setting 'zookeper'; did you mean 'zookeeper'?",
        ),
        ("[profiles.prod]\nzk-sasl-password = 'p'\n", "prod", "unknown setting 'zk-sasl-password'"),
        ("[profiles.prod]\nzk_tls = true\nzk-tls = false\n", "prod", "'zk-tls' is set twice"),
        ("[profiles.prod]\nzk-tls = 'yes'\n", "prod", "zk-tls in profile prod"),
        ("[profiles.prod]\nzk-timeout = '5'\n", "prod", "must be a number of seconds"),
        ("[profiles.prod]\nzookeeper = 5\n", "prod", "zookeeper in profile prod"),
    ],
)
def test_bad_files_and_names(tmp_path: Path, text: str | None, profile: str, message: str) -> None:
    path = tmp_path / "config.toml" if text is None else _write(tmp_path, text)
    with pytest.raises(InvalidInput) as caught:
        resolve({"profile": profile}, {"CONFIGCTL_CONFIG": str(path)})
    assert message in caught.value.message
    assert "\n" not in caught.value.message


def test_the_file_is_read_only_when_a_profile_is_asked_for(tmp_path: Path) -> None:
    path = _write(tmp_path, "this is not toml")
    assert resolve({}, {"CONFIGCTL_CONFIG": str(path)}).zookeeper == "127.0.0.1:2181"
    assert profile_names(path) == []


def test_a_value_in_a_profile_is_checked_when_used(tmp_path: Path) -> None:
    path = _write(tmp_path, "[profiles.p]\nzookeeper = 'host:notaport'\n")
    resolved = resolve({"profile": "p"}, {"CONFIGCTL_CONFIG": str(path)})
    with pytest.raises(InvalidInput, match=r"^zookeeper in profile p 'host:notaport': port 'notaport'"):
        resolved.connection()


def test_known_keys_are_the_global_options(tmp_path: Path) -> None:
    assert "zookeeper" in PROFILE_KEYS and "zk-sasl-password-file" in PROFILE_KEYS
    path = _write(tmp_path, "[profiles.x]\nfavourite-colour = 'blue'\n")
    with pytest.raises(InvalidInput, match=r"unknown setting 'favourite-colour'; known: zookeeper$"):
        load_profile(path, "x", ["zookeeper"])


@pytest.mark.parametrize(
    ("text", "args", "message"),
    [
        (None, ["--profile", "prod"], "error: profile 'prod': there is no profile file"),
        ("[profiles.dev]\n", ["--profile", "prod"], "error: profile 'prod' is not in"),
        ("[profiles.prod]\nzookeper = 'x'\n", ["--profile", "prod"], "error: profile 'prod' in "),
        ("[[profiles", ["--profile", "prod"], "error: profile file "),
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ["describe", "--topic", "t"],
        ["config", "show"],
        ["alter", "--topic", "t", "--add-config", "retention.ms=1"],
    ],
)
def test_profile_errors_through_the_cli_are_one_line_exit_1(
    tmp_path: Path, text: str | None, args: list[str], message: str, command: list[str]
) -> None:
    path = tmp_path / "config.toml" if text is None else _write(tmp_path, text)
    code, out, err = run_cli(*args, *command, env={"CONFIGCTL_CONFIG": str(path)})
    assert code == 1, err
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith(message), err
