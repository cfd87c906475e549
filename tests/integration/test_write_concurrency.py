"""Concurrent writers lose nothing; a killed writer never leaves a config without its notification."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from configctl import writer
from configctl.entities import Entity
from configctl.zk.configstore import ZooKeeperStore as ConfigStore

PROCESSES = 8
ALTERS_PER_PROCESS = 250


def _alter_own_key(connect: str, index: int, count: int, queue: multiprocessing.Queue) -> None:
    entity = Entity.of("topics", "contended")
    retries = 0
    with ConfigStore.connect(connect, history_limit=5) as store:
        for counter in range(1, count + 1):
            change = writer.prepare_change(entity, {_key(index): str(counter)})
            result = writer.alter(store, entity, change)
            retries += result.attempts - 1
    queue.put((index, retries))


def _key(index: int) -> str:
    # Eight distinct long-typed topic keys, one per process.
    return [
        "retention.ms",
        "segment.ms",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "max.compaction.lag.ms",
        "message.timestamp.after.max.ms",
    ][index]


@pytest.mark.slow
def test_eight_writers_lose_no_update(zk_connect, zk):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    workers = [
        ctx.Process(target=_alter_own_key, args=(zk_connect, i, ALTERS_PER_PROCESS, queue))
        for i in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=600)
        assert worker.exitcode == 0
    retries = dict(queue.get(timeout=5) for _ in workers)
    config = json.loads(zk.get("/config/topics/contended")[0])["config"]
    assert config == {_key(i): str(ALTERS_PER_PROCESS) for i in range(PROCESSES)}
    assert len(zk.get_children("/config/changes")) == PROCESSES * ALTERS_PER_PROCESS
    assert zk.exists("/config/topics/contended").version == PROCESSES * ALTERS_PER_PROCESS - 1
    assert sum(retries.values()) > 0  # the writers really did collide


_WRITER_LOOP = """
import sys
from configctl import writer
from configctl.entities import Entity
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
entity = Entity.of("topics", "killed")
with ConfigStore.connect(sys.argv[1], history_limit=100000) as store:
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        writer.alter(store, entity, writer.prepare_change(entity, {"retention.ms": str(n)}))
"""


@pytest.mark.slow
def test_sigkilled_writer_never_leaves_config_without_notification(zk_connect, zk):
    rng = random.Random(1234)
    for _ in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER_LOOP, zk_connect],
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        assert proc.stdout is not None
        proc.stdout.readline()
        time.sleep(rng.uniform(0.01, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    stat = zk.exists("/config/topics/killed")
    assert stat is not None
    writes = stat.version + 1
    assert writes > 12
    notifications = zk.get_children("/config/changes")
    assert len(notifications) == writes
    # one record per write: the history directory's own data (the first), then a child per write
    history = zk.get_children("/configctl/history/topics/killed")
    assert len(history) + 1 == writes and zk.get("/configctl/history/topics/killed")[0]
    latest = json.loads(zk.get("/config/topics/killed")[0])["config"]["retention.ms"]
    records = [json.loads(zk.get(f"/configctl/history/topics/killed/{h}")[0]) for h in history]
    records.append(json.loads(zk.get("/configctl/history/topics/killed")[0]))
    assert max(records, key=lambda r: r["version"])["config"]["retention.ms"] == latest


def test_a_writer_starts_from_what_it_wrote_and_the_version_check_catches_others(zk_connect, monkeypatch):
    entity = Entity.of("topics", "cached")
    with ConfigStore.connect(zk_connect) as store:
        writer.alter(store, entity, writer.prepare_change(entity, {"retention.ms": "1"}))
        reads: list[Entity] = []
        original = store.read
        monkeypatch.setattr(store, "read", lambda e, **kw: reads.append(e) or original(e, **kw))
        writer.alter(store, entity, writer.prepare_change(entity, {"retention.ms": "2"}))
        assert reads == []  # one round trip saved: no read before the write
        with ConfigStore.connect(zk_connect) as other:
            writer.alter(other, entity, writer.prepare_change(entity, {"segment.ms": "5"}))
        result = writer.alter(store, entity, writer.prepare_change(entity, {"retention.ms": "3"}))
        assert result.attempts == 2 and reads == [entity]
        assert result.after == {"retention.ms": "3", "segment.ms": "5"}
