"""The history archive against a real ZooKeeper: a forged record, another cluster's archive, a path
that is not a directory.

Issue 36: an archived record with a version ZooKeeper holds and another time was merged without
a word (``history`` listed the version twice, ``--at`` showed a value never written); an archive
of another cluster was read and written as this one's; a named pipe or a plain file given as
``--history-archive`` read as an empty archive.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import run_cli
from kazoo.client import KazooClient

from configctl.timeref import iso

pytestmark = pytest.mark.zk

ORDERS = "topics%2Forders.jsonl"


def cli(zk_connect: str, *args: str):
    return run_cli("--zookeeper", zk_connect, *args)


def _archived_with_a_forged_version(zk_connect: str, archive: Path) -> dict:
    """Orders written twice (versions 0 and 1, both still in ZooKeeper), archived, then a version 1
    forged into the archive between the two writes, with a value never written."""
    for value in ("1000", "2000"):
        written = cli(
            zk_connect, "alter", "--topic", "orders", "--add-config", f"retention.ms={value}", "--yes"
        )
        assert written.returncode == 0, written.stderr
    done = cli(zk_connect, "history", "archive", "--out", str(archive))
    assert done.returncode == 0, done.stderr
    file = archive / ORDERS
    first, second = (json.loads(line) for line in file.read_text().splitlines())
    forged = {
        **second,
        "time_ms": (first["time_ms"] + second["time_ms"]) // 2,
        "config": {"retention.ms": "6666"},
    }
    file.write_text(file.read_text() + json.dumps(forged) + "\n")
    return forged


def test_a_forged_record_is_left_out_said_and_removed_by_the_next_archive(
    zk_connect, tmp_path, embedded_listeners
):
    archive = tmp_path / "archive"
    forged = _archived_with_a_forged_version(zk_connect, archive)
    reading = ("--history-archive", str(archive))

    listed = cli(zk_connect, "history", "--topic", "orders", *reading, "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert [e["version"] for e in json.loads(listed.stdout)] == [1, 0]  # each version once
    (said,) = [line for line in listed.stderr.splitlines() if line.strip()]
    assert "left out topics/orders version 1" in said and "ZooKeeper holds version 1" in said

    embedded_listeners(1)
    at = cli(
        zk_connect, "describe", "--effective", "--broker", "1", "--topic", "orders",
        "--at", iso(forged["time_ms"] + 1), *reading, "-o", "json",
    )  # fmt: skip
    assert at.returncode == 0, at.stderr
    (retention,) = [c for c in json.loads(at.stdout)["configs"] if c["name"] == "retention.ms"]
    assert retention["value"] == "1000"  # what was written then, never the forged 6666

    again = cli(zk_connect, "history", "archive", "--out", str(archive), "-o", "json")
    assert again.returncode == 0, again.stderr
    (dropped,) = json.loads(again.stdout)["dropped"]
    assert (dropped["version"], dropped["time_ms"]) == (1, forged["time_ms"])
    assert [json.loads(line)["time_ms"] for line in (archive / ORDERS).read_text().splitlines()].count(
        forged["time_ms"]
    ) == 0
    quiet = cli(zk_connect, "history", "--topic", "orders", *reading)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_another_clusters_archive_is_refused_in_one_line(zk_connect, zk: KazooClient, tmp_path):
    archive = tmp_path / "archive"
    _archived_with_a_forged_version(zk_connect, archive)
    assert json.loads((archive / "cluster.json").read_text())["zookeeper"].endswith(
        zk_connect.split("/", 1)[1]
    )
    zk.create("/other")
    other = f"{zk_connect}/other"
    before = {p.name: p.read_bytes() for p in archive.iterdir()}
    for args in (
        ("history", "archive", "--out", str(archive)),
        ("history", "--since", "-1d", "--history-archive", str(archive)),
    ):
        refused = cli(other, *args)
        assert refused.returncode == 1, refused.stderr
        assert "cluster.json" in refused.stderr and "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in archive.iterdir()} == before


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_a_history_archive_that_is_not_a_directory_is_refused_in_one_line(zk_connect, tmp_path, kind):
    written = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000", "--yes")
    assert written.returncode == 0, written.stderr
    path = tmp_path / "archive"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text("")
    setting = {"CONFIGCTL_HISTORY_ARCHIVE": str(path)}  # the flag's own type refuses a plain file already
    for args in (("history", "--topic", "orders"), ("history", "--since", "-1d")):
        refused = run_cli("--zookeeper", zk_connect, *args, env=setting)
        assert refused.returncode == 1, refused.stderr
        assert f"history archive {path}: not a directory" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1


def _kafka_cluster_id(zk: KazooClient, cluster_id: str) -> None:
    """``/cluster/id`` as a Kafka broker writes it on its first start (tests/kafka reads a real one)."""
    document = json.dumps({"version": "1", "id": cluster_id}).encode()
    if zk.exists("/cluster/id"):
        zk.set("/cluster/id", document)
    else:
        zk.create("/cluster/id", document, makepath=True)


def test_kafkas_cluster_id_is_recorded_and_decides_which_cluster_an_archive_is_of(
    zk_connect, zk: KazooClient, tmp_path
):
    archive = tmp_path / "archive"
    _kafka_cluster_id(zk, "Xh1G6rKbR1e0d5tSgdf5Ag")
    written = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000", "--yes")
    assert written.returncode == 0, written.stderr
    done = cli(zk_connect, "history", "archive", "--out", str(archive))
    assert done.returncode == 0, done.stderr
    recorded = json.loads((archive / "cluster.json").read_text())
    assert recorded["kafka_cluster_id"] == "Xh1G6rKbR1e0d5tSgdf5Ag"

    # The same ZooKeeper now holds another Kafka cluster's id: not the cluster archived here.
    _kafka_cluster_id(zk, "another-cluster-id-000")
    before = {p.name: p.read_bytes() for p in archive.iterdir()}
    for args in (
        ("history", "archive", "--out", str(archive)),
        ("history", "--since", "-1d", "--history-archive", str(archive)),
    ):
        refused = cli(zk_connect, *args)
        assert refused.returncode == 1, refused.stderr
        assert "Xh1G6rKbR1e0d5tSgdf5Ag" in refused.stderr and "another-cluster-id-000" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in archive.iterdir()} == before


def test_an_archive_made_before_the_cluster_id_was_known_takes_it_on_its_next_run(
    zk_connect, zk: KazooClient, tmp_path
):
    archive = tmp_path / "archive"
    written = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000", "--yes")
    assert written.returncode == 0, written.stderr
    assert cli(zk_connect, "history", "archive", "--out", str(archive)).returncode == 0
    assert "kafka_cluster_id" not in json.loads((archive / "cluster.json").read_text())
    _kafka_cluster_id(zk, "Xh1G6rKbR1e0d5tSgdf5Ag")
    again = cli(zk_connect, "history", "archive", "--out", str(archive))
    assert again.returncode == 0, again.stderr
    assert json.loads((archive / "cluster.json").read_text())["kafka_cluster_id"] == "Xh1G6rKbR1e0d5tSgdf5Ag"
