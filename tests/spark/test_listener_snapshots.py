"""Snapshots written by the real listener (docs/reference/snapshots.md, as configctl produces it) audit as expected.

Three brokers run configctl's own ``DynamicConfigManager`` in-process (no ZooKeeper needed): the
same changes reach them, except that broker 1 stops before the last one, broker 2 gets a
per-broker override, and broker 3's server.properties differs. Their ``snapshot_lines()`` are
the files the audit reads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from configctl.audit.expected import expected_from_configs
from configctl.audit.run import audit
from configctl.entities import Entity
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.records import EntityRead
from configctl.secrets import digest
from configctl.znodes import encode_entity_config

pytestmark = pytest.mark.spark

STATIC = {"num.io.threads": "16", "log.retention.hours": "72", "ssl.truststore.password": "trust-me"}

# (change number, entity path, config after the change)
CHANGES = [
    (101, "topics/orders", {"retention.ms": "86400000", "cleanup.policy": "delete"}),
    (102, "brokers/<default>", {"message.max.bytes": "2097152"}),
    (103, "users/User%3Aalice", {"producer_byte_rate": "1048576"}),
    (104, "brokers/2", {"num.replica.fetchers": "4"}),
    (105, "topics/orders", {"retention.ms": "3600000", "cleanup.policy": "delete"}),
]


def _snapshot(broker: int, static: dict[str, str], last: int, directory: Path) -> None:
    manager = DynamicConfigManager(broker, {"broker.id": str(broker), **static})
    for number, path, config in CHANGES:
        if number <= last:
            manager.apply([EntityRead(Entity.from_path(path), encode_entity_config(config), number)], number)
    text = "".join(manager.snapshot_lines(captured_at_ms=1_763_780_000_000))
    (directory / f"broker-{broker}.jsonl").write_text(text, encoding="utf-8")


def test_listener_snapshots_audit_as_expected(spark, tmp_path: Path) -> None:
    _snapshot(1, STATIC, 104, tmp_path)
    _snapshot(2, STATIC, 105, tmp_path)
    _snapshot(3, {**STATIC, "num.io.threads": "32"}, 105, tmp_path)
    written = "".join(p.read_text() for p in tmp_path.iterdir())
    assert "trust-me" not in written and digest("trust-me") in written  # secrets arrive as digests

    doc = audit(spark, str(tmp_path))
    assert doc["brokers"] == 3 and doc["malformed"]["unparseable"] == doc["malformed"]["missing_fields"] == 0
    assert doc["stale_brokers"] == [{"broker_id": 1, "change_number": 104, "behind": 1}]
    assert [(d["entity_path"], d["name"], d["majority_value"]) for d in doc["divergent"]] == [
        ("topics/orders", "retention.ms", "3600000")
    ]
    assert doc["divergent"][0]["values"][1] == {"value": "86400000", "count": 1, "brokers": [1]}
    assert doc["per_broker_overrides"] == [{"broker_id": 2, "name": "num.replica.fetchers", "value": "4"}]
    assert [(s["name"], s["majority_value"]) for s in doc["static_skew"]] == [("num.io.threads", "16")]

    final = {path: config for _, path, config in CHANGES}
    doc = audit(spark, str(tmp_path), expected_from_configs(105, final))
    assert doc["missed_changes"] == [
        {
            "broker_id": 1,
            "entity_path": "topics/orders",
            "name": "retention.ms",
            "expected_value": "3600000",
            "actual_value": "86400000",
        }
    ]
