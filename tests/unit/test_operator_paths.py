"""Paths operators give where a directory is read: a named pipe or a plain file is refused in one line.

Issue 36: a FIFO given as ``audit --snapshots`` passed the early check and was read by Spark as
no snapshot at all (a typo passing for a fleet without drift); the same for ``--history-archive``
(tests/integration/test_archive_hardening.py runs that one against a real ZooKeeper).
"""

from __future__ import annotations

import os

import pytest

from configctl.audit.options import AuditInputError, check_local_snapshots
from configctl.errors import InvalidInput
from configctl.files import check_directory

pytestmark = pytest.mark.unit


def test_a_named_pipe_given_as_the_snapshots_is_refused_in_one_line(tmp_path):
    fifo = tmp_path / "snapshots"
    os.mkfifo(fifo)
    with pytest.raises(AuditInputError, match=r"is not a directory or a file \(a named pipe \(FIFO\)\)$"):
        check_local_snapshots(str(fifo))
    with pytest.raises(AuditInputError, match="character device"):
        check_local_snapshots("/dev/null")


def test_a_directory_or_a_snapshot_file_is_still_what_the_audit_reads(tmp_path):
    check_local_snapshots(str(tmp_path))
    (tmp_path / "broker-1.jsonl").write_text("")
    check_local_snapshots(str(tmp_path / "broker-1.jsonl"))
    check_local_snapshots(f"file://{tmp_path}")
    check_local_snapshots("hdfs://namenode/fleet")  # Spark's to check


def test_where_a_directory_is_read_anything_else_is_one_line(tmp_path):
    assert check_directory(tmp_path, "history archive")
    assert not check_directory(tmp_path / "missing", "history archive")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInput, match=r"^history archive: not a directory \(a named pipe \(FIFO\)\)$"):
        check_directory(fifo, "history archive")
    (tmp_path / "file").write_text("")
    with pytest.raises(InvalidInput, match=r"not a directory \(a file\)$"):
        check_directory(tmp_path / "file", "history archive")
