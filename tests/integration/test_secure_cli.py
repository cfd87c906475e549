"""Every command against a real TLS + SASL ZooKeeper (``secure_zk``), and what it refuses (see docs/operations.md).

The commands run as a user would run them: ``configctl`` in a subprocess with the variables
``zk start --tls --sasl`` wrote to ``client.env`` (the password by file). Each test gets a chroot
of its own on the shared secured server.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import run_cli, wait_for
from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions

from configctl.listener import ConfigListener
from configctl.localzk.tls import ensure_certificates
from configctl.settings import resolve

if TYPE_CHECKING:
    from conftest import SecureZooKeeper

pytestmark = pytest.mark.zk

STATIC = {"broker.id": "1", "log.retention.hours": "72", "log.dirs": "/data/k1"}


@pytest.fixture(scope="module")
def admin(secure_zk: SecureZooKeeper) -> Iterator[KazooClient]:
    """A SASL client on the secured server's root, to make chroots and read ACLs."""
    client = KazooClient(timeout=10.0, **secure_zk.kazoo_options())
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def chroot(admin: KazooClient) -> Iterator[str]:
    path = f"/s-{uuid.uuid4().hex[:12]}"
    admin.create(path)
    try:
        yield path
    finally:
        admin.delete(path, recursive=True)


@pytest.fixture
def env(secure_zk: SecureZooKeeper, chroot: str) -> dict[str, str]:
    """client.env's variables, pointed at this test's chroot."""
    variables = secure_zk.env()
    assert variables["CONFIGCTL_ZK_TLS"] == "true" and "CONFIGCTL_ZK_SASL_PASSWORD_FILE" in variables
    return {**variables, "CONFIGCTL_ZOOKEEPER": f"{secure_zk.connect}{chroot}"}


def _ok(*args: str, env: dict[str, str], input: str | None = None) -> str:
    code, out, err = run_cli(*args, env=env, input=input)
    assert code == 0, err
    return out


def _refused(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """A refused command: nothing on stdout, one line on stderr (never a traceback)."""
    code, out, err = run_cli(*args, env=env)
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    return code, err.strip()


def _acl(admin: KazooClient, path: str) -> set[tuple[str, str, int]]:
    acls, _stat = admin.get_acls(path)
    return {(a.id.scheme, a.id.id, a.perms) for a in acls}


# ----------------------------------------------------------------------------- the commands work


def test_alter_describe_history_over_tls_and_sasl(env: dict[str, str]) -> None:
    out = _ok(
        "alter", "--topic", "orders", "--add-config", "retention.ms=86400000", "--reason", "secured", env=env
    )
    assert "Completed updating config for topic orders" in out
    _ok("alter", "--topic", "orders", "--add-config", "retention.ms=3600000", env=env)
    described = json.loads(_ok("describe", "--topic", "orders", "-o", "json", env=env))
    assert described[0]["config"] == {"retention.ms": "3600000"}
    history = json.loads(_ok("history", "--topic", "orders", "-o", "json", env=env))
    assert len(history) == 2 and history[-1]["reason"] == "secured"
    assert all(entry["identity"] == "sasl:configctl" for entry in history)


def test_the_same_settings_as_flags_and_from_a_profile(
    secure_zk: SecureZooKeeper, chroot: str, tmp_path: Path
) -> None:
    connect = f"{secure_zk.connect}{chroot}"
    flags = [
        "--zookeeper",
        connect,
        "--zk-tls",
        "--zk-tls-ca",
        str(secure_zk.ca),
        "--zk-sasl",
        "digest:configctl",
    ]
    flags += ["--zk-sasl-password-file", str(secure_zk.password_file)]
    _ok("alter", "--topic", "by-flags", "--add-config", "retention.ms=1", *flags, env={})
    by_env = {"CONFIGCTL_ZK_SASL_PASSWORD": secure_zk.sasl_password}
    _ok(*flags[:-2], "describe", "--topic", "by-flags", env=by_env)
    config = tmp_path / "config.toml"
    config.write_text(
        "[profiles.secure]\n"
        f'zookeeper = "{connect}"\n'
        f'zk-tls-ca = "{secure_zk.ca}"\n'  # TLS implied by the CA
        'zk-sasl = "digest:configctl"\n'
        f'zk-sasl-password-file = "{secure_zk.password_file}"\n'
    )
    described = _ok(
        "describe",
        "--topic",
        "by-flags",
        "--profile",
        "secure",
        "-o",
        "json",
        env={"CONFIGCTL_CONFIG": str(config)},
    )
    assert json.loads(described)[0]["config"] == {"retention.ms": "1"}


def test_mutual_tls_with_a_client_certificate_and_an_encrypted_key(
    secure_zk: SecureZooKeeper, env: dict[str, str], tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization

    _ok("alter", "--topic", "t", "--add-config", "retention.ms=1", "--zk-tls-cert", str(secure_zk.client_cert),
        "--zk-tls-key", str(secure_zk.client_key), env=env)  # fmt: skip
    key = serialization.load_pem_private_key(secure_zk.client_key.read_bytes(), None)
    encrypted, password = tmp_path / "key.pem", tmp_path / "key-password"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"key pass"),
        )
    )
    password.write_text("key pass\n")
    tls = {"CONFIGCTL_ZK_TLS_CERT": str(secure_zk.client_cert), "CONFIGCTL_ZK_TLS_KEY": str(encrypted)}
    _ok("describe", "--topic", "t", "--zk-tls-key-password-file", str(password), env={**env, **tls})
    code, err = _refused("describe", "--topic", "t", env={**env, **tls})
    assert code == 1 and "is encrypted: give its password" in err


def test_plan_apply_export_over_tls_and_sasl(env: dict[str, str], tmp_path: Path) -> None:
    desired = tmp_path / "cluster.yaml"
    desired.write_text(
        "topics:\n  orders: {retention.ms: 86400000}\n"
        "brokers:\n  <default>: {log.retention.ms: 3600000}\n"
        "users:\n  User:alice: {producer_byte_rate: 1024}\n"
    )
    code, out, err = run_cli("plan", "-f", str(desired), env=env)
    assert code == 2, err  # changes to make
    assert "orders" in out
    _ok("apply", "-f", str(desired), "--yes", env=env)
    code, _out, err = run_cli("plan", "-f", str(desired), env=env)
    assert code == 0, err
    exported = tmp_path / "exported.yaml"
    _ok("export", "--file", str(exported), env=env)
    text = exported.read_text()
    assert "orders" in text and "3600000" in text and "User:alice" in text


def test_the_audits_zookeeper_reads_over_tls_and_sasl(env: dict[str, str]) -> None:
    _ok("alter", "--topic", "orders", "--add-config", "retention.ms=5", env=env)
    document = json.loads(_ok("audit", "desired-state", env=env))
    assert "retention.ms" in json.dumps(document)


def test_a_listener_follows_changes_over_tls_and_sasl(env: dict[str, str], tmp_path: Path) -> None:
    settings = resolve({}, env).connection()
    assert settings.tls is not None and settings.sasl is not None
    listener = ConfigListener(settings, 1, STATIC, state_dir=tmp_path)
    listener.start(timeout=30)
    try:
        _ok("alter", "--broker", "1", "--add-config", "log.cleaner.threads=3", env=env)
        wait_for(
            lambda: listener.configs().get("brokers/1") == {"log.cleaner.threads": "3"},
            timeout=20,
            message="the listener to apply the change",
        )
    finally:
        listener.stop()


# ----------------------------------------------------------------------------- Kafka's ACLs


def test_nodes_created_under_sasl_carry_kafkas_acls(
    env: dict[str, str], admin: KazooClient, chroot: str
) -> None:
    _ok("alter", "--topic", "orders", "--add-config", "retention.ms=5", env=env)
    _ok("alter", "--user", "User:alice", "--add-config", "SCRAM-SHA-256=[password=alice-secret]", env=env)
    _ok("alter", "--broker", "1", "--add-config", "log.cleaner.threads=2", env=env)
    _ok("alter", "--broker-defaults", "--add-config", "log.retention.ms=5", env=env)
    _ok("alter", "--client", "app", "--add-config", "consumer_byte_rate=5", env=env)
    owner = ("sasl", "configctl", Permissions.ALL)
    world_read = ("world", "anyone", Permissions.READ)
    readable = [
        "/config",
        "/config/topics",
        "/config/topics/orders",
        "/config/clients/app",
        "/config/changes",
    ]
    readable += [f"/config/changes/{name}" for name in admin.get_children(f"{chroot}/config/changes")]
    for path in readable:
        assert _acl(admin, chroot + path) == {owner, world_read}, path
    sensitive = ["/config/users", "/config/users/User%3Aalice", "/config/brokers", "/config/brokers/1"]
    sensitive.append("/config/brokers/<default>")
    for path in sensitive:
        assert _acl(admin, chroot + path) == {owner}, path  # the world may not read secrets
    assert (
        ACL(Permissions.ALL, Id("sasl", "configctl"))
        in admin.get_acls(f"{chroot}/config/users/User%3Aalice")[0]
    )


# ----------------------------------------------------------------------------- what is refused


def test_a_plain_text_client_is_refused(env: dict[str, str]) -> None:
    began = time.monotonic()
    code, err = _refused("describe", "--topic", "t", "--no-zk-tls", "--zk-timeout", "2", env=env)
    assert code == 3
    assert err.endswith(
        "within 2s: the server closed every connection; if it serves TLS on this port, add --zk-tls (or it has no quorum)"
    )
    assert time.monotonic() - began < 10


def test_an_unauthenticated_client_is_refused_and_writes_nothing(
    env: dict[str, str], admin: KazooClient, chroot: str
) -> None:
    no_sasl = {**env, "CONFIGCTL_ZK_SASL": ""}
    for command in (
        ["describe", "--topic", "t"],
        ["alter", "--topic", "t", "--add-config", "retention.ms=1"],
    ):
        code, err = _refused(*command, env=no_sasl)
        assert code == 4
        assert err == (
            f"error: ZooKeeper at {env['CONFIGCTL_ZOOKEEPER']} requires a SASL login: give --zk-sasl digest:USER "
            "(set CONFIGCTL_ZK_SASL_PASSWORD or give --zk-sasl-password-file FILE)"
        )
    assert admin.get_children(chroot) == []


def test_a_wrong_sasl_password_is_refused_at_once(env: dict[str, str], tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-password\n")
    began = time.monotonic()
    code, err = _refused("describe", "--topic", "t", "--zk-sasl-password-file", str(wrong), env=env)
    assert code == 4
    assert err == (
        f"error: ZooKeeper at {env['CONFIGCTL_ZOOKEEPER']} refused the SASL login as 'configctl' "
        "(wrong password or unknown user)"
    )
    assert time.monotonic() - began < 5  # not the 10 s timeout
    code, err = _refused("describe", "--topic", "t", "--zk-sasl", "digest:nobody", env=env)
    assert code == 4 and "as 'nobody'" in err


def test_a_ca_that_did_not_sign_the_server_is_refused_at_once(env: dict[str, str], tmp_path: Path) -> None:
    other = ensure_certificates(tmp_path / "other").ca
    began = time.monotonic()
    code, err = _refused("describe", "--topic", "t", "--zk-tls-ca", str(other), env=env)
    assert code == 4
    assert err.startswith(
        f"error: ZooKeeper at {env['CONFIGCTL_ZOOKEEPER']} presented a TLS certificate this client does not trust (certificate verify failed"
    )
    assert err.endswith("check --zk-tls-ca")
    assert time.monotonic() - began < 5
    code, err = _refused(
        "describe",
        "--topic",
        "t",
        "--zk-tls-ca",
        "",
        "--zk-timeout",
        "2",
        env={**env, "CONFIGCTL_ZK_TLS_CA": ""},
    )
    assert code == 4 and err.endswith("give --zk-tls-ca FILE")  # the system's CAs do not know this one


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "CONFIGCTL_ZK_TLS_CA",
            "/nonexistent/ca.pem",
            "error: TLS CA file /nonexistent/ca.pem: no such file",
        ),
        (
            "CONFIGCTL_ZK_SASL_PASSWORD_FILE",
            "/nonexistent/pw",
            "error: SASL password file /nonexistent/pw: no such file",
        ),
        ("CONFIGCTL_ZK_SASL", "digest:", "error: CONFIGCTL_ZK_SASL digest:USER needs a user name"),
    ],
)
def test_bad_local_files_are_refused_before_connecting(
    env: dict[str, str], variable: str, value: str, message: str
) -> None:
    code, err = _refused(
        "alter", "--topic", "t", "--add-config", "retention.ms=1", env={**env, variable: value}
    )
    assert code == 1
    assert err.startswith(message), err
