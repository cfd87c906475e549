"""Global settings: one precedence (flag > environment > profile > default) whatever the position.

The resolver is tested directly; then the real CLI (``configctl config show -o json`` in a
subprocess) shows that every global option given before the subcommand, after it, in the
environment and in a profile lands where the rule says (issue 13 item 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli

from configctl.cli.habits import hint
from configctl.errors import EnvironmentProblem, InvalidInput
from configctl.localzk.tls import ensure_certificates
from configctl.settings import PROFILE_KEYS, SETTINGS, resolve

pytestmark = pytest.mark.unit


# ----------------------------------------------------------------------------- the resolver


def test_flag_beats_environment_beats_profile_beats_default(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[profiles.p]\nzookeeper = "profile:1"\nzk-timeout = 4\noutput = "json"\n')
    env = {"CONFIGCTL_CONFIG": str(config), "CONFIGCTL_PROFILE": "p", "CONFIGCTL_ZK_TIMEOUT": "5"}
    resolved = resolve({"zookeeper": "flag:1"}, env)
    assert resolved.zookeeper == "flag:1" and str(resolved.entry("zookeeper").source) == "flag --zookeeper"
    assert resolved.zk_timeout == 5.0
    assert str(resolved.entry("zk-timeout").source) == "environment CONFIGCTL_ZK_TIMEOUT"
    assert resolved.output == "json" and str(resolved.entry("output").source) == "profile p"
    assert str(resolved.entry("zk-auth").source) == "default" and resolved.zk_auth is None
    assert resolved.zookeeper_explicit


def test_defaults_and_zookeeper_explicit_only_when_configured(tmp_path: Path) -> None:
    resolved = resolve({}, {})
    assert (resolved.zookeeper, resolved.zk_timeout, resolved.output) == ("127.0.0.1:2181", 10.0, "table")
    assert not resolved.zookeeper_explicit
    assert resolved.connection().tls is None and resolved.connection().sasl is None
    assert resolve({}, {"CONFIGCTL_ZOOKEEPER": "h:1"}).zookeeper_explicit
    config = tmp_path / "c.toml"
    config.write_text('[profiles.p]\nzookeeper = "h:2"\n')
    assert resolve({"profile": "p"}, {"CONFIGCTL_CONFIG": str(config)}).zookeeper_explicit


def test_an_empty_variable_counts_as_unset() -> None:
    assert resolve({}, {"CONFIGCTL_ZOOKEEPER": ""}).zookeeper == "127.0.0.1:2181"


@pytest.mark.parametrize(
    ("flags", "env", "message"),
    [
        ({"zookeeper": "nonsense:xx"}, {}, "--zookeeper 'nonsense:xx': port 'xx' is not a number"),
        ({}, {"CONFIGCTL_ZOOKEEPER": "host/m/.."}, "CONFIGCTL_ZOOKEEPER 'host/m/..': chroot"),
        ({"zk-timeout": "nan"}, {}, "--zk-timeout must be between"),
        ({}, {"CONFIGCTL_ZK_TIMEOUT": "1e308"}, "CONFIGCTL_ZK_TIMEOUT must be between"),
        ({}, {"CONFIGCTL_ZK_TLS": "maybe"}, "CONFIGCTL_ZK_TLS must be true or false"),
        ({"zk-auth": "basic:me"}, {}, "--zk-auth must look like digest:USER:PASSWORD"),
        ({"zk-sasl": "plain:me"}, {}, "--zk-sasl must be digest:USER or gssapi, not 'plain'"),
        ({"zk-sasl": "digest:me"}, {}, "--zk-sasl digest:me needs the user's password"),
        ({"zk-tls-cert": "/c.pem"}, {}, "--zk-tls-cert and --zk-tls-key go together"),
    ],
)
def test_bad_values_name_the_place_to_fix(flags: dict[str, Any], env: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        resolve(flags, env).connection()
    assert caught.value.message.startswith(message), caught.value.message


def test_a_sasl_password_on_the_command_line_is_refused_without_echoing_it() -> None:
    with pytest.raises(InvalidInput) as caught:
        resolve({"zk-sasl": "digest:alice:s3cret"}, {}).connection()
    assert "never goes on the command line" in caught.value.message
    assert "s3cret" not in caught.value.message


def test_passwords_from_environment_or_file(tmp_path: Path) -> None:
    password_file = tmp_path / "pw"
    password_file.write_text("from-file\n")
    by_env = resolve({"zk-sasl": "digest:alice"}, {"CONFIGCTL_ZK_SASL_PASSWORD": "from-env"}).connection()
    assert by_env.sasl is not None and by_env.sasl.password == "from-env"
    assert by_env.sasl.kazoo_options() == {
        "mechanism": "DIGEST-MD5",
        "username": "alice",
        "password": "from-env",
    }
    by_file = resolve({"zk-sasl": "digest:alice", "zk-sasl-password-file": str(password_file)}, {})
    assert by_file.connection().sasl.password == "from-file"  # type: ignore[union-attr]
    # a flag beats the environment for the password too
    both = resolve(
        {"zk-sasl": "digest:alice", "zk-sasl-password-file": str(password_file)},
        {"CONFIGCTL_ZK_SASL_PASSWORD": "from-env"},
    )
    assert both.connection().sasl.password == "from-file"  # type: ignore[union-attr]
    with pytest.raises(InvalidInput, match="given twice"):
        resolve(
            {},
            {
                "CONFIGCTL_ZK_SASL": "digest:alice",
                "CONFIGCTL_ZK_SASL_PASSWORD": "a",
                "CONFIGCTL_ZK_SASL_PASSWORD_FILE": str(password_file),
            },
        ).connection()


def test_zk_auth_password_inline_or_from_a_file(tmp_path: Path) -> None:
    password_file = tmp_path / "pw"
    password_file.write_text("filed")
    assert resolve({"zk-auth": "digest:admin:inline"}, {}).zk_auth == "digest:admin:inline"
    filed = resolve({"zk-auth": "digest:admin", "zk-auth-password-file": str(password_file)}, {})
    assert filed.zk_auth == "digest:admin:filed"
    assert (
        resolve({"zk-auth": "digest:admin"}, {"CONFIGCTL_ZK_AUTH_PASSWORD": "env"}).zk_auth
        == "digest:admin:env"
    )
    with pytest.raises(InvalidInput, match="given twice"):
        resolve(
            {"zk-auth": "digest:admin:inline", "zk-auth-password-file": str(password_file)}, {}
        ).connection()
    with pytest.raises(InvalidInput, match="needs the password"):
        resolve({"zk-auth": "digest:admin"}, {}).connection()


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), ("", "is empty"), ("a\nb\n", "more than one line"), (b"\xff", "not UTF-8")],
)
def test_bad_password_files(tmp_path: Path, content: str | bytes | None, message: str) -> None:
    path = tmp_path / "pw"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(InvalidInput, match=message):
        resolve({"zk-sasl": "digest:alice", "zk-sasl-password-file": str(path)}, {}).connection()


def test_tls_is_implied_by_its_files_unless_said_off() -> None:
    assert resolve({"zk-tls-ca": "/ca.pem"}, {}).zk_tls
    assert not resolve({"zk-tls-ca": "/ca.pem", "zk-tls": False}, {}).zk_tls
    assert not resolve({}, {"CONFIGCTL_ZK_TLS_CA": "/ca.pem", "CONFIGCTL_ZK_TLS": "false"}).zk_tls
    tls = resolve({}, {"CONFIGCTL_ZK_TLS": "true"}).connection().tls
    assert tls is not None and tls.ca is None  # the system's trust store
    options = resolve({"zk-tls-ca": "/ca.pem"}, {}).connection().kazoo_options()
    assert options["use_ssl"] and options["verify_certs"] and options["check_hostname"]
    assert options["ca"] == "/ca.pem"


def test_tls_files_are_checked_before_connecting(tmp_path: Path) -> None:
    good = ensure_certificates(tmp_path / "good")
    other = ensure_certificates(tmp_path / "other")
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("hello\n")

    def check(**flags: Any) -> None:
        resolve(flags, {}).connection().check_local()

    check(
        **{
            "zk-tls-ca": str(good.ca),
            "zk-tls-cert": str(good.client_cert),
            "zk-tls-key": str(good.client_key),
        }
    )
    with pytest.raises(InvalidInput, match=r"TLS CA file .*missing.pem: no such file"):
        check(**{"zk-tls-ca": str(tmp_path / "missing.pem")})
    with pytest.raises(InvalidInput, match="holds no PEM certificate"):
        check(**{"zk-tls-ca": str(not_pem)})
    with pytest.raises(InvalidInput, match="is a directory"):
        check(**{"zk-tls-ca": str(tmp_path)})
    with pytest.raises(InvalidInput, match="does not belong to the certificate"):
        check(**{"zk-tls-cert": str(good.client_cert), "zk-tls-key": str(other.client_key)})
    with pytest.raises(InvalidInput, match="not a PEM private key"):
        check(**{"zk-tls-cert": str(good.client_cert), "zk-tls-key": str(not_pem)})


def test_an_encrypted_key_needs_its_password_and_is_never_prompted_for(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    files = ensure_certificates(tmp_path / "tls")
    key = serialization.load_pem_private_key(files.client_key.read_bytes(), None)
    encrypted = tmp_path / "encrypted-key.pem"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"key-secret"),
        )
    )
    flags = {"zk-tls-cert": str(files.client_cert), "zk-tls-key": str(encrypted)}
    with pytest.raises(InvalidInput, match="is encrypted: give its password"):
        resolve(flags, {}).connection().check_local()
    with pytest.raises(InvalidInput, match="wrong key password"):
        resolve(flags, {"CONFIGCTL_ZK_TLS_KEY_PASSWORD": "nope"}).connection().check_local()
    good = resolve(flags, {"CONFIGCTL_ZK_TLS_KEY_PASSWORD": "key-secret"}).connection()
    good.check_local()
    assert good.kazoo_options()["keyfile_password"] == "key-secret"


def test_gssapi_needs_kerberos_support() -> None:
    connection = resolve({"zk-sasl": "gssapi"}, {}).connection()
    assert connection.sasl is not None and connection.sasl.kazoo_options() == {"mechanism": "GSSAPI"}
    assert connection.identity is None
    import importlib.util

    if importlib.util.find_spec("kerberos") is None:
        with pytest.raises(EnvironmentProblem, match="needs the Python package 'kerberos'"):
            connection.check_local()
    else:  # pragma: no cover - depends on the machine
        connection.check_local()


def test_every_setting_has_a_variable_and_every_option_a_profile_key() -> None:
    assert all(s.env.startswith("CONFIGCTL_") for s in SETTINGS)
    assert len({s.env for s in SETTINGS}) == len(SETTINGS)
    assert set(PROFILE_KEYS) == {s.name for s in SETTINGS if s.kind != "secret"}


# ----------------------------------------------------------------------------- kafka-configs.sh habits


@pytest.mark.parametrize(
    ("option", "argv", "subcommand", "expected"),
    [
        ("--alter", ["--alter", "--topic", "t"], None, "try `configctl alter ...`"),
        ("--describe", ["--describe"], None, "try `configctl describe ...`"),
        (
            "--entity-type",
            ["--entity-type", "topics", "--describe"],
            None,
            "try `configctl describe --entity-type",
        ),
        (
            "--entity-name",
            ["--entity-name", "x", "--add-config", "a=1"],
            None,
            "try `configctl alter --entity-name",
        ),
        (
            "--topic",
            ["--topic", "x"],
            None,
            "`configctl describe --topic ...` or `configctl alter --topic ...`",
        ),
        ("--alter", ["alter", "--alter"], "alter", "`configctl alter` already says what to do: drop --alter"),
        ("--alter", ["history", "--alter"], "history", "try `configctl alter ...`"),
        ("--zk-tls-config-file", ["--zk-tls-config-file", "f"], None, "--zk-tls, --zk-tls-ca"),
    ],
)
def test_habit_hints(option: str, argv: list[str], subcommand: str | None, expected: str) -> None:
    said = hint(option, argv, subcommand)
    assert said is not None and expected in said


def test_no_hint_for_other_unknown_options() -> None:
    assert hint("--nonsense", ["describe", "--nonsense"], "describe") is None


def test_hints_never_echo_the_command_line() -> None:
    said = hint("--alter", ["--alter", "--add-config", "SCRAM-SHA-256=[password=s3cret]"], None)
    assert said is not None and "s3cret" not in said


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--zookeeper", "h:1", "--alter", "--entity-type", "topics", "--entity-name", "t"],
            "configctl alter",
        ),
        (["--describe", "--entity-type", "topics"], "configctl describe"),
        (
            ["--bootstrap-controller", "localhost:9093", "--describe", "--entity-type", "topics"],
            "try `configctl describe ...`",
        ),
    ],
)
def test_habits_through_the_cli(args: list[str], expected: str) -> None:
    code, out, err = run_cli(*args)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and expected in err, err


# ----------------------------------------------------------------------------- the real CLI, every option


# Each setting's value from each place; the winner of every scenario below is a consistent set.
PLACES = ("env", "before", "after", "profile")


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Per place, a value for every flag-capable setting (real files: config show loads them)."""
    root = tmp_path_factory.mktemp("places")
    values: dict[str, dict[str, Any]] = {}
    for index, place in enumerate(PLACES, start=1):
        tls = ensure_certificates(root / place)
        for name in ("auth", "key", "sasl"):
            (root / place / f"{name}.pw").write_text(f"{place}-{name}\n")
        values[place] = {
            "zookeeper": f"{place}-host:{2180 + index}",
            "zk-timeout": float(10 + index),
            "zk-auth": f"digest:{place}-admin",
            "zk-auth-password-file": str(root / place / "auth.pw"),
            "zk-tls-ca": str(tls.ca),
            "zk-tls-cert": str(tls.client_cert),
            "zk-tls-key": str(tls.client_key),
            "zk-tls-key-password-file": str(root / place / "key.pw"),
            "zk-sasl": f"digest:{place}-user",
            "zk-sasl-password-file": str(root / place / "sasl.pw"),
            "bootstrap-server": f"{place}-kafka:{9090 + index}",
            "command-config": str(root / place / "client.properties"),
            "history-archive": str(root / place / "archive"),
        }
        (root / place / "client.properties").write_text("security.protocol=PLAINTEXT\n")
        (root / place / "archive").mkdir()
    return values


# output and zk-tls have two values: the winner of each scenario gets "json" / true
WINNING = {"output": "json", "zk-tls": True}
LOSING = {"output": "table", "zk-tls": False}
OPTIONS = [s for s in SETTINGS if s.flag is not None]


def _flags(values: dict[str, Any], *, winning: bool) -> list[str]:
    args: list[str] = []
    for setting in OPTIONS:
        if setting.name in WINNING:
            value = (WINNING if winning else LOSING)[setting.name]
            if setting.name == "zk-tls":
                args.append("--zk-tls" if value else "--no-zk-tls")
            else:
                args += [setting.flag or "", value]
        else:
            value = values[setting.name]
            args += [setting.flag or "", f"{value:g}" if isinstance(value, float) else str(value)]
    return args


def _env(values: dict[str, Any], *, winning: bool) -> dict[str, str]:
    env = {}
    for setting in OPTIONS:
        value = (WINNING if winning else LOSING).get(setting.name, values.get(setting.name))
        env[setting.env] = str(value).lower() if isinstance(value, bool) else str(value)
    return env


def _profile_file(tmp_path: Path, values: dict[str, Any], *, winning: bool) -> Path:
    lines = ["[profiles.team]"]
    for setting in OPTIONS:
        value = (WINNING if winning else LOSING).get(setting.name, values.get(setting.name))
        lines.append(f"{setting.name} = {json.dumps(value)}")
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _show(*args: str, env: dict[str, str]) -> dict[str, Any]:
    code, out, err = run_cli(*args, env=env)
    assert code == 0, err
    assert err == ""
    return json.loads(out)


def _expect(shown: dict[str, Any], values: dict[str, Any], source: str) -> None:
    for setting in OPTIONS:
        row = shown["settings"][setting.name]
        expected = WINNING.get(setting.name, values.get(setting.name))
        if setting.name == "zk-auth":
            expected = f"{expected}"  # no inline password: shown as given
        assert row["value"] == expected, (setting.name, row)
        kind = source.split()[0]
        wanted = (
            f"{kind} {setting.flag}"
            if kind == "flag"
            else f"{kind} {setting.env}"
            if kind == "environment"
            else source
        )
        assert row["source"] == wanted, (setting.name, row)


@pytest.mark.parametrize("position", ["before", "after"])
def test_every_option_as_a_flag_beats_the_environment_in_either_position(
    places: dict[str, dict[str, Any]], position: str, tmp_path: Path
) -> None:
    flags = _flags(places[position], winning=True)
    env = {**_env(places["env"], winning=False), "CONFIGCTL_CONFIG": str(tmp_path / "none.toml")}
    args = [*flags, "config", "show"] if position == "before" else ["config", "show", *flags]
    _expect(_show(*args, env=env), places[position], "flag")


def test_a_flag_after_the_subcommand_beats_the_same_flag_before_it(
    places: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    before = _flags(places["before"], winning=False)
    after = _flags(places["after"], winning=True)
    env = {**_env(places["env"], winning=False), "CONFIGCTL_CONFIG": str(tmp_path / "none.toml")}
    _expect(_show(*before, "config", "show", *after, env=env), places["after"], "flag")


def test_the_environment_beats_the_profile(places: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    config = _profile_file(tmp_path, places["profile"], winning=False)
    env = {**_env(places["env"], winning=True), "CONFIGCTL_CONFIG": str(config), "CONFIGCTL_PROFILE": "team"}
    shown = _show("config", "show", env=env)
    _expect(shown, places["env"], "environment")
    assert shown["profile"] == "team" and shown["profile_source"] == "environment CONFIGCTL_PROFILE"


@pytest.mark.parametrize("position", ["before", "after"])
def test_the_profile_beats_the_defaults(
    places: dict[str, dict[str, Any]], tmp_path: Path, position: str
) -> None:
    config = _profile_file(tmp_path, places["profile"], winning=True)
    args = (
        ["--profile", "team", "config", "show"]
        if position == "before"
        else ["config", "show", "--profile", "team"]
    )
    shown = _show(*args, env={"CONFIGCTL_CONFIG": str(config)})
    _expect(shown, places["profile"], "profile team")
    assert shown["profile_source"] == "flag --profile"


def test_profile_flag_beats_profile_variable_and_after_beats_before(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("".join(f'[profiles.{p}]\nzookeeper = "{p}:1"\n' for p in ("a", "b", "c")))
    env = {"CONFIGCTL_CONFIG": str(config), "CONFIGCTL_PROFILE": "a"}
    assert _show("config", "show", "-o", "json", env=env)["settings"]["zookeeper"]["value"] == "a:1"
    shown = _show("--profile", "b", "config", "show", "-o", "json", env=env)
    assert shown["settings"]["zookeeper"]["value"] == "b:1"
    shown = _show("--profile", "b", "config", "show", "--profile", "c", "-o", "json", env=env)
    assert shown["settings"]["zookeeper"] == {
        "value": "c:1",
        "source": "profile c",
        "flag": "--zookeeper",
        "env": "CONFIGCTL_ZOOKEEPER",
    }


def test_config_show_masks_secrets_and_says_default(tmp_path: Path) -> None:
    env = {
        "CONFIGCTL_CONFIG": str(tmp_path / "none.toml"),
        "CONFIGCTL_ZK_AUTH": "digest:admin:hunter2",
        "CONFIGCTL_ZK_SASL_PASSWORD": "s3cret",
    }
    code, out, err = run_cli("config", "show", "-o", "json", env=env)
    assert code == 0, err
    assert "hunter2" not in out and "s3cret" not in out
    shown = json.loads(out)
    assert shown["settings"]["zk-auth"]["value"] == "digest:admin:******"
    assert shown["settings"]["zk-sasl-password"] == {
        "value": "******",
        "source": "environment CONFIGCTL_ZK_SASL_PASSWORD",
        "flag": None,
        "env": "CONFIGCTL_ZK_SASL_PASSWORD",
    }
    assert shown["settings"]["zookeeper"]["source"] == "default"
    assert shown["profile"] is None and shown["problem"] is None
    code, out, err = run_cli("config", "show", env=env)
    assert code == 0, err
    assert "hunter2" not in out and "s3cret" not in out
    assert "zookeeper" in out and "127.0.0.1:2181" in out and "default" in out and "no profile" in out


def test_config_show_reports_a_problem_after_the_table(tmp_path: Path) -> None:
    code, out, err = run_cli(
        "config", "show", env={"CONFIGCTL_ZK_TIMEOUT": "inf", "CONFIGCTL_CONFIG": str(tmp_path / "x.toml")}
    )
    assert code == 1
    assert "CONFIGCTL_ZK_TIMEOUT" in out  # the table is there ...
    assert (
        err == "error: CONFIGCTL_ZK_TIMEOUT must be between 0.1 and 3600 seconds, not 'inf'\n"
    )  # ... then why


def test_zk_free_commands_ignore_bad_zookeeper_settings(tmp_path: Path) -> None:
    env = {"CONFIGCTL_ZOOKEEPER": "nonsense:xx", "CONFIGCTL_ZK_TIMEOUT": "nan"}
    code, out, err = run_cli("zk", "status", "--data-dir", str(tmp_path / "nothing"), env=env)
    assert (code, out) == (6, "")
    assert err.startswith("error: no ZooKeeper started by configctl is running"), err
