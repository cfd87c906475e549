"""How commands connect, against a real (plain) ZooKeeper, through the real CLI.

Issue 13 item 2: an explicit flag is never overridden by the environment, whatever its position,
so a write never lands on the environment's cluster when the operator named another. Item 4 and
issue 11: bad connect strings and timeouts are one line with exit 1; a chroot that does not exist
is refused by reads too; names complete from ZooKeeper.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from helpers import run_cli
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from configctl.cli import completion
from configctl.cli.alter import alter as alter_command

pytestmark = pytest.mark.zk


@pytest.fixture
def two_chroots(zk_server, _zk_admin: KazooClient) -> Iterator[tuple[str, str]]:
    """Two chroots on the shared server: what the environment names and what the flag names."""
    made = []
    for _ in range(2):
        chroot = f"/p-{uuid.uuid4().hex[:12]}"
        _zk_admin.create(chroot)
        made.append(chroot)
    try:
        yield made[0], made[1]
    finally:
        for chroot in made:
            _zk_admin.delete(chroot, recursive=True)


def _topic_in(admin: KazooClient, chroot: str, topic: str) -> bool:
    return admin.exists(f"{chroot}/config/topics/{topic}") is not None


@pytest.mark.parametrize("position", ["before", "after"])
def test_a_zookeeper_flag_beats_the_environment_for_writes(
    zk_server, _zk_admin: KazooClient, two_chroots: tuple[str, str], position: str
) -> None:
    env_chroot, flag_chroot = two_chroots
    host = zk_server.connect_string
    flag = ["--zookeeper", f"{host}{flag_chroot}"]
    write = ["alter", "--topic", "orders", "--add-config", "retention.ms=1000"]
    args = [*flag, *write] if position == "before" else [*write, *flag]
    code, _out, err = run_cli(*args, env={"CONFIGCTL_ZOOKEEPER": f"{host}{env_chroot}"})
    assert code == 0, err
    assert _topic_in(_zk_admin, flag_chroot, "orders")
    assert not _topic_in(_zk_admin, env_chroot, "orders")


def test_a_flag_after_the_subcommand_beats_one_before_it(
    zk_server, _zk_admin: KazooClient, two_chroots: tuple[str, str]
) -> None:
    before, after = two_chroots
    host = zk_server.connect_string
    code, _out, err = run_cli(
        "--zookeeper", f"{host}{before}", "alter", "--topic", "t", "--add-config", "retention.ms=1",
        "--zookeeper", f"{host}{after}",
    )  # fmt: skip
    assert code == 0, err
    assert _topic_in(_zk_admin, after, "t") and not _topic_in(_zk_admin, before, "t")


@pytest.mark.parametrize("position", ["before", "after"])
def test_a_zk_auth_flag_beats_the_environment(zk_connect: str, zk: KazooClient, position: str) -> None:
    flag = ["--zk-auth", "digest:mallory:pw"]
    write = ["alter", "--topic", "orders", "--add-config", "retention.ms=1000"]
    args = [*flag, *write] if position == "before" else [*write, *flag]
    env = {"CONFIGCTL_ZOOKEEPER": zk_connect, "CONFIGCTL_ZK_AUTH": "digest:admin:pw"}
    code, _out, err = run_cli(*args, env=env)
    assert code == 0, err
    acls, _stat = zk.get_acls("/config/topics/orders")
    owners = {acl.id.id.split(":")[0] for acl in acls if acl.id.scheme == "digest"}
    assert owners == {"mallory"}


def test_zk_auth_password_from_a_file(zk_connect: str, zk: KazooClient, tmp_path: Path) -> None:
    password = tmp_path / "zk-password"
    password.write_text("from-a-file\n")
    code, _out, err = run_cli(
        "alter", "--topic", "t", "--add-config", "retention.ms=1",
        "--zookeeper", zk_connect, "--zk-auth", "digest:admin", "--zk-auth-password-file", str(password),
    )  # fmt: skip
    assert code == 0, err
    owner = KazooClient(hosts=zk_connect, auth_data=[("digest", "admin:from-a-file")])
    owner.start(timeout=30)
    try:  # (ZooKeeper shows a digest ACL's hash only to a client that may administer the node)
        acls, _stat = owner.get_acls("/config/topics/t")
    finally:
        owner.stop()
        owner.close()
    assert make_digest_acl("admin", "from-a-file", all=True) in acls


@pytest.mark.parametrize("position", ["before", "after"])
def test_the_audit_reads_the_flags_zookeeper_not_the_environments(zk_connect: str, position: str) -> None:
    flags = ["--zookeeper", "127.0.0.1:1", "--zk-timeout", "1"]
    audit = ["audit", "desired-state"]
    args = [*flags, *audit] if position == "before" else [*audit, *flags]
    code, out, err = run_cli(*args, env={"CONFIGCTL_ZOOKEEPER": zk_connect})
    assert code == 3, err
    assert out == "" and err.startswith("error: cannot reach ZooKeeper at 127.0.0.1:1 within 1s"), err


def test_the_audit_uses_the_environments_zookeeper(zk_connect: str) -> None:
    run_cli(
        "alter", "--topic", "t", "--add-config", "retention.ms=5", env={"CONFIGCTL_ZOOKEEPER": zk_connect}
    )
    code, out, err = run_cli("audit", "desired-state", env={"CONFIGCTL_ZOOKEEPER": zk_connect})
    assert code == 0, err
    assert "retention.ms" in out


def test_a_timeout_flag_beats_the_environment() -> None:
    began = time.monotonic()
    code, _out, err = run_cli(
        "--zk-timeout",
        "1",
        "describe",
        "--topic",
        "t",
        env={"CONFIGCTL_ZK_TIMEOUT": "60", "CONFIGCTL_ZOOKEEPER": "127.0.0.1:1"},
    )
    assert code == 3 and "within 1s" in err, err
    assert time.monotonic() - began < 15


@pytest.mark.parametrize("position", ["before", "after"])
def test_an_output_flag_beats_the_environment(zk_connect: str, position: str) -> None:
    run_cli("alter", "--topic", "t", "--add-config", "retention.ms=5", "--zookeeper", zk_connect)
    flag = ["-o", "table"]
    describe = ["describe", "--topic", "t"]
    args = [*flag, *describe] if position == "before" else [*describe, *flag]
    code, out, err = run_cli(*args, env={"CONFIGCTL_ZOOKEEPER": zk_connect, "CONFIGCTL_OUTPUT": "json"})
    assert code == 0, err
    assert out.startswith("Dynamic configs for topic t")
    code, out, err = run_cli(*describe, env={"CONFIGCTL_ZOOKEEPER": zk_connect, "CONFIGCTL_OUTPUT": "json"})
    assert code == 0, err
    assert json.loads(out)[0]["config"] == {"retention.ms": "5"}


def test_a_profile_names_the_cluster(zk_connect: str, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[profiles.test]\nzookeeper = "{zk_connect}"\noutput = "json"\n')
    env = {"CONFIGCTL_CONFIG": str(config)}
    code, _out, err = run_cli(
        "--profile", "test", "alter", "--topic", "t", "--add-config", "retention.ms=7", env=env
    )
    assert code == 0, err
    code, out, err = run_cli("describe", "--topic", "t", env={**env, "CONFIGCTL_PROFILE": "test"})
    assert code == 0, err
    assert json.loads(out)[0]["config"] == {"retention.ms": "7"}


# ----------------------------------------------------------------------------- bad input, one line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--zookeeper", "nonsense:xx"],
            "error: --zookeeper 'nonsense:xx': port 'xx' is not a number from 1 to 65535",
        ),
        (
            ["--zookeeper", "host:notaport"],
            "error: --zookeeper 'host:notaport': port 'notaport' is not a number",
        ),
        (["--zookeeper", ":99999"], "error: --zookeeper ':99999': '' is not a host name or address"),
        (["--zookeeper", ""], "error: --zookeeper is empty"),
        (
            ["--zookeeper", "host/m/.."],
            "error: --zookeeper 'host/m/..': chroot '/m/..' has a relative segment '..'",
        ),
        (["--zookeeper", "h:1,,h:2"], "error: --zookeeper 'h:1,,h:2': an empty server entry"),
        (["--zk-timeout", "nan"], "error: --zk-timeout must be between 0.1 and 3600 seconds, not 'nan'"),
        (["--zk-timeout", "inf"], "error: --zk-timeout must be between 0.1 and 3600 seconds, not 'inf'"),
        (["--zk-timeout", "1e308"], "error: --zk-timeout must be between 0.1 and 3600 seconds, not '1e308'"),
        (["--zk-timeout", "soon"], "error: --zk-timeout must be a number of seconds, not 'soon'"),
        (["--zk-timeout", "0"], "error: --zk-timeout must be between"),
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ["describe", "--topic", "t"],
        ["alter", "--topic", "t", "--add-config", "retention.ms=1", "--dry-run"],
        ["history", "--topic", "t"],
        ["audit", "desired-state"],
    ],
)
def test_bad_connection_settings_are_one_line_exit_1(
    args: list[str], message: str, command: list[str]
) -> None:
    for ordered in ([*args, *command], [*command, *args]):
        code, out, err = run_cli(*ordered)
        assert code == 1, err
        assert out == ""
        assert len(err.splitlines()) == 1 and err.startswith(message), err


def test_a_bad_value_in_the_environment_names_the_variable() -> None:
    code, _out, err = run_cli("describe", "--topic", "t", env={"CONFIGCTL_ZOOKEEPER": "host:notaport"})
    assert code == 1
    assert (
        err == "error: CONFIGCTL_ZOOKEEPER 'host:notaport': port 'notaport' is not a number from 1 to 65535\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["describe", "--topic", "t"],
        ["describe", "--entity-type", "topics"],
        ["alter", "--topic", "t", "--add-config", "retention.ms=1", "--dry-run"],
        ["alter", "--topic", "t", "--add-config", "retention.ms=1"],
        ["history", "--topic", "t"],
    ],
)
def test_a_chroot_that_does_not_exist_is_refused(
    zk_server, _zk_admin: KazooClient, command: list[str]
) -> None:
    chroot = f"/missing-{uuid.uuid4().hex[:12]}"
    code, out, err = run_cli(*command, "--zookeeper", f"{zk_server.connect_string}{chroot}")
    assert code == 6, err
    assert out == ""
    assert (
        err
        == f"error: the chroot {chroot} of {zk_server.connect_string}{chroot} does not exist in ZooKeeper\n"
    )
    assert _zk_admin.exists(chroot) is None


def test_tls_against_a_plain_port_is_one_line(zk_server, tmp_path: Path) -> None:
    from configctl.localzk.tls import ensure_certificates

    ca = ensure_certificates(tmp_path / "tls").ca
    began = time.monotonic()
    code, _out, err = run_cli(
        "describe",
        "--topic",
        "t",
        "--zookeeper",
        zk_server.connect_string,
        "--zk-tls-ca",
        str(ca),
        "--zk-timeout",
        "2",
    )
    assert code == 3
    assert err == (
        f"error: cannot reach ZooKeeper at {zk_server.connect_string} within 2s: no TLS handshake completed "
        "(the server closed the connection); is it a plain-text port? (drop --zk-tls)\n"
    )
    assert time.monotonic() - began < 10


def test_sasl_against_a_server_without_sasl_is_one_line(zk_connect: str) -> None:
    code, _out, err = run_cli(
        "describe", "--topic", "t", "--zookeeper", zk_connect, "--zk-sasl", "digest:alice", "--zk-timeout", "2",
        env={"CONFIGCTL_ZK_SASL_PASSWORD": "pw"},
    )  # fmt: skip
    assert code == 4
    assert err == (
        f"error: ZooKeeper at {zk_connect} did not answer the SASL login as 'alice': is SASL enabled on that server?\n"
    )


# ----------------------------------------------------------------------------- completing names


def _complete(ctx_params: dict, option: str, zookeeper: str, incomplete: str = "") -> list[str]:
    ctx = click.Context(alter_command)
    ctx.params.update(ctx_params)
    ctx.meta["configctl.flags"] = {"zookeeper": zookeeper}
    param = next(p for p in alter_command.params if p.name == option)
    return [item.value for item in completion.complete_entity_name(ctx, param, incomplete)]


def test_entity_names_are_completed_from_zookeeper(zk_connect: str) -> None:
    for args in (
        ["--topic", "orders"],
        ["--topic", "payments"],
        ["--user", "User:alice"],
        ["--user", "User:alice", "--client", "app 1"],
        ["--user-defaults"],
        ["--client", "app*2"],
        ["--broker", "1"],
        ["--broker-defaults"],
        ["--ip", "10.0.0.7"],
    ):
        config = "SCRAM-SHA-256=[password=pw]" if args == ["--user", "User:alice"] else None
        key = {
            "--topic": "retention.ms=1",
            "--broker": "log.cleaner.threads=2",
            "--broker-defaults": "log.cleaner.threads=2",
            "--ip": "connection_creation_rate=3",
        }
        add = config or key.get(args[0], "consumer_byte_rate=5")
        code, _out, err = run_cli("alter", *args, "--add-config", add, "--zookeeper", zk_connect)
        assert code == 0, (args, err)
    assert _complete({}, "topic", zk_connect) == ["orders", "payments"]
    assert _complete({}, "topic", zk_connect, "pay") == ["payments"]
    assert _complete({}, "user", zk_connect) == ["User:alice"]  # as typed, not as stored; no <default>
    assert _complete({"user": "User:alice"}, "client", zk_connect) == ["app 1"]
    assert _complete({}, "client", zk_connect) == ["app*2"]
    assert _complete({}, "broker", zk_connect) == ["1"]
    assert _complete({}, "ip", zk_connect) == ["10.0.0.7"]
    assert _complete({"entity_types": ("topics",)}, "entity_names", zk_connect) == ["orders", "payments"]
    assert _complete({"entity_types": ("users",)}, "entity_names", zk_connect, "User") == ["User:alice"]
    assert _complete({}, "entity_names", zk_connect) == []  # which type?

    words = "configctl describe --topic o"
    code, out, err = run_cli(
        env={
            "_CONFIGCTL_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": "3",
            "CONFIGCTL_ZOOKEEPER": zk_connect,
        }
    )
    assert code == 0, err
    assert (out, err) == ("plain,orders\n", "")
