"""The test harness: markers by folder, real ZooKeeper servers, per-test isolation, CLI runner.

Servers are real (pyspark's ZooKeeper jars + Java), started only when a test asks for them:

- ``zk_server`` (session): one shared single server. Tests never use its root directly:
  ``zk_connect`` hands each test a fresh chroot (``127.0.0.1:P/t-<hex>``) and ``zk`` a started
  KazooClient on it, so tests cannot see each other's nodes.
- ``zk_ensemble`` (module-scoped servers): a 3-node ensemble; before each test every node is
  running again, so a test may kill nodes freely.
- ``restartable_zk`` (function): a dedicated single server a test may kill and restart.
  Never kill the shared ``zk_server``.
- ``fleet_of_three`` (function): brokers 1, 2 and 3 as ``configctl listener run`` processes on
  ``zk_connect`` (broker 2 with a plugin that refuses retention under 60 s).
- ``secure_zk`` (session): one single server with TLS and SASL (``zk start --tls --sasl``), as a
  :class:`SecureZooKeeper` with the CA, the SASL user and password, kazoo arguments and the
  ``CONFIGCTL_*`` variables to reach it. Never kill it either.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from configctl.errors import EnvironmentProblem
from configctl.localzk import LocalZooKeeper

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:  # `from helpers import ...` works in every pytest import mode
    sys.path.insert(0, str(TESTS_DIR))

from helpers import REPO_ROOT, CliResult, child_env, free_port_block, run_cli, wait_for  # noqa: E402
from helpers import free_port as _free_port  # noqa: E402

_FOLDER_MARKERS = {"unit": "unit", "integration": "zk", "spark": "spark", "kafka": "kafka", "kraft": "kafka"}
_ENSEMBLE_START_TIMEOUT = 60.0  # three JVMs on a loaded two-core CI box


def pytest_configure(config: pytest.Config) -> None:
    """Make SIGTERM (``timeout`` in CI, a closed terminal) interrupt the run like Ctrl-C does.

    Test servers run in their own session, so they do not die with pytest: only fixture
    teardown stops them, and pytest runs teardown on KeyboardInterrupt but not on SIGTERM.
    """
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by folder (unit / zk / spark); tests using the ensemble are also ``ensemble``.

    ``long`` tests (the long property runs) run only when asked for (``-m long``, ``make test-long``):
    ``make test`` stays within CI's time on two cores.
    """
    asked_long = "long" in (config.getoption("markexpr", "") or "")
    for item in items:
        if item.get_closest_marker("long") is not None and not asked_long:
            item.add_marker(pytest.mark.skip(reason="a long run: make test-long (pytest -m long)"))
        try:
            parts = item.path.resolve().relative_to(TESTS_DIR).parts
        except ValueError:
            continue
        marker = _FOLDER_MARKERS.get(parts[0]) if len(parts) > 1 else None
        if marker and item.get_closest_marker(marker) is None:
            item.add_marker(marker)
        if "zk_ensemble" in getattr(item, "fixturenames", ()):
            item.add_marker("ensemble")


def _start_server(
    data_dir: Path, nodes: int = 1, timeout: float = 30.0, *, tls: bool = False, sasl: bool = False
) -> LocalZooKeeper:
    """Start a server on free ports, trying again if another process grabbed a port meanwhile."""
    for attempt in range(3):
        server = LocalZooKeeper(data_dir, port=free_port_block(nodes), nodes=nodes, tls=tls, sasl=sasl)
        try:
            server.start(timeout=timeout)
            return server
        except EnvironmentProblem as exc:
            if "already in use" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return _free_port()


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """:func:`helpers.run_cli`: run ``python -m configctl ...`` in a subprocess."""
    return run_cli


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalZooKeeper]:
    """One real single ZooKeeper for the whole session (stopped at the end, also on failure)."""
    server = _start_server(tmp_path_factory.mktemp("zk-session"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _zk_admin(zk_server: LocalZooKeeper) -> Iterator[KazooClient]:
    """A session-wide client on the shared server's root, used only to create and drop chroots."""
    client = KazooClient(hosts=zk_server.connect_string, timeout=10.0)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def zk_connect(zk_server: LocalZooKeeper, _zk_admin: KazooClient) -> Iterator[str]:
    """A connect string with a fresh, empty chroot of its own: ``127.0.0.1:P/t-<hex>``."""
    chroot = f"/t-{uuid.uuid4().hex[:12]}"
    _zk_admin.create(chroot)
    try:
        yield f"{zk_server.connect_string}{chroot}"
    finally:
        with contextlib.suppress(Exception):
            _zk_admin.delete(chroot, recursive=True)


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KazooClient]:
    """A started KazooClient inside the test's chroot (``/`` is the chroot)."""
    client = KazooClient(hosts=zk_connect, timeout=10.0)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture(scope="module")
def _zk_ensemble_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalZooKeeper]:
    server = _start_server(tmp_path_factory.mktemp("zk-ensemble"), nodes=3, timeout=_ENSEMBLE_START_TIMEOUT)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_ensemble(_zk_ensemble_servers: LocalZooKeeper) -> LocalZooKeeper:
    """A 3-node ensemble (one per test module) with every node running and a quorum serving.

    A test may kill nodes (``kill_node``); the next test gets them back.
    """
    _zk_ensemble_servers.start_missing_nodes(timeout=_ENSEMBLE_START_TIMEOUT)
    _zk_ensemble_servers.wait_serving(timeout=_ENSEMBLE_START_TIMEOUT)
    return _zk_ensemble_servers


@pytest.fixture
def restartable_zk(tmp_path: Path) -> Iterator[LocalZooKeeper]:
    """A single server of this test's own, which the test may kill and restart."""
    server = _start_server(tmp_path / "zk")
    try:
        yield server
    finally:
        server.stop()


@dataclass(frozen=True)
class SecureZooKeeper:
    """A started TLS + SASL server and everything a client needs to reach it."""

    server: LocalZooKeeper
    connect: str
    ca: Path  # the CA certificate to trust
    client_cert: Path  # an optional client certificate the server accepts ...
    client_key: Path  # ... and its key
    sasl_user: str
    sasl_password: str
    password_file: Path
    env_file: Path  # CONFIGCTL_* assignments, as ``zk start`` writes them

    def kazoo_options(self, **overrides: Any) -> dict[str, Any]:
        """``KazooClient`` arguments for TLS + SASL (``hosts`` included); ``overrides`` win."""
        options: dict[str, Any] = {
            "hosts": self.connect,
            "use_ssl": True,
            "ca": str(self.ca),
            "sasl_options": {
                "mechanism": "DIGEST-MD5",
                "username": self.sasl_user,
                "password": self.sasl_password,
            },
        }
        options.update(overrides)
        return options

    def env(self) -> dict[str, str]:
        """The ``CONFIGCTL_*`` variables ``zk start`` printed (the password by file), for ``run_cli``."""
        return self.server.client_settings().env()


@pytest.fixture(scope="session")
def secure_zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureZooKeeper]:
    """One real single ZooKeeper with TLS and SASL for the whole session (stopped at the end)."""
    server = _start_server(tmp_path_factory.mktemp("zk-secure"), tls=True, sasl=True)
    try:
        settings = server.client_settings()
        assert settings.ca and settings.cert and settings.key and settings.sasl_user
        assert settings.sasl_password_file is not None
        yield SecureZooKeeper(
            server=server,
            connect=settings.connect,
            ca=settings.ca,
            client_cert=settings.cert,
            client_key=settings.key,
            sasl_user=settings.sasl_user,
            sasl_password=settings.sasl_password() or "",
            password_file=settings.sasl_password_file,
            env_file=server.data_dir / "client.env",
        )
    finally:
        server.stop()


REJECTING_PLUGIN = "examples.plugins.log_retention:LogRetentionApplier"
"""Refuses a retention under 60 s: broker 2 of ``fleet_of_three`` runs it."""


@pytest.fixture
def embedded_listeners(zk_connect: str) -> Iterator[Callable[..., Any]]:
    """``start(broker_id, **kwargs)``: an embedded listener on the session's ZooKeeper, started
    (retention 72 h as its one static key besides ``broker.id``); all stopped after the test."""
    from configctl.listener import ConfigListener

    started: list[Any] = []

    def start(broker_id: int, **kwargs: Any) -> Any:
        static = {"log.retention.hours": "72", "broker.id": str(broker_id)}
        listener = ConfigListener(zk_connect, broker_id, static, **kwargs)
        started.append(listener.start(timeout=30))
        return listener

    yield start
    for listener in started:
        listener.stop()


@pytest.fixture
def fleet_of_three(zk_connect: str, tmp_path: Path) -> Iterator[dict[int, Any]]:
    """Brokers 1, 2 and 3, each a `configctl listener run` process; broker 2 runs a rejecting plugin.

    Yields the processes by broker id once all three have published their state; stops them
    (thawing any a test froze with SIGSTOP) afterwards. Each one's log is ``tmp_path/listener-<id>.log``.
    """
    import os
    import subprocess

    from configctl import fleet
    from configctl.zk.configstore import ZooKeeperStore as ConfigStore

    processes: dict[int, subprocess.Popen] = {}
    for broker_id in (1, 2, 3):
        command = [
            sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", zk_connect, "--broker-id",
            str(broker_id), "--server-properties", str(REPO_ROOT / "examples" / f"server-{broker_id}.properties"),
        ]  # fmt: skip
        if broker_id == 2:
            command += ["--plugin", REJECTING_PLUGIN]
        processes[broker_id] = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / f"listener-{broker_id}.log", "w"),  # noqa: SIM115 - closed with the process
            env=child_env(),
        )
    try:
        with ConfigStore.connect(zk_connect) as store:
            wait_for(lambda: len(fleet.broker_states(store)) == 3, timeout=90, message="three listeners")
        yield processes
    finally:
        for process in processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGCONT)
                process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
