"""The embedded ZooKeeper secured: ``configctl zk start --tls --sasl``, and what it refuses.

The refusals double as a record of what kazoo does in each case, which the client side's error
messages are built on:

- plain-text client on the TLS port, TLS client on a plain port, a CA that did not sign the
  server's certificate: kazoo retries the connection until ``start(timeout)`` runs out and raises
  ``KazooTimeoutError``; the cause only shows in its log warnings (``socket connection broken``;
  ``[SSL: ...EOF...]``; ``[SSL: CERTIFICATE_VERIFY_FAILED]``).
- TLS without SASL: the session is granted, its first request fails at once with
  ``SessionClosedRequireSaslError`` and the server closes the session.
- a wrong SASL password: kazoo reports CONNECTED before its SASL login, the login fails, and its
  connection thread dies with ``SessionClosedRequireSaslError`` (the client is LOST at once; later
  calls raise ``ConnectionLoss`` / ``ConnectionClosedError``). ``start()`` may return or raise
  ``KazooTimeoutError``, depending on which it sees first.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import pytest
from cryptography import x509
from helpers import run_cli, wait_for, zookeeper_pids
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, SessionClosedRequireSaslError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.security import make_acl

from configctl.errors import InvalidInput
from configctl.localzk import STATE_FILE, LocalZooKeeper
from configctl.localzk.sasl import ensure_sasl
from configctl.localzk.tls import LEAF_DAYS, ensure_certificates

if TYPE_CHECKING:
    from conftest import SecureZooKeeper

pytestmark = pytest.mark.zk

REFUSED_WITHIN = 3.0  # the start timeout given to clients that must be refused


def _started(**options: Any) -> KazooClient:
    client = KazooClient(timeout=10.0, **options)
    client.start(timeout=30)
    return client


def _close(client: KazooClient) -> None:
    client.stop()
    client.close()


def _refused(caplog: pytest.LogCaptureFixture, **options: Any) -> tuple[float, str]:
    """Start a client that must not get a session; how long kazoo took and what it logged."""
    logger = logging.getLogger(f"test.kazoo.{uuid.uuid4().hex[:6]}")
    client = KazooClient(timeout=10.0, logger=logger, **options)
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger=logger.name), pytest.raises(KazooTimeoutError):
        client.start(timeout=REFUSED_WITHIN)
    elapsed = time.monotonic() - began
    _close(client)
    return elapsed, "\n".join(r.getMessage() for r in caplog.records if r.name == logger.name)


@pytest.fixture
def node_path() -> str:
    return f"/secure-{uuid.uuid4().hex[:12]}"


def test_tls_sasl_client_creates_and_reads_as_its_sasl_identity(
    secure_zk: SecureZooKeeper, node_path: str
) -> None:
    client = _started(**secure_zk.kazoo_options())
    try:
        acl = [make_acl("sasl", secure_zk.sasl_user, all=True)]
        client.create(node_path, b"secured", acl=acl)
        assert client.get(node_path)[0] == b"secured"
        acls, _stat = client.get_acls(node_path)
        assert [(a.id.scheme, a.id.id) for a in acls] == [("sasl", secure_zk.sasl_user)]
        client.delete(node_path)
    finally:
        _close(client)


def test_a_client_certificate_signed_by_the_ca_is_accepted(
    secure_zk: SecureZooKeeper, node_path: str
) -> None:
    client = _started(
        **secure_zk.kazoo_options(certfile=str(secure_zk.client_cert), keyfile=str(secure_zk.client_key))
    )
    try:
        client.create(node_path, b"with a client certificate")
        assert client.get(node_path)[0] == b"with a client certificate"
        client.delete(node_path)
    finally:
        _close(client)


def test_plain_text_client_is_refused(secure_zk: SecureZooKeeper, caplog: pytest.LogCaptureFixture) -> None:
    elapsed, logged = _refused(caplog, hosts=secure_zk.connect)
    assert elapsed < REFUSED_WITHIN + 2
    assert "socket connection broken" in logged  # the server drops what is not a TLS handshake


def test_tls_client_on_a_plain_port_is_refused(
    zk_server: LocalZooKeeper, secure_zk: SecureZooKeeper, caplog: pytest.LogCaptureFixture
) -> None:
    elapsed, logged = _refused(caplog, hosts=zk_server.connect_string, use_ssl=True, ca=str(secure_zk.ca))
    assert elapsed < REFUSED_WITHIN + 2
    assert "socket connection error" in logged


def test_a_ca_that_did_not_sign_the_server_is_refused(
    secure_zk: SecureZooKeeper, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other_ca = ensure_certificates(tmp_path / "other").ca
    elapsed, logged = _refused(caplog, **secure_zk.kazoo_options(ca=str(other_ca)))
    assert elapsed < REFUSED_WITHIN + 2
    assert "CERTIFICATE_VERIFY_FAILED" in logged


def test_tls_client_without_sasl_can_neither_read_nor_create(
    secure_zk: SecureZooKeeper, node_path: str
) -> None:
    reader = _started(**secure_zk.kazoo_options(sasl_options=None))  # the session itself is granted ...
    try:
        with pytest.raises(SessionClosedRequireSaslError):  # ... its first request closes it
            reader.get_children("/")
    finally:
        _close(reader)
    writer = _started(**secure_zk.kazoo_options(sasl_options=None))
    try:
        with pytest.raises(SessionClosedRequireSaslError):
            writer.create(node_path, b"must not land")
    finally:
        _close(writer)
    checker = _started(**secure_zk.kazoo_options())
    try:
        assert checker.exists(node_path) is None
    finally:
        _close(checker)


def test_wrong_sasl_password_loses_the_client_at_once(
    secure_zk: SecureZooKeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    died: list[type[BaseException]] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_type))
    options = secure_zk.kazoo_options()
    options["sasl_options"] = {**options["sasl_options"], "password": "not-the-password"}
    client = KazooClient(timeout=10.0, **options)
    began = time.monotonic()
    with contextlib.suppress(KazooTimeoutError):  # raised only if kazoo saw the failed login first:
        client.start(timeout=10)  # it says CONNECTED before it logs in
    wait_for(lambda: client.state == KazooState.LOST, timeout=5, message="the client to be lost")
    assert time.monotonic() - began < 5
    with pytest.raises((ConnectionLoss, ConnectionClosedError)):
        client.get_children("/")
    wait_for(lambda: died, timeout=5, message="kazoo's connection thread to end")
    assert died == [SessionClosedRequireSaslError]
    _close(client)


# ----------------------------------------------------------------------------------- the CLI


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "zk"
    try:
        yield directory
    finally:
        LocalZooKeeper(directory).stop()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_cli_secured_start_status_restart_stop(data_dir: Path, free_port: int) -> None:
    code, out, err = run_cli(
        "zk",
        "start",
        "--tls",
        "--sasl",
        "--sasl-user",
        "alice",
        "--port",
        str(free_port),
        "--data-dir",
        str(data_dir),
    )
    assert code == 0, err
    connect = f"127.0.0.1:{free_port}"
    ca, password_file, env_file = (
        data_dir / "tls" / "ca.pem",
        data_dir / "sasl" / "password",
        data_dir / "client.env",
    )
    lines = out.splitlines()
    assert lines[0] == f"Started ZooKeeper (1 node, TLS and SASL) in {data_dir}"
    assert f"connect string: {connect}" in lines
    assert f"client options: --zookeeper {connect} --zk-tls --zk-tls-ca {ca} --zk-sasl digest:alice" in lines
    assert f"SASL password:  export CONFIGCTL_ZK_SASL_PASSWORD_FILE={password_file}" in lines
    assert f"or all at once: set -a; . {env_file}; set +a" in lines

    # secrets stay in 0600 files: not printed, not in client.env, not on any command line
    password = password_file.read_text().strip()
    assert len(password) >= 24
    for private in (password_file, data_dir / "sasl" / "jaas.conf", data_dir / "tls" / "server.pem"):
        assert _mode(private) == 0o600, private
    assert _mode(data_dir / "tls" / "client-key.pem") == 0o600
    assert _mode(data_dir / "tls") == _mode(data_dir / "sasl") == 0o700
    assert password not in out + err + env_file.read_text() + (data_dir / STATE_FILE).read_text()
    [pid] = zookeeper_pids(data_dir)
    assert not any(password in arg for arg in psutil.Process(pid).cmdline())

    # the server has no plain-text client port at all
    config = (data_dir / "server-1" / "zoo.cfg").read_text().splitlines()
    assert f"secureClientPort={free_port}" in config
    assert not any(line.startswith("clientPort=") for line in config)

    # client.env, sourced by a shell, gives exactly the printed settings
    shell = subprocess.run(
        ["bash", "-c", f'set -a; . "{env_file}"; set +a; env'], capture_output=True, text=True, check=True
    )
    env = dict(line.split("=", 1) for line in shell.stdout.splitlines() if line.startswith("CONFIGCTL_"))
    assert env == {
        "CONFIGCTL_ZOOKEEPER": connect,
        "CONFIGCTL_ZK_TLS": "true",
        "CONFIGCTL_ZK_TLS_CA": str(ca),
        "CONFIGCTL_ZK_SASL": "digest:alice",
        "CONFIGCTL_ZK_SASL_PASSWORD_FILE": str(password_file),
    }
    sasl = {
        "mechanism": "DIGEST-MD5",
        "username": env["CONFIGCTL_ZK_SASL"].split(":", 1)[1],
        "password": Path(env["CONFIGCTL_ZK_SASL_PASSWORD_FILE"]).read_text().strip(),
    }
    client = _started(
        hosts=env["CONFIGCTL_ZOOKEEPER"], use_ssl=True, ca=env["CONFIGCTL_ZK_TLS_CA"], sasl_options=sasl
    )
    try:
        client.create("/kept", b"across restarts")
    finally:
        _close(client)

    code, out, err = run_cli("zk", "status", "--data-dir", str(data_dir))
    assert code == 0, err
    assert "TLS: on, SASL: on (user alice)" in out
    code, out, err = run_cli("zk", "status", "--data-dir", str(data_dir), "-o", "json")
    assert code == 0, err
    status = json.loads(out)
    assert (status["tls"], status["sasl"], status["sasl_user"]) == (True, True, "alice")
    assert status["nodes"][0]["mode"] == "standalone"  # srvr asked over TLS
    assert status["client"]["env"] == env

    # a restart keeps TLS, SASL, the CA and the password, so clients keep working
    ca_before = ca.read_bytes()
    restarted = LocalZooKeeper(data_dir).restart()
    assert restarted.tls and restarted.sasl and restarted.nodes[0].mode == "standalone"
    assert ca.read_bytes() == ca_before and password_file.read_text().strip() == password
    client = _started(hosts=connect, use_ssl=True, ca=str(ca), sasl_options=sasl)
    try:
        assert client.get("/kept")[0] == b"across restarts"
    finally:
        _close(client)

    code, out, err = run_cli("zk", "stop", "--data-dir", str(data_dir))
    assert code == 0, err
    assert zookeeper_pids(data_dir) == []


def test_plain_server_status_says_tls_and_sasl_are_off(restartable_zk: LocalZooKeeper) -> None:
    code, out, err = run_cli("zk", "status", "--data-dir", str(restartable_zk.data_dir))
    assert code == 0, err
    assert "TLS: off, SASL: off" in out
    assert (restartable_zk.data_dir / "client.env").read_text().splitlines()[1:] == [
        f"CONFIGCTL_ZOOKEEPER={restartable_zk.connect_string}"
    ]
    assert not (restartable_zk.data_dir / "tls").exists() and not (restartable_zk.data_dir / "sasl").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sasl", "--sasl-user", "bad name"], "error: SASL user 'bad name' is not usable"),
        (["--sasl-user", "bob"], "error: --sasl-user needs --sasl"),
    ],
)
def test_cli_bad_sasl_user_is_one_line_error_and_starts_nothing(
    data_dir: Path, free_port: int, args: list[str], message: str
) -> None:
    code, out, err = run_cli("zk", "start", *args, "--port", str(free_port), "--data-dir", str(data_dir))
    assert code == 1
    assert len(err.splitlines()) == 1 and err.startswith(message), err
    assert out == ""
    assert not (data_dir / STATE_FILE).exists()
    assert zookeeper_pids(data_dir) == []


# ----------------------------------------------------------------------------------- the files


def test_certificates_are_kept_then_renewed_before_they_expire(tmp_path: Path) -> None:
    files = ensure_certificates(tmp_path)
    ca_pem = files.ca.read_bytes()
    ca = x509.load_pem_x509_certificate(ca_pem)
    server, chain_ca = x509.load_pem_x509_certificates(files.server.read_bytes())
    server.verify_directly_issued_by(ca)
    assert chain_ca == ca
    client_cert = x509.load_pem_x509_certificates(files.client_cert.read_bytes())[0]
    client_cert.verify_directly_issued_by(ca)
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert b"PRIVATE KEY" in files.server.read_bytes() and b"PRIVATE KEY" not in ca_pem

    assert ensure_certificates(tmp_path).ca.read_bytes() == ca_pem  # kept: clients' CA stays valid
    soon_expired = datetime.now(timezone.utc) + timedelta(days=LEAF_DAYS)
    assert ensure_certificates(tmp_path, now=soon_expired).ca.read_bytes() != ca_pem


def test_sasl_password_is_kept_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    first = ensure_sasl(tmp_path, "kafka")
    password = first.password()
    assert ensure_sasl(tmp_path, "kafka").password() == password
    assert f'user_kafka="{password}";' in first.jaas_file.read_text()
    first.password_file.write_text('with "quotes" in it\n')
    with pytest.raises(InvalidInput, match="cannot be used"):
        ensure_sasl(tmp_path, "kafka")
    os.unlink(first.password_file)
    assert ensure_sasl(tmp_path, "kafka").password() not in ("", password)
