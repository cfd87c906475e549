"""Helpers shared by the test suites: run the real CLI, find free ports, wait for conditions,
name a test's own entities, create topics on a real Kafka cluster.

Import them as ``from helpers import run_cli`` (tests/conftest.py puts this directory on
``sys.path``), or use the ``cli`` and ``free_port`` fixtures. The ``unique`` fixture is defined
here once and imported by the conftests of the suites that share real clusters.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple, TypeVar

import psutil
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

T = TypeVar("T")


class CliResult(NamedTuple):
    """What a ``configctl`` run left behind; unpacks as ``(returncode, stdout, stderr)``."""

    returncode: int
    stdout: str
    stderr: str


def child_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The environment of a configctl child process: this one minus every ``CONFIGCTL_*``
    variable (a developer's settings never leak into a test), the repository first on
    ``PYTHONPATH``, then ``env`` on top (a ``None`` value removes a variable)."""
    result = {key: value for key, value in os.environ.items() if not key.startswith("CONFIGCTL_")}
    result["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), result.get("PYTHONPATH")]))
    for key, value in (env or {}).items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def run_cli(
    *args: str,
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
    timeout: float = 120.0,
    cwd: Path | str | None = None,
) -> CliResult:
    """Run ``python -m configctl ARGS`` in a subprocess, exactly as a user would.

    The child gets this environment minus every ``CONFIGCTL_*`` variable (so a developer's
    settings never leak into a test), then ``env`` on top; a ``None`` value removes a variable
    (``env={"JAVA_HOME": None}``). The repository root is prepended to ``PYTHONPATH``.
    """
    completed = subprocess.run(
        [sys.executable, "-m", "configctl", *args],
        env=child_env(env),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        check=False,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_port_block(count: int, attempts: int = 50) -> int:
    """The first of ``count`` consecutive free ports (an ensemble listens on P, P+1, P+2)."""
    from configctl.localzk import port_is_free

    for _ in range(attempts):
        first = free_port()
        if first + count - 1 <= 65535 and all(port_is_free(first + i) for i in range(count)):
            return first
    raise RuntimeError(f"no block of {count} free ports found")


def wait_for(
    condition: Callable[[], T], timeout: float = 10.0, interval: float = 0.05, message: str = "condition"
) -> T:
    """Poll ``condition`` until it returns something truthy and return that; fail after ``timeout``.

    Exceptions raised by ``condition`` count as "not yet" until the deadline, then propagate.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
            if result:
                return result
        except Exception:
            if time.monotonic() >= deadline:
                raise
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {message}")
        time.sleep(interval)


def unique_name(prefix: str) -> str:
    """A name of a test's own (topics, users, clients) on a cluster the session shares: ``prefix-<hex>``."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def unique() -> Callable[[str], str]:
    """A name of this test's own (topics, users, clients): ``prefix-<hex>`` (:func:`unique_name`)."""
    return unique_name


def create_topics(bootstrap: str, *names: str, configs: Mapping[str, str] | None = None) -> None:
    """Create topics on the real Kafka cluster at ``bootstrap`` (1 partition, RF 1) and wait until
    the brokers describe them (Kafka 3.9 in ZooKeeper mode and Kafka 4 in KRaft mode alike)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    from configctl.adminapi.client import KafkaAdmin

    client = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), client_id="test-setup")
    try:
        client.create_topics([NewTopic(name, 1, 1, topic_configs=dict(configs or {})) for name in names])
    finally:
        client.close()
    with KafkaAdmin(bootstrap) as admin:
        for name in names:
            wait_for(lambda n=name: _topic_known(admin, n), timeout=60, message=f"topic {name} known")


def _topic_known(admin, name: str) -> bool:
    try:
        admin.describe_topic(name, ["cleanup.policy"])
    except Exception:
        return False
    return True


def zookeeper_pids(data_dir: Path | str) -> list[int]:
    """Pids of live ZooKeeper JVMs whose command line points into ``data_dir`` (zombies excluded)."""
    marker = str(Path(data_dir).absolute()) + os.sep
    pids = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if any("org.apache.zookeeper" in arg for arg in cmdline) and any(
            arg.startswith(marker) for arg in cmdline
        ):
            pids.append(proc.info["pid"])
    return pids


def zookeeper_truth(store, broker_id: int) -> dict[str, dict[str, str]]:
    """What a broker should run with: every non-empty config it follows, straight from ZooKeeper."""
    from configctl.entities import DEFAULT, EntityType

    found = {}
    for stored in store.read_all():
        entity = stored.entity
        if entity.type is EntityType.BROKERS and entity.name not in (str(broker_id), DEFAULT):
            continue
        if stored.config:
            found[entity.path] = stored.config
    return found


def set_config(store, path: str, **config: str) -> int:
    """Write ``config`` to the entity at ``path`` through the real write path; its change number."""
    from configctl.entities import Entity
    from configctl.writer import alter, prepare_change

    entity = Entity.from_path(path)
    result = alter(store, entity, prepare_change(entity, config))
    assert result.committed is not None
    return result.committed.change_number


def count_requests(listener) -> Counter[str]:
    """Every request the listener's own session sends from now on, by kazoo request type (the
    session is real: the count is what ZooKeeper receives)."""
    counts: Counter[str] = Counter()
    client = listener.session.client
    original = client._call

    def counting(request, async_object):
        counts[type(request).__name__] += 1
        return original(request, async_object)

    client._call = counting
    return counts
