"""The history archive's files (configctl.archive): idempotent, torn lines skipped, long names."""

from __future__ import annotations

import pytest

from configctl import archive
from configctl.znodes import HistoryRecord

pytestmark = pytest.mark.unit


def record(path: str, version: int, time_ms: int) -> HistoryRecord:
    return HistoryRecord(path, version, time_ms, "alice@ops", "why", {"retention.ms": str(version)}, {})


def test_archiving_again_adds_only_new_records_and_leaves_files_alone(tmp_path):
    first = {"topics/orders": [record("topics/orders", 1, 20), record("topics/orders", 0, 10)]}
    assert archive.archive(first, tmp_path).added == 2
    file = archive.file_of(tmp_path, "topics/orders")
    before = (file.read_bytes(), file.stat().st_mtime_ns)
    assert archive.archive(first, tmp_path).to_json()["files_written"] == 0
    assert (file.read_bytes(), file.stat().st_mtime_ns) == before
    later = {"topics/orders": [record("topics/orders", 2, 30), record("topics/orders", 1, 20)]}  # 0 trimmed
    assert archive.archive(later, tmp_path).added == 1
    assert [r.version for r in archive.read(tmp_path, "topics/orders")] == [2, 1, 0]
    assert oct(file.stat().st_mode & 0o777) == "0o600"


def test_a_torn_line_is_skipped_and_a_long_name_is_hashed(tmp_path):
    long = "topics/" + "t" * 249  # Kafka's longest topic name
    archive.archive({long: [record(long, 0, 10)], "users/a%b": [record("users/a%b", 0, 10)]}, tmp_path)
    assert len(archive.file_of(tmp_path, long).name) < 255
    with archive.file_of(tmp_path, long).open("a") as handle:
        handle.write('{"entity_path": "topics/')
    assert [r.version for r in archive.read(tmp_path, long)] == [0]
    assert archive.entity_paths(tmp_path) == sorted([long, "users/a%b"])
    live = [record(long, 1, 20)]
    assert [r.version for r in archive.merged(live, archive.read(tmp_path, long))] == [1, 0]
