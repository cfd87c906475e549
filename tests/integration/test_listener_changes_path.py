"""The notification directory itself goes wrong under live listeners, and they find their way back.

``/config/changes`` readable by nobody for a while (its READ right revoked, then restored), and
``/config/changes`` deleted and created again (the change counter restarts at 0): real
``configctl listener run`` processes keep applying once the directory is usable again, within
the bound ``docs/listener.md`` gives (``--recheck-every``: a watch ZooKeeper never fires is not
waited for), say so in their log, and ``/healthz`` is 503 while they cannot.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import REPO_ROOT, child_env, run_cli, wait_for
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE, make_acl

from configctl.znodes import CHANGES_PATH, BrokerStateZNode

pytestmark = pytest.mark.zk


def cli(connect: str, *args: str):
    return run_cli("--zookeeper", connect, *args)


def health(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


class Listener:
    def __init__(self, process: subprocess.Popen, port: int, lines: list[str]) -> None:
        self.process, self.port, self.lines = process, port, lines


@pytest.fixture
def listener(zk_connect: str, tmp_path: Path, free_port: int) -> Iterator[Listener]:
    props = tmp_path / "server.properties"
    props.write_text("broker.id=5\n")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "listener", "run",
            "--broker-id", "5", "--server-properties", str(props), "--metrics-port", str(free_port),
            "--stall-after", "2", "--recheck-every", "1",
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=child_env({"PYTHONPATH": str(REPO_ROOT)}),
    )  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()
    try:
        wait_for(lambda: health(free_port) == 200, timeout=60, message="the listener's health")
        yield Listener(process, free_port, lines)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def raw_alter(zk: KazooClient, value: str) -> int:
    """The config and its notification in one multi, as kafka-configs.sh writes them."""
    config = json.dumps({"version": 1, "config": {"retention.ms": value}}).encode()
    notification = json.dumps({"version": 2, "entity_path": "topics/orders"}).encode()
    transaction = zk.transaction()
    transaction.set_data("/config/topics/orders", config)
    transaction.create(f"{CHANGES_PATH}/config_change_", notification, sequence=True)
    results = transaction.commit()
    assert not any(isinstance(r, Exception) for r in results), results
    return int(results[1].rsplit("_", 1)[1])


def applied(zk: KazooClient) -> int:
    return json.loads(zk.get(BrokerStateZNode.path(5))[0])["last_applied_change"]


def alter(connect: str, value: str) -> int:
    result = cli(connect, "alter", "--topic", "orders", "--add-config", f"retention.ms={value}", "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["change_number"]


def test_read_revoked_on_the_changes_directory_then_restored(zk_connect, zk, listener):
    first = alter(zk_connect, "1000001")
    wait_for(lambda: applied(zk) == first, timeout=30, message="the first change applied")
    zk.set_acls(CHANGES_PATH, [make_acl("world", "anyone", create=True, delete=True, write=True, admin=True)])
    try:
        blocked = raw_alter(zk, "1000002")  # as any writer can: creating a child needs no READ
        wait_for(
            lambda: health(listener.port) == 503, timeout=30, message="/healthz 503 while it cannot list"
        )
        assert applied(zk) == first
        assert any("may not" in line or "no permission" in line for line in listener.lines), listener.lines
    finally:
        zk.set_acls(CHANGES_PATH, OPEN_ACL_UNSAFE)
    wait_for(lambda: applied(zk) == blocked, timeout=30, message="caught up once READ is back")
    wait_for(lambda: health(listener.port) == 200, timeout=30, message="healthy again")
    later = alter(zk_connect, "1000003")
    wait_for(lambda: applied(zk) == later, timeout=30, message="later changes applied")


def test_read_revoked_while_quiet_is_noticed_and_later_changes_still_apply(zk_connect, zk, listener):
    first = alter(zk_connect, "2000001")
    wait_for(lambda: applied(zk) == first, timeout=30, message="the first change applied")
    zk.set_acls(CHANGES_PATH, [make_acl("world", "anyone", create=True, delete=True, write=True, admin=True)])
    zk.set_acls(CHANGES_PATH, OPEN_ACL_UNSAFE)  # revoked and restored with nothing written meanwhile
    later = alter(zk_connect, "2000002")
    wait_for(lambda: applied(zk) == later, timeout=30, message="later changes applied")


def test_the_changes_directory_deleted_and_created_again(zk_connect, zk, listener):
    for value in ("3000001", "3000002", "3000003"):
        last = alter(zk_connect, value)
    wait_for(lambda: applied(zk) == last, timeout=30, message="three changes applied")
    assert last >= 2
    zk.delete(CHANGES_PATH, recursive=True)  # the counter restarts: the next notification is 0
    renumbered = alter(zk_connect, "3000004")
    assert renumbered == 0
    wait_for(
        lambda: logged(listener, "retention.ms=3000004"), timeout=30, message="the change after the reset"
    )
    wait_for(lambda: applied(zk) == 0, timeout=10, message="following the new numbering")
    again = alter(zk_connect, "3000005")
    wait_for(lambda: applied(zk) == again, timeout=30, message="later changes applied")
    assert logged(listener, "retention.ms=3000005")


def logged(listener: Listener, text: str) -> bool:
    return any(text in line for line in listener.lines)
