"""The flight recorder beside a real Kafka 4.4 broker: every writer's changes in history, with their commit times.

``configctl listener run`` beside a KRaft broker follows the broker's own metadata log and keeps
each committed config write in ``_configctl_metadata``. These tests run it as an operator does
(a child process, stopped with SIGTERM) on a cluster of their own (brokers 1 and 2, controller
100), write with configctl and with Kafka's own ``kafka-configs.sh``, and check what configctl
then says against the metadata log itself, read from broker 1's disk. The gap test copies a real
node's log and deletes its oldest segments as Kafka's retention does.
"""

from __future__ import annotations

import itertools
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KAFKA4_HOME, KRaftFleet, _start
from helpers import child_env, run_cli, wait_for
from test_kraft_console import consoles as consoles  # the fixture: every console stopped with SIGTERM
from test_kraft_console import start as start_console

from configctl.kraft import recordertopic
from configctl.kraft.metadatalog import PARTITION, MetadataEntry, read_log, segments, snapshots
from configctl.kraft.metadatarecords import ClientQuotaRecord, ConfigRecord
from configctl.kraft.owntopics import OwnTopicClients
from configctl.kraft.recorder import Recorder
from configctl.localkraft import KRaftCluster
from configctl.timeref import iso

RECORDER_BROKER = 1


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftFleet]:
    """Brokers 1 and 2 and controller 100, of this module alone (the recorder's topic changes how
    configctl counts versions, so the session's clusters never get one)."""
    fleet = _start(tmp_path_factory.mktemp("kraft-recorded"), brokers=2, combined=False)
    try:
        yield fleet
    finally:
        fleet.cluster.stop()


class Sidecar:
    """``configctl listener run`` beside a broker, as a child process."""

    def __init__(self, fleet: KRaftFleet, broker: int, log: Path) -> None:
        self.fleet, self.broker, self.log = fleet, broker, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Sidecar:
        properties = self.fleet.cluster.nodes[self.broker].dir / "server.properties"
        args = ["listener", "run", "--broker-id", str(self.broker), "--server-properties", str(properties)]
        started = self.log.read_text().count("recording broker") if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "configctl", *args], env=child_env(), stderr=out, stdout=out
            )
        wait_for(
            lambda: self.log.read_text().count("recording broker") > started,
            timeout=60,
            message="the recorder started",
        )
        return self

    def stop(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=30) == 0, self.log.read_text()[-2000:]
        self.process = None


def read_recorded(fleet: KRaftFleet) -> tuple[recordertopic.Recorded, list[bytes]]:
    """What the recorder topic holds, and every key in it, raw (a duplicate would show twice)."""
    with OwnTopicClients(fleet.bootstrap, None, 30.0, producer=False) as (_, _, consumer):
        from configctl.kraft import owntopics

        messages, _ = owntopics.read_from(
            consumer, recordertopic.TOPIC, None, fleet.bootstrap, 30.0, what="test"
        )
    found = recordertopic.Recorded()
    for message in messages:
        if message.value is not None:
            recordertopic.decode(message.value, found)
    return found, [m.key for m in messages if m.key is not None]


def commits(fleet: KRaftFleet, broker: int = RECORDER_BROKER) -> list[MetadataEntry]:
    """Every config and quota record in the broker's own metadata log."""
    log = fleet.cluster.nodes[broker].dir / "data"
    return [
        e
        for e in read_log(log)
        if isinstance(e, MetadataEntry) and isinstance(e.record, (ConfigRecord, ClientQuotaRecord))
    ]


def cli(fleet: KRaftFleet, *args: str):
    done = run_cli("--bootstrap-server", fleet.bootstrap, *args)
    return done


def as_json(fleet: KRaftFleet, *args: str):
    done = cli(fleet, *args, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def kafka_tool(fleet: KRaftFleet, *args: str) -> None:
    done = fleet.config_command("--alter", *args)
    assert done.returncode == 0, done.stderr


def recorded_to(fleet: KRaftFleet, offset: int) -> bool:
    """Whether the recorder recorded past ``offset``."""
    found, _ = read_recorded(fleet)
    progress = found.recorders.get(RECORDER_BROKER, {})
    return isinstance(progress.get("recorded_to"), int) and progress["recorded_to"] > offset


def last_commit_of(fleet: KRaftFleet, name: str, key: str) -> MetadataEntry:
    """The newest config record of resource ``name``'s ``key`` in broker 1's log."""
    return [
        e
        for e in commits(fleet)
        if isinstance(e.record, ConfigRecord) and (e.record.resource_name, e.record.name) == (name, key)
    ][-1]


def test_every_writer_is_in_history_blame_and_at_with_its_commit_time(recorded, unique, tmp_path, consoles):
    fleet = recorded
    topic, user = unique("orders"), unique("alice")
    fleet.create_topics(topic)
    sidecar = Sidecar(fleet, RECORDER_BROKER, tmp_path / "recorder.log").start()
    try:
        written = cli(
            fleet, "alter", "--topic", topic, "--add-config", "retention.ms=1000", "--reason", "ours"
        )
        assert written.returncode == 0, written.stderr
        time.sleep(1.1)  # the writes a second apart, so the moment between them is unambiguous
        kafka_tool(
            fleet, "--entity-type", "topics", "--entity-name", topic, "--add-config", "retention.ms=2000"
        )
        time.sleep(1.1)
        kafka_tool(
            fleet, "--entity-type", "topics", "--entity-name", topic, "--add-config", "segment.ms=3600000"
        )
        kafka_tool(
            fleet, "--entity-type", "users", "--entity-name", user, "--add-config", "producer_byte_rate=1024"
        )
        newest = commits(fleet)[-1]
        wait_for(
            lambda: recorded_to(fleet, newest.offset), timeout=30, message="the recorder past the last write"
        )
    finally:
        sidecar.stop()

    # Each write by Kafka's tool is in history, numbered by its metadata offset and timed by the
    # controllers' commit, as broker 1's own metadata log holds them.
    second, third = last_commit_of(fleet, topic, "retention.ms"), last_commit_of(fleet, topic, "segment.ms")
    history = as_json(fleet, "history", "--topic", topic)
    assert [(e["version"], e.get("written_outside_configctl", False)) for e in history] == [
        (2, True),
        (1, True),
        (0, False),
    ]
    assert (history[0]["change_number"], history[0]["time_ms"]) == (third.offset, third.append_time_ms)
    assert (history[1]["change_number"], history[1]["time_ms"]) == (second.offset, second.append_time_ms)
    assert history[1]["changed"] == {"retention.ms": "1000"} and history[0]["config"] == {
        "retention.ms": "2000",
        "segment.ms": "3600000",
    }
    assert history[2]["reason"] == "ours"

    # The fleet's feed names every writer's changes, the user's quota among them.
    feed = as_json(fleet, "history", "--since", "-5m")
    outside = {(e["entity_path"], tuple(e["keys"])) for e in feed if e.get("written_outside_configctl")}
    assert (f"topics/{topic}", ("retention.ms",)) in outside
    assert (f"users/{user}", ("producer_byte_rate",)) in outside

    # blame names the outside write as the value in force; --at answers the moment between.
    blame = as_json(fleet, "blame", "--topic", topic, "--key", "retention.ms", "--broker", "1")
    newest_link = blame["chain"][0]
    assert newest_link["written_outside_configctl"] is True, blame
    assert (newest_link["change_number"], newest_link["time_ms"]) == (second.offset, second.append_time_ms)
    between = iso(second.append_time_ms - 500)
    at = as_json(fleet, "describe", "--effective", "--broker", "1", "--topic", topic, "--at", between)
    in_force = {c["name"]: c for c in at["configs"]}
    assert in_force["retention.ms"]["value"] == "1000", at
    assert in_force["segment.ms"]["source"] != "DYNAMIC_TOPIC_CONFIG", at  # not written yet then

    # diff between two changes by their metadata offsets: what Kafka's tool's second write moved.
    moved = cli(fleet, "diff", "--broker", "1", "--topic", topic, "--at", f"change:{second.offset}",
                "--at", f"change:{third.offset}", "-o", "json")  # fmt: skip
    assert moved.returncode == 2, moved.stderr
    assert "segment.ms" in moved.stdout and "retention.ms" not in moved.stdout, moved.stdout

    # status shows how far the recorder went, beside the quorum's own figures.
    (row,) = as_json(fleet, "status")["recorders"]
    assert (
        row["broker_id"] == RECORDER_BROKER and row["recorded_to"] > newest.offset and row["problems"] == []
    )
    assert isinstance(row["behind"], int) and isinstance(row["broker_offset"], int)
    shown = cli(fleet, "status")
    assert shown.returncode == 0 and "Flight recorders" in shown.stdout, shown.stdout

    # The console's entity page: the same writes, dated by their commits.
    console = start_console(fleet)
    consoles.append(console)
    page = console.json(f"/api/entity/topics/{topic}")
    dated = [
        (h.get("change_number"), h["time_ms"]) for h in page["history"] if h.get("written_outside_configctl")
    ]
    assert dated == [(third.offset, third.append_time_ms), (second.offset, second.append_time_ms)], page[
        "history"
    ]

    # configctl's next write takes the version after every recorded one.
    done = cli(fleet, "alter", "--topic", topic, "--add-config", "retention.ms=5000", "--if-version", "2")
    assert done.returncode == 0, done.stderr


def test_the_recorder_survives_its_own_restart_and_its_brokers(recorded, unique, tmp_path):
    fleet = recorded
    topic = unique("restarts")
    fleet.create_topics(topic)
    log = tmp_path / "recorder.log"
    sidecar = Sidecar(fleet, RECORDER_BROKER, log).start()
    sidecar.stop()
    # Written while the recorder is down: recorded once it is back.
    kafka_tool(fleet, "--entity-type", "topics", "--entity-name", topic, "--add-config", "retention.ms=1111")
    sidecar.start()
    try:
        # Written while its broker is down (through broker 2): recorded once the broker is back.
        fleet.cluster.stop(ids=[RECORDER_BROKER])
        done = fleet.cluster.tool(
            "org.apache.kafka.tools.ConfigCommand",
            "--bootstrap-server",
            fleet.cluster.nodes[2].bootstrap,
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            topic,
            "--add-config",
            "retention.ms=2222",
        )
        assert done.returncode == 0, done.stderr
        fleet.cluster.start(ids=[RECORDER_BROKER])
        wait_for(
            lambda: (
                {
                    c.changed.get("retention.ms", (None, None))[1]
                    for c in read_recorded(fleet)[0].of_entity(f"topics/{topic}")
                }
                >= {"1111", "2222"}
            ),
            timeout=90,
            interval=1,
            message="both writes recorded",
        )
    finally:
        sidecar.stop()
    found, keys = read_recorded(fleet)
    changes = [k for k in keys if k.startswith(b"change/")]
    assert len(changes) == len(set(changes)), "a write recorded twice"
    writes = [c.changed["retention.ms"] for c in found.of_entity(f"topics/{topic}")]
    assert writes == [(None, "1111"), ("1111", "2222")]


SNAPSHOTS = {
    "metadata.log.segment.ms": "1000",  # a segment a second (the quorum appends a NoOp every 500 ms)
    "metadata.log.max.snapshot.interval.ms": "1000",  # a snapshot a second
}


def test_a_gap_is_recorded_with_what_it_hid_never_papered_over(tmp_path: Path) -> None:
    """Segments Kafka deleted before any recorder read them: a gap from offset 0 to the snapshot
    that covers them, naming the entity whose config changed inside it, and the writes after it
    recorded from the snapshot's state."""
    with KRaftCluster(KAFKA4_HOME, tmp_path / "cluster", combined=True, properties=SNAPSHOTS) as cluster:
        fleet = KRaftFleet(cluster, tmp_path / "unused.properties")
        fleet.create_topics("hidden")
        kafka_tool(
            fleet, "--entity-type", "topics", "--entity-name", "hidden", "--add-config", "retention.ms=1234"
        )
        written = last_commit_of(fleet, "hidden", "retention.ms").offset
        log = cluster.nodes[1].dir / "data"

        def past_the_write() -> int | None:
            """The base of the segment after the write's, once a snapshot reaches it."""
            after = next((base for base, _ in segments(log) if base > written), None)
            if after is None or not any(s.end_offset >= after for s in snapshots(log)):
                return None
            return after

        after = wait_for(
            past_the_write, timeout=60, interval=0.5, message="a snapshot past the write's segment"
        )
        # Kafka's retention, on a copy: every segment wholly below the snapshot's end is gone.
        copy = tmp_path / "copy" / PARTITION
        copy.mkdir(parents=True)
        for path in (log / PARTITION).iterdir():
            if path.name.endswith((".log", ".checkpoint")):
                shutil.copyfile(path, copy / path.name)
        snapshot = next(s for s in snapshots(copy.parent) if s.end_offset >= after)
        files = segments(copy.parent)
        for (_base, path), (following, _) in itertools.pairwise(files):
            if following <= snapshot.end_offset:
                path.unlink()
        first = segments(copy.parent)[0][0]
        assert first > written  # the write itself is gone from the copy

        recorder = Recorder(1, copy.parent, fleet.bootstrap)
        with recorder:
            recorder.step()
        found, _ = read_recorded(fleet)
        (gap,) = found.gaps.values()
        assert gap.start == 0 and gap.end >= first and gap.entities_known
        assert "topics/hidden" in gap.entities
        assert not [c for c in found.changes.values() if c.offset < gap.end]  # nothing invented inside it

        # The next write is recorded from the snapshot's state: its value before is the hidden one.
        kafka_tool(
            fleet, "--entity-type", "topics", "--entity-name", "hidden", "--add-config", "retention.ms=5678"
        )
        newest = last_commit_of(fleet, "hidden", "retention.ms")
        for base, path in segments(log):  # what Kafka appended since, torn tail and all
            if base >= first:
                shutil.copyfile(path, copy / path.name)
        with Recorder(1, copy.parent, fleet.bootstrap) as again:
            wait_for(
                lambda: again.step().recorded_to > newest.offset, timeout=30, message="the write recorded"
            )
        found, _ = read_recorded(fleet)
        assert found.changes[newest.offset].changed == {"retention.ms": ("1234", "5678")}
