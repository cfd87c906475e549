"""configctl's reader of a KRaft node's metadata log agrees with Kafka's own decoder on a real node.

Configs, quotas and SCRAM credentials are written to a real Kafka 4.4 cluster (through configctl's
Admin API client and Kafka's own kafka-configs.sh); then the files of a broker's
``__cluster_metadata-0`` (segments and snapshots, copied at one moment so both decoders read the
same bytes) are decoded by :mod:`configctl.kraft.metadatalog` and by Kafka's
``DumpLogSegments --cluster-metadata-decoder`` from the same jars. Every config, quota, SCRAM and
feature record Kafka's tool prints is in configctl's output with the same offset, time, resource,
key and value (a secret as its digest), and nothing else is. A torn tail and a broken CRC are made
on copies of the real segment: Kafka's tool is the judge of where each batch is and that the CRC
is broken.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest
from conftest import KAFKA4_HOME, KRaftFleet
from helpers import wait_for

from configctl.digests import digest
from configctl.entities import EntityType
from configctl.kafkacodes import SCRAM_TYPES
from configctl.kraft.metadatalog import (
    PARTITION,
    Gap,
    MetadataEntry,
    read_log,
    read_snapshot,
    segments,
    snapshots,
)
from configctl.kraft.metadatarecords import (
    ClientQuotaRecord,
    ConfigRecord,
    FeatureLevelRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
    secret_config,
)
from configctl.kraft.recordbatch import CorruptLog
from configctl.localkraft import KRaftCluster
from configctl.secrets import ScramCredential

DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"
"""Kafka 4's DumpLogSegments (moved from core's ``kafka.tools`` to the tools jar)."""
_RECORD_LINE = re.compile(r"^\| offset: (\d+) (?:CreateTime|LogAppendTime): (-?\d+) .*? payload: (\{.*\})$")
_BATCH_LINE = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) .* position: (\d+) .* size: (\d+) .* isvalid: (\w+)"
)
_COMPARED = {
    "CONFIG_RECORD",
    "CLIENT_QUOTA_RECORD",
    "USER_SCRAM_CREDENTIAL_RECORD",
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
    "FEATURE_LEVEL_RECORD",
}
BROKER = 1
"""A broker in both shapes (combined and separate): the node whose log a sidecar would read."""


def dump(fleet: KRaftFleet, files: Iterable[Path]) -> dict[str, list[str]]:
    """Kafka's DumpLogSegments output for each file, its lines by file name."""
    names = [str(path) for path in files]
    run = fleet.cluster.tool(DUMP_LOG_SEGMENTS, "--cluster-metadata-decoder", "--files", ",".join(names))
    assert run.returncode == 0, run.stderr
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in run.stdout.splitlines():
        if line.startswith("Dumping "):
            current = found.setdefault(Path(line.removeprefix("Dumping ").strip()).name, [])
        else:
            current.append(line)
    return found


def kafka_records(lines: Iterable[str]) -> list[tuple[object, ...]]:
    """The compared records Kafka's tool prints, each as (offset, time, kind, fields...), secrets
    digested as configctl promises to keep them."""
    found: list[tuple[object, ...]] = []
    for line in lines:
        match = _RECORD_LINE.match(line)
        if not match:
            continue
        payload = json.loads(match.group(3))
        kind, data = payload["type"], payload["data"]
        if kind not in _COMPARED:
            continue
        head = (int(match.group(1)), int(match.group(2)), kind)
        if kind == "CONFIG_RECORD":
            value = data["value"]
            if value is not None and secret_config(data["resourceType"], data["name"]):
                value = digest(value)
            found.append((*head, data["resourceType"], data["resourceName"], data["name"], value))
        elif kind == "CLIENT_QUOTA_RECORD":
            entity = tuple((part["entityType"], part["entityName"]) for part in data["entity"])
            found.append((*head, entity, data["key"], float(data["value"]), data["remove"]))
        elif kind == "USER_SCRAM_CREDENTIAL_RECORD":
            keys = [base64.b64decode(data[name]) for name in ("salt", "storedKey", "serverKey")]
            credential = ScramCredential(*keys, data["iterations"]).to_config_value()
            mechanism = SCRAM_TYPES[data["mechanism"]]
            found.append((*head, data["name"], mechanism, data["iterations"], digest(credential)))
        elif kind == "REMOVE_USER_SCRAM_CREDENTIAL_RECORD":
            found.append((*head, data["name"], SCRAM_TYPES[data["mechanism"]]))
        else:
            found.append((*head, data["name"], data["featureLevel"]))
    return found


def configctl_records(entries: Iterable[MetadataEntry | Gap]) -> list[tuple[object, ...]]:
    """The same records as configctl's reader decodes them."""
    found: list[tuple[object, ...]] = []
    for entry in entries:
        assert isinstance(entry, MetadataEntry), f"a gap in a node's own log: {entry}"
        head = (entry.offset, entry.append_time_ms)
        record = entry.record
        if isinstance(record, ConfigRecord):
            fields: tuple[object, ...] = (
                record.resource_type,
                record.resource_name,
                record.name,
                record.value,
            )
            found.append((*head, "CONFIG_RECORD", *fields))
        elif isinstance(record, ClientQuotaRecord):
            found.append(
                (*head, "CLIENT_QUOTA_RECORD", record.entity, record.key, record.value, record.remove)
            )
        elif isinstance(record, UserScramCredentialRecord):
            fields = (record.name, record.mechanism, record.iterations, record.credential_digest)
            found.append((*head, "USER_SCRAM_CREDENTIAL_RECORD", *fields))
        elif isinstance(record, RemoveUserScramCredentialRecord):
            found.append((*head, "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", record.name, record.mechanism))
        elif isinstance(record, FeatureLevelRecord):
            found.append((*head, "FEATURE_LEVEL_RECORD", record.name, record.level))
    return found


def node_log(fleet: KRaftFleet, node_id: int = BROKER) -> Path:
    return fleet.cluster.nodes[node_id].dir / "data" / PARTITION


def copy_log(source: Path, target: Path) -> Path:
    """The log's segments and snapshots as they are at one moment (a torn tail may come along)."""
    copy = target / PARTITION
    copy.mkdir(parents=True)
    for path in sorted(source.iterdir()):
        if path.name.endswith((".log", ".checkpoint")):
            shutil.copyfile(path, copy / path.name)
    return copy


def write_through_both_clients(fleet: KRaftFleet, user: str, client: str, topic: str, password: str) -> None:
    """Broker, topic, quota and SCRAM changes, set and removed, by configctl's client and Kafka's tool."""
    fleet.create_topics(topic)
    with fleet.admin() as admin:
        admin.alter_broker(None, {"log.cleaner.backoff.ms": "16000"})
        admin.alter_broker(BROKER, {"listener.name.plaintext.ssl.key.password": password})
        admin.alter_topic(topic, {"retention.ms": "86400000"})
        admin.alter_broker(None, {}, ["log.cleaner.backoff.ms"])
        admin.alter_broker(BROKER, {}, ["listener.name.plaintext.ssl.key.password"])
    entity = ("--entity-type", "users", "--entity-name", user)
    both = (*entity, "--entity-type", "clients", "--entity-name", client)
    for args in (
        (*both, "--add-config", "request_percentage=50.5,producer_byte_rate=1024"),
        (*entity, "--add-config", f"SCRAM-SHA-512=[iterations=8192,password={password}]"),
        (*both, "--delete-config", "producer_byte_rate"),
        (*entity, "--delete-config", "SCRAM-SHA-512"),
    ):
        run = fleet.config_command("--alter", *args)
        assert run.returncode == 0, run.stderr


Written = tuple[KRaftFleet, Path, str, str, str]


def write_and_copy(fleet: KRaftFleet, unique, tmp_path: Path) -> Written:
    """The changes written, and the broker's log copied once they are all on its disk."""
    user, client, topic, password = (
        unique("mlog-user"),
        unique("mlog-app"),
        unique("mlog-topic"),
        unique("pw"),
    )
    write_through_both_clients(fleet, user, client, topic, password)
    removal = RemoveUserScramCredentialRecord(user, "SCRAM-SHA-512")

    def replayed() -> bool:  # the broker follows the controller: the last change reaches its disk soon
        return any(isinstance(e, MetadataEntry) and e.record == removal for e in read_log(node_log(fleet)))

    wait_for(replayed, timeout=30, message="the SCRAM removal in broker 1's metadata log")
    return fleet, copy_log(node_log(fleet), tmp_path), user, topic, password


@pytest.fixture
def written(kraft: KRaftFleet, unique, tmp_path: Path) -> Written:
    """On each shape: the combined node's own log, and a broker-only node's beside its controller."""
    return write_and_copy(kraft, unique, tmp_path)


@pytest.fixture
def written_combined(kraft_combined: KRaftFleet, unique, tmp_path: Path) -> Written:
    return write_and_copy(kraft_combined, unique, tmp_path)


def test_every_config_quota_and_scram_record_decodes_as_kafka_s_own_tool_prints_it(written) -> None:
    fleet, copy, user, topic, password = written
    files = sorted(copy.iterdir())
    printed = dump(fleet, files)
    segments = [path for path in files if path.suffix == ".log"]
    kafka_says = kafka_records(line for path in segments for line in printed[path.name])
    ours = configctl_records(read_log(copy.parent))
    assert ours == kafka_says

    # What this test wrote is among them (so the comparison cannot pass on an empty log).
    kinds = {(row[2], *row[3:5]) for row in ours}
    assert ("CONFIG_RECORD", 2, topic) in kinds
    assert ("CONFIG_RECORD", 4, str(BROKER)) in kinds
    assert ("USER_SCRAM_CREDENTIAL_RECORD", user, "SCRAM-SHA-512") in kinds
    assert ("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", user, "SCRAM-SHA-512") in kinds
    quotas = [row for row in ours if row[2] == "CLIENT_QUOTA_RECORD" and ("user", user) in row[3]]
    assert [(row[4], row[6]) for row in quotas] in (
        [("request_percentage", False), ("producer_byte_rate", False), ("producer_byte_rate", True)],
        [("producer_byte_rate", False), ("request_percentage", False), ("producer_byte_rate", True)],
    )
    # The password and the SCRAM keys are never returned in clear: a digest stands for them.
    key = "listener.name.plaintext.ssl.key.password"
    assert (4, str(BROKER), key, digest(password)) in {row[3:] for row in ours if row[2] == "CONFIG_RECORD"}
    assert password not in repr(list(read_log(copy.parent)))

    # Each snapshot decodes as Kafka's tool prints it too. A controller keeps the one written at
    # format time (with the SCRAM users bootstrapped); a broker-only node has none until it takes one.
    found = snapshots(copy.parent)
    for snapshot in found:
        assert configctl_records(read_snapshot(snapshot)) == kafka_records(printed[snapshot.path.name])
    if BROKER in fleet.controller_ids:
        assert found and found[0].end_offset == 0
        bootstrap = configctl_records(read_snapshot(found[0]))
        assert ("USER_SCRAM_CREDENTIAL_RECORD", fleet.scram_user) in {(row[2], row[3]) for row in bootstrap}


def _batch_of(lines: Iterable[str], offset: int) -> tuple[int, int, int, int, str]:
    """The batch Kafka's tool places around ``offset``: (base, last, position, size, isvalid)."""
    for line in lines:
        match = _BATCH_LINE.match(line)
        if match and int(match.group(1)) <= offset <= int(match.group(2)):
            base, last, position, size = (int(match.group(i)) for i in range(1, 5))
            return base, last, position, size, match.group(5)
    raise AssertionError(f"no batch holds offset {offset}")


def _topic_config_entry(copy: Path, topic: str) -> tuple[Path, MetadataEntry]:
    """The segment holding this test's topic config record, and that record as configctl reads it."""
    for entry in read_log(copy.parent):
        record = entry.record if isinstance(entry, MetadataEntry) else None
        if (
            isinstance(record, ConfigRecord)
            and record.family is EntityType.TOPICS
            and record.resource_name == topic
        ):
            assert isinstance(entry, MetadataEntry)
            segment = max(
                (p for p in copy.glob("*.log") if int(p.stem) <= entry.offset), key=lambda p: int(p.stem)
            )
            return segment, entry
    raise AssertionError(f"no config record of topic {topic}")


def test_a_torn_tail_reads_up_to_the_last_whole_batch_and_a_broken_crc_is_one_line(written_combined) -> None:
    fleet, copy, _user, topic, _password = written_combined
    segment, entry = _topic_config_entry(copy, topic)
    for later in copy.glob("*.log"):  # the cut segment is the log's last, as a running node's would be
        if int(later.stem) > int(segment.stem):
            later.unlink()
    base, _last, position, size, valid = _batch_of(dump(fleet, [segment])[segment.name], entry.offset)
    assert valid == "true"
    whole = segment.read_bytes()

    # Cut inside the batch, as a node's active segment is cut mid-write: the batches before it, no error.
    before = [e for e in read_log(copy.parent) if isinstance(e, MetadataEntry) and e.offset < base]
    segment.write_bytes(whole[: position + size // 2])
    assert list(read_log(copy.parent)) == before
    torn = dump(fleet, [segment])[segment.name]  # Kafka's tool stops at the same batch
    assert f"Found {size // 2} invalid bytes at the end of {segment.name}" in torn
    assert configctl_records(before) == kafka_records(torn)

    # One byte of the record changed, the length intact: Kafka's tool calls the batch invalid, and
    # configctl refuses it in one line naming the file and the batch's offset.
    broken = bytearray(whole)
    broken[position + size - 3] ^= 0x5A
    segment.write_bytes(bytes(broken))
    assert _batch_of(dump(fleet, [segment])[segment.name], entry.offset)[4] == "false"
    with pytest.raises(CorruptLog) as caught:
        list(read_log(copy.parent))
    message = str(caught.value)
    assert message.startswith(f"{segment} at offset {base}: CRC-32C mismatch")
    assert "\n" not in message


RETENTION = {
    "metadata.log.segment.ms": "1000",  # a segment a second (the quorum appends a NoOp every 500 ms)
    "metadata.log.max.snapshot.interval.ms": "1000",  # a snapshot a second
    "metadata.max.retention.ms": "1000",  # and everything a snapshot covers is old enough to go
}
"""A node that deletes its old metadata segments as soon as Kafka's cleaner runs (every 60 s)."""


@pytest.mark.long
def test_segments_kafka_deleted_are_a_gap_never_papered_over(tmp_path: Path) -> None:
    """Kafka's own retention of the metadata log: once its cleaner ran, the offsets before the
    node's first segment are reported as a gap, and a snapshot covers them."""
    with KRaftCluster(KAFKA4_HOME, tmp_path, combined=True, properties=RETENTION) as cluster:
        log = cluster.nodes[1].dir / "data"
        wait_for(
            lambda: segments(log)[0][0] > 0, timeout=150, interval=1, message="Kafka deleting old segments"
        )
        first = segments(log)[0][0]
        items = list(read_log(log))  # Kafka may delete more meanwhile: the gap only grows
        gap, following = items[0], items[1]
        assert isinstance(gap, Gap) and gap.start == 0 and gap.end >= first, items[:3]
        assert isinstance(following, MetadataEntry) and following.offset >= gap.end, items[:3]
        assert not any(isinstance(item, Gap) for item in items[1:]), items
        assert any(snapshot.end_offset >= gap.end for snapshot in snapshots(log))
