"""Snapshot files are replaced atomically; the state node stays within ZooKeeper's size limit."""

from __future__ import annotations

import json
import os

import pytest

from configctl.errors import InvalidInput
from configctl.listener.state import SnapshotWriter
from configctl.znodes import BrokerStateZNode

pytestmark = pytest.mark.unit


def test_snapshot_is_replaced_whole(tmp_path):
    writer = SnapshotWriter(tmp_path / "state", 3)
    writer.write(['{"a":1}\n', '{"a":2}\n'])
    assert writer.path == tmp_path / "state" / "broker-3.jsonl"
    assert writer.path.read_text() == '{"a":1}\n{"a":2}\n'
    writer.write(['{"b":1}\n'])
    assert writer.path.read_text() == '{"b":1}\n'
    assert os.listdir(tmp_path / "state") == ["broker-3.jsonl"]  # no temporary left behind


def test_a_failed_write_leaves_the_previous_snapshot_intact(tmp_path):
    writer = SnapshotWriter(tmp_path, 1)
    writer.write(['{"ok":true}\n'])

    def lines():
        yield '{"partial":true}\n'
        raise RuntimeError("crash while rendering")

    with pytest.raises(RuntimeError):
        writer.write(lines())
    assert writer.path.read_text() == '{"ok":true}\n'
    assert os.listdir(tmp_path) == ["broker-1.jsonl"]


def test_unwritable_state_dir_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InvalidInput, match="--state-dir"):
        SnapshotWriter(blocker / "sub", 1)


def test_state_is_trimmed_below_the_node_size_limit():
    problems = [
        {"kind": "poison", "entity_path": None, "notification": f"n{i}", "reason": "x" * 200}
        for i in range(20_000)
    ]
    data = BrokerStateZNode.encode({"broker_id": 1, "last_applied_change": 5, "problems": problems})
    assert len(data) <= BrokerStateZNode.MAX_BYTES
    document = json.loads(data)
    assert document["last_applied_change"] == 5
    assert document["problems"][-1]["notification"] == "n19999"  # the newest are kept
