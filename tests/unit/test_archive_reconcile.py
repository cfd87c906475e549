"""The history archive against forged records, another cluster's records and a planted symlink.

Issue 36: an archived record with a version ZooKeeper holds and another time was merged without
a word (``history`` listed the version twice, ``--at`` showed a value never written, ``blame``
credited a real change to it); ``history archive`` wrote through a symlink planted at its
predictable temporary name, and took any existing directory, whoever could write to it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from configctl import archive
from configctl.errors import InvalidInput
from configctl.znodes import HistoryRecord

pytestmark = pytest.mark.unit

ORDERS = "topics/orders"
CLUSTER = "zk1:2181,zk2:2181/kafka"


def record(version: int, time_ms: int, value: str | None = None) -> HistoryRecord:
    config = {"retention.ms": value or str(1000 * (version + 1))}
    return HistoryRecord(ORDERS, version, time_ms, "alice@ops", "why", config, {})


# ZooKeeper keeps versions 1 and 2; version 0 was trimmed (and archived before it was)
LIVE = [record(2, 300), record(1, 200)]
TRIMMED = record(0, 100)


def test_an_archived_record_zookeeper_contradicts_is_left_out_and_said():
    forged = record(1, 250, "6666")  # a version ZooKeeper holds, at another time
    altered = record(2, 300, "7777")  # ZooKeeper's very record, another config
    unknown = record(5, 260)  # inside the span ZooKeeper holds whole, and not in it
    archived = [TRIMMED, record(1, 200), forged, altered, unknown]
    assert [(r.version, r.time_ms) for r in archive.merged(LIVE, archived)] == [(2, 300), (1, 200), (0, 100)]
    assert archive.merged(LIVE, archived)[0] == LIVE[0]  # ZooKeeper's copy wins
    result = archive.reconcile(LIVE, archived)
    assert [d.record for d in result.dropped] == [forged, altered, unknown]
    assert "ZooKeeper holds version 1 of" in result.dropped[0].why
    assert "differs from ZooKeeper's" in result.dropped[1].why
    assert "every record since" in result.dropped[2].why


def test_records_older_than_zookeepers_are_the_archives_to_tell():
    # a node deleted and created again starts at version 0 again: an old version 1 is no conflict
    recreated = [record(1, 60), record(0, 50)]
    result = archive.reconcile(LIVE, [*recreated, TRIMMED])
    assert [(r.version, r.time_ms) for r in result.records] == [
        (2, 300),
        (1, 200),
        (0, 100),
        (1, 60),
        (0, 50),
    ]
    assert result.dropped == []
    assert archive.reconcile([], [TRIMMED]).records == [
        TRIMMED
    ]  # ZooKeeper keeps none: nothing to contradict


def test_one_record_archived_twice_differently_is_refused_in_one_line():
    with pytest.raises(InvalidInput, match=r"topics/orders version 0 of .* twice, differently") as refused:
        archive.reconcile(LIVE, [TRIMMED, record(0, 100, "9")])
    assert "\n" not in str(refused.value)


def test_archiving_removes_a_contradicted_record_from_the_file_and_says_so(tmp_path):
    archive.archive({ORDERS: [TRIMMED]}, tmp_path, cluster=CLUSTER)
    file = archive.file_of(tmp_path, ORDERS)
    forged = record(1, 250, "6666")
    file.write_text(file.read_text() + archive.to_line(forged))
    done = archive.archive({ORDERS: LIVE}, tmp_path, cluster=CLUSTER)
    assert [r.version for r in archive.read(tmp_path, ORDERS)] == [2, 1, 0]
    assert all(r.time_ms != 250 for r in archive.read(tmp_path, ORDERS))
    (dropped,) = done.to_json()["dropped"]
    assert (dropped["entity_path"], dropped["version"], dropped["time_ms"]) == (ORDERS, 1, 250)


# -- the files ---------------------------------------------------------------------------------------


def test_a_symlink_planted_at_the_temporary_name_is_never_written_through(tmp_path):
    directory = tmp_path / "archive"
    directory.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    file = archive.file_of(directory, ORDERS)
    (directory / f".{file.name}.{os.getpid()}.tmp").symlink_to(victim)
    archive.archive({ORDERS: LIVE}, directory)
    assert victim.read_text() == "precious\n"
    assert [r.version for r in archive.read(directory, ORDERS)] == [2, 1]
    assert oct(file.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_an_existing_directory_others_can_write_to_is_refused(tmp_path, mode):
    directory = tmp_path / "archive"
    directory.mkdir()
    directory.chmod(mode)
    with pytest.raises(InvalidInput, match=r"others can write to it") as refused:
        archive.archive({ORDERS: LIVE}, directory)
    assert "\n" not in str(refused.value)
    assert list(directory.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory away needs root")
def test_an_existing_directory_owned_by_another_user_is_refused(tmp_path):
    directory = tmp_path / "archive"
    directory.mkdir(mode=0o700)
    os.chown(directory, 12345, -1)
    with pytest.raises(InvalidInput, match=r"owned by uid 12345"):
        archive.archive({ORDERS: LIVE}, directory)


def test_the_first_run_records_the_cluster_and_another_cluster_is_refused(tmp_path):
    directory = tmp_path / "archive"
    archive.archive({ORDERS: LIVE}, directory, cluster=CLUSTER)
    assert json.loads((directory / archive.CLUSTER_FILE).read_text())["zookeeper"] == CLUSTER
    before = sorted(p.name for p in directory.iterdir())
    archive.archive(
        {ORDERS: LIVE}, directory, cluster="zk3:2181, zk2:2181/kafka"
    )  # the same, one server moved
    foreign = [record(1, 210)]
    for other in ("zk1:2181,zk2:2181/other", "zk9:2181/kafka", "zk1:2181"):
        with pytest.raises(InvalidInput, match=r"cluster\.json") as refused:
            archive.archive({ORDERS: foreign}, directory, cluster=other)
        assert "\n" not in str(refused.value)
    assert sorted(p.name for p in directory.iterdir()) == before
    assert [r.time_ms for r in archive.read(directory, ORDERS)] == [300, 200]


def test_an_archive_from_before_the_cluster_file_is_adopted(tmp_path: Path):
    directory = tmp_path / "archive"
    archive.archive({ORDERS: [TRIMMED]}, directory)  # no cluster known: none recorded
    assert not (directory / archive.CLUSTER_FILE).exists()
    archive.archive({ORDERS: LIVE}, directory, cluster=CLUSTER)
    assert json.loads((directory / archive.CLUSTER_FILE).read_text())["zookeeper"] == CLUSTER
