"""``history archive``: ZooKeeper's history records kept in files, against a real ZooKeeper and a
real listener; ``--at`` and ``history --since`` reach back past ZooKeeper's records through it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from helpers import run_cli, wait_for
from test_time_travel import _applied_change, _listener

from configctl.timeref import iso

LIMIT = {"CONFIGCTL_HISTORY_LIMIT": "2"}


def cli(zk_connect: str, *args: str, env: dict[str, str] | None = None):
    return run_cli("--zookeeper", zk_connect, *args, env=env)


def alter(zk_connect: str, value: str) -> int:
    """Set orders' retention.ms, keeping 2 records per entity in ZooKeeper; the time just after."""
    result = cli(zk_connect, "alter", "--topic", "orders", "--add-config", f"retention.ms={value}", env=LIMIT)
    assert result.returncode == 0, result.stderr
    time.sleep(0.05)
    return int(time.time() * 1000)


def files(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.glob("*.jsonl"))}


def test_the_archive_answers_past_zookeepers_records(zk_connect: str, tmp_path: Path) -> None:
    listener = _listener(zk_connect, 1, tmp_path / "state", tmp_path / "listener-1.log")
    try:
        wait_for(lambda: _applied_change(zk_connect, 1) > -2, timeout=90)
        before_all = int(time.time() * 1000)
        time.sleep(0.05)
        after_first = alter(zk_connect, "1000")
        alter(zk_connect, "2000")
        out = tmp_path / "archive"
        done = cli(zk_connect, "history", "archive", "--out", str(out), "-o", "json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["added"] == 2
        alter(zk_connect, "3000")
        alter(zk_connect, "4000")  # ZooKeeper now keeps versions 2 and 3 only
        first = cli(zk_connect, "history", "archive", "--out", str(out), "-o", "json")
        assert first.returncode == 0, first.stderr
        written = files(out)
        assert list(written) == ["topics%2Forders.jsonl"]
        versions = [json.loads(line)["version"] for line in written["topics%2Forders.jsonl"][0].splitlines()]
        assert versions == [0, 1, 2, 3]
        again = cli(zk_connect, "history", "archive", "--out", str(out), "-o", "json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["added"] == 0 and files(out) == written  # same bytes, untouched

        def describe_at(at_ms: int) -> tuple[str, ...]:
            return ("describe", "--effective", "--broker", "1", "--topic", "orders", "--at", iso(at_ms))

        at = (*describe_at(after_first), "-o", "json")
        refused = cli(zk_connect, *at)
        assert refused.returncode == 13 and "beyond that horizon" in refused.stderr
        kept = {"CONFIGCTL_HISTORY_ARCHIVE": str(out)}
        answered = cli(zk_connect, *at, env=kept)
        assert answered.returncode == 0, answered.stderr
        document = json.loads(answered.stdout)
        assert document["at_ms"] == after_first
        (retention,) = [c for c in document["configs"] if c["name"] == "retention.ms"]
        assert (retention["value"], retention["source"]) == ("1000", "DYNAMIC_TOPIC_CONFIG")

        feed = cli(
            zk_connect, "history", "--since", iso(before_all), "--history-archive", str(out), "-o", "json"
        )
        assert feed.returncode == 0, feed.stderr
        assert [e["version"] for e in json.loads(feed.stdout)] == [3, 2, 1, 0]

        horizon = describe_at(before_all - 86_400_000)
        beyond = cli(zk_connect, *horizon, env=kept)
        assert beyond.returncode == 0  # version 0 is archived: the topic had no config before it
        (out / "topics%2Forders.jsonl").write_bytes(written["topics%2Forders.jsonl"][0].split(b"\n", 1)[1])
        trimmed = cli(zk_connect, *horizon, env=kept)  # the archive lost version 0: beyond its horizon
        assert trimmed.returncode == 13 and "the archive" in trimmed.stderr
        assert len(trimmed.stderr.strip().splitlines()) == 1
    finally:
        listener.terminate()
        listener.wait(timeout=30)
