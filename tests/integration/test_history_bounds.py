"""One stored history record with a time outside the calendar is a malformed record, skipped.

Issue 36: a record (in ZooKeeper or in the archive) whose ``time_ms`` was 1e20 made ``history``
a traceback for everyone and the console's entity page a 500. It is now skipped as any malformed
record is, and every other record still answers; a moment given outside the calendar is one line.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_env, free_port, run_cli, wait_for
from kazoo.client import KazooClient

pytestmark = pytest.mark.zk

FORGED_MS = 10**20
HISTORY = "/configctl/history/topics/orders"


def cli(zk_connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", zk_connect, *args, **kwargs)


def _two_writes_the_newest_forged(zk_connect: str, zk: KazooClient) -> None:
    for value in ("1000", "2000"):
        written = cli(
            zk_connect, "alter", "--topic", "orders", "--add-config", f"retention.ms={value}", "--yes"
        )
        assert written.returncode == 0, written.stderr
    (newest,) = zk.get_children(HISTORY)
    record = json.loads(zk.get(f"{HISTORY}/{newest}")[0])
    zk.set(f"{HISTORY}/{newest}", json.dumps({**record, "time_ms": FORGED_MS}).encode())


def _history(zk_connect: str, *args: str) -> list[dict]:
    result = cli(zk_connect, "history", *args, "-o", "json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)


def test_a_forged_time_in_zookeeper_is_skipped_and_the_rest_answers(zk_connect, zk):
    _two_writes_the_newest_forged(zk_connect, zk)
    # the forged record is skipped; the version it stood for is then one configctl's history does
    # not account for, and is said as such (never silently answered from version 0's record)
    shown = [
        (e["version"], e.get("written_outside_configctl", False))
        for e in _history(zk_connect, "--topic", "orders")
    ]
    assert shown == [(1, True), (0, False)]
    feed = [
        (e["version"], e.get("written_outside_configctl", False))
        for e in _history(zk_connect, "--since", "-1d")
    ]
    assert feed == [(1, True), (0, False)]


def test_a_forged_time_in_the_archive_is_skipped(zk_connect, zk, tmp_path: Path):
    written = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000", "--yes")
    assert written.returncode == 0, written.stderr
    archive = tmp_path / "archive"
    assert cli(zk_connect, "history", "archive", "--out", str(archive)).returncode == 0
    (kept,) = archive.glob("*.jsonl")
    record = json.loads(kept.read_text().splitlines()[0])
    forged = json.dumps({**record, "version": 7, "time_ms": FORGED_MS})
    kept.write_text(kept.read_text() + forged + "\n")
    entries = _history(zk_connect, "--topic", "orders", "--history-archive", str(archive))
    assert [e["version"] for e in entries] == [0]


@pytest.mark.parametrize(
    "args",
    [
        ("describe", "--topic", "orders", "--effective", "--broker", "1", "--at", "-99999999999d"),
        ("blame", "--topic", "orders", "--key", "retention.ms", "--at", "-" + "9" * 400 + "s"),
        ("history", "--since", "0001-01-01T00:00:01Z"),
    ],
)
def test_a_moment_outside_the_calendar_is_a_usage_error(zk_connect, args):
    result = cli(zk_connect, *args)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "outside the times configctl knows" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_console_s_entity_page_answers_beside_a_forged_time(zk_connect, zk):
    _two_writes_the_newest_forged(zk_connect, zk)
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "configctl",
        "serve",
        "--zookeeper",
        zk_connect,
        "--bind",
        f"127.0.0.1:{port}",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env())

    def get(path: str) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request("GET", path)
            answer = connection.getresponse()
            answer.read()
            return answer.status
        finally:
            connection.close()

    def up() -> bool:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        with contextlib.suppress(OSError):
            return get("/api/console") == 200
        return False

    try:
        wait_for(up, timeout=60, message="configctl serve answering")
        assert get("/entity/topics/orders") == 200
        assert get("/api/entity/topics/orders") == 200
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
