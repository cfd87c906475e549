"""One broker, empty input, malformed lines, secrets, missed changes: the cases the simulator does not aim at."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from audit_helpers import expected, findings, ground_truth, line, write_lines

from configctl.audit.expected import ExpectedState, ExpectedValue
from configctl.audit.options import AuditInputError
from configctl.audit.run import audit

pytestmark = pytest.mark.spark

STATIC, BUILTIN, DEFAULT, PER_BROKER, TOPIC = (
    "STATIC_BROKER_CONFIG",
    "DEFAULT_CONFIG",
    "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "DYNAMIC_BROKER_CONFIG",
    "DYNAMIC_TOPIC_CONFIG",
)


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_one_broker(fleet, audited) -> None:
    directory = fleet(brokers=1, topics=6, drift_rate=0.5, seed=5, malformed=1)
    truth = ground_truth(directory)
    doc = audited(directory)
    assert findings(doc) == expected(truth["snapshots_only"])
    assert doc["brokers"] == 1
    assert doc["stale_brokers"] == [] and doc["divergent"] == [] and doc["static_skew"] == []
    assert doc["per_broker_overrides"]  # the one drift a single broker can have
    assert findings(audited(directory, desired=True)) == expected(truth["with_desired_state"])


@pytest.mark.parametrize("layout", ["empty directory", "no snapshot files", "empty file"])
def test_empty_input(spark, tmp_path: Path, layout: str) -> None:
    target = tmp_path
    if layout == "no snapshot files":
        (tmp_path / "ground_truth.json").write_text("{}\n")
        (tmp_path / "notes.txt").write_text("not a snapshot\n")
    elif layout == "empty file":
        target = tmp_path / "broker-1.jsonl"
        target.write_text("")
    doc = audit(spark, str(target))
    assert doc["brokers"] == 0 and doc["rows"] == 0
    assert doc["latest_change_number"] is None
    for name in ("stale_brokers", "divergent", "per_broker_overrides", "static_skew"):
        assert doc[name] == [] and doc["counts"][name] == 0
    assert doc["heatmap"] == {"keys": [], "brokers": [], "cells": []}
    desired = ExpectedState(7, (ExpectedValue(None, "topics/orders", "retention.ms", "1000"),))
    doc = audit(spark, str(target), desired)
    assert doc["latest_change_number"] == 7 and doc["missed_changes"] == []


def test_missing_path_is_one_clear_error(spark, tmp_path: Path) -> None:
    with pytest.raises(AuditInputError, match="does not exist"):
        audit(spark, str(tmp_path / "nowhere"))
    with pytest.raises(AuditInputError) as raised:
        audit(spark, "nosuchscheme://bucket/snapshots")
    assert "\n" not in str(raised.value) and "nosuchscheme" in str(raised.value)


def test_malformed_lines_are_counted_and_never_fatal(spark, tmp_path: Path) -> None:
    good = [
        line(1, "brokers/1", "num.io.threads", "8", STATIC),
        line(1, "topics/orders", "retention.ms", "1000", TOPIC),
        line(2, "brokers/2", "num.io.threads", "8", STATIC),
        line(2, "topics/orders", "retention.ms", "2000", TOPIC),
    ]
    missing = dict(line(2, "topics/orders", "cleanup.policy", "compact", TOPIC))
    del missing["change_number"]
    empty_path = line(2, "", "cleanup.policy", "compact", TOPIC)
    write_lines(tmp_path / "broker-1.jsonl", [good[0], "this is not json", good[1], ""])
    write_lines(
        tmp_path / "broker-2.jsonl",
        [
            good[2],
            '{"broker_id":2,"change_number":10,"entity_path":"topics/orders","name":"retenti',
            '{"broker_id":"two","change_number":10,"entity_path":"topics/x","name":"a","value":"b",'
            '"source":"DYNAMIC_TOPIC_CONFIG","captured_at_ms":1}',
            json.dumps(missing),
            json.dumps(empty_path),
            '{"broker_id":2,"name":"ssl.keystore.password","value":"hunter2"',
            good[3],
        ],
    )
    doc = audit(spark, str(tmp_path))
    assert doc["malformed"]["unparseable"] == 4
    assert doc["malformed"]["missing_fields"] == 2
    assert doc["rows"] == 4 + 6  # blank lines are not rows
    assert doc["brokers"] == 2
    assert [d["name"] for d in doc["divergent"]] == ["retention.ms"]  # the good lines still count
    examples = doc["malformed"]["examples"]
    assert {e["file"] for e in examples} == {"broker-1.jsonl", "broker-2.jsonl"}
    assert {e["kind"] for e in examples} == {"unparseable", "missing_fields"}
    assert any(e["line"] == "this is not json" for e in examples)
    assert "hunter2" not in json.dumps(doc)  # a broken line naming a secret is not echoed


def test_secrets_compare_and_show_by_digest_only(spark, tmp_path: Path) -> None:
    rows = {
        1: [
            line(1, "brokers/1", "ssl.truststore.password", "hunter2", STATIC),
            line(1, "brokers/1", "listener.name.internal.ssl.truststore.password", sha("tls-a"), STATIC),
            line(
                1,
                "users/User%3Aalice",
                "SCRAM-SHA-256",
                "salt=a,stored_key=b,server_key=c,iterations=4096",
                "users/User%3Aalice",
            ),
        ],
        2: [
            line(2, "brokers/2", "ssl.truststore.password", sha("hunter2"), STATIC),
            line(2, "brokers/2", "listener.name.internal.ssl.truststore.password", "tls-b", STATIC),
            line(
                2,
                "users/User%3Aalice",
                "SCRAM-SHA-256",
                sha("salt=a,stored_key=b,server_key=c,iterations=4096"),
                "users/User%3Aalice",
            ),
        ],
        3: [
            line(3, "brokers/3", "ssl.truststore.password", "hunter3", STATIC),
            line(3, "brokers/3", "listener.name.internal.ssl.truststore.password", "tls-a", STATIC),
            line(
                3,
                "users/User%3Aalice",
                "SCRAM-SHA-256",
                "salt=x,stored_key=y,server_key=z,iterations=8192",
                "users/User%3Aalice",
            ),
        ],
    }
    for broker, lines in rows.items():
        write_lines(tmp_path / f"broker-{broker}.jsonl", lines)
    doc = audit(spark, str(tmp_path))
    text = json.dumps(doc)
    for secret in ("hunter2", "hunter3", "tls-a", "tls-b", "stored_key"):
        assert secret not in text
    skew = {s["name"]: s for s in doc["static_skew"]}
    # A plain value and the digest of the same value are the same value.
    assert skew["ssl.truststore.password"]["values"] == [
        {"value": sha("hunter2"), "count": 2, "brokers": [1, 2]},
        {"value": sha("hunter3"), "count": 1, "brokers": [3]},
    ]
    assert skew["listener.name.internal.ssl.truststore.password"]["majority_value"] == sha("tls-a")
    (scram,) = doc["divergent"]
    assert scram["entity_path"] == "users/User%3Aalice"
    assert scram["majority_value"] == sha("salt=a,stored_key=b,server_key=c,iterations=4096")


def test_divergence_rules_for_broker_keys(spark, tmp_path: Path) -> None:
    """Per-broker overrides leave the comparison; absent lines count as null; identity keys never count."""
    fleet_rows = {
        1: [
            ("message.max.bytes", "2097152", DEFAULT),
            ("num.io.threads", "8", STATIC),
            ("broker.id", "1", STATIC),
        ],
        2: [
            ("message.max.bytes", "4194304", PER_BROKER),
            ("num.io.threads", "8", STATIC),
            ("broker.id", "2", STATIC),
        ],
        3: [
            ("message.max.bytes", "1048588", STATIC),
            ("num.io.threads", "16", STATIC),
            ("broker.id", "3", STATIC),
        ],
        4: [
            ("message.max.bytes", "2097152", DEFAULT),
            ("num.io.threads", "8", BUILTIN),
            ("broker.id", "4", STATIC),
        ],
        5: [("num.io.threads", "16", STATIC), ("broker.id", "5", STATIC)],
    }
    for broker, keys in fleet_rows.items():
        write_lines(
            tmp_path / f"broker-{broker}.jsonl",
            [line(broker, f"brokers/{broker}", n, v, s) for n, v, s in keys],
        )
    doc = audit(spark, str(tmp_path))
    (divergent,) = doc["divergent"]
    assert divergent == {
        "entity_path": "brokers/<default>",
        "name": "message.max.bytes",
        "values": [
            {"value": "2097152", "count": 2, "brokers": [1, 4]},
            {"value": "1048588", "count": 1, "brokers": [3]},
            {"value": None, "count": 1, "brokers": [5]},
        ],
        "majority_value": "2097152",
    }
    (skew,) = doc["static_skew"]
    assert skew["name"] == "num.io.threads"
    assert skew["values"] == [
        {"value": "8", "count": 3, "brokers": [1, 2, 4]},
        {"value": "16", "count": 2, "brokers": [3, 5]},
    ]
    assert doc["per_broker_overrides"] == [{"broker_id": 2, "name": "message.max.bytes", "value": "4194304"}]


def test_majority_ties_go_to_a_present_value_then_the_smallest(spark, tmp_path: Path) -> None:
    rows = {
        1: [
            line(1, "topics/a", "retention.ms", "200", TOPIC),
            line(1, "topics/b", "retention.ms", "5", TOPIC),
        ],
        2: [line(2, "topics/a", "retention.ms", "100", TOPIC)],
    }
    for broker, lines in rows.items():
        write_lines(tmp_path / f"broker-{broker}.jsonl", lines)
    doc = audit(spark, str(tmp_path))
    by_path = {d["entity_path"]: d for d in doc["divergent"]}
    assert by_path["topics/a"]["majority_value"] == "100"
    assert [v["value"] for v in by_path["topics/a"]["values"]] == ["100", "200"]
    assert by_path["topics/b"]["majority_value"] == "5"
    assert by_path["topics/b"]["values"][1] == {"value": None, "count": 1, "brokers": [2]}


def test_missed_changes_follow_the_desired_state(spark, tmp_path: Path) -> None:
    rows = {
        1: [
            line(1, "brokers/1", "message.max.bytes", "2097152", DEFAULT, cn=12),
            line(1, "brokers/1", "num.replica.fetchers", "4", PER_BROKER, cn=12),
            line(1, "brokers/1", "log.cleaner.threads", "2", DEFAULT, cn=12),
            line(1, "brokers/1", "ssl.keystore.password", sha("ks"), PER_BROKER, cn=12),
            line(1, "topics/orders", "retention.ms", "1000", TOPIC, cn=12),
            line(1, "topics/gone", "retention.ms", "5", TOPIC, cn=12),
        ],
        2: [
            line(2, "brokers/2", "message.max.bytes", "1048588", STATIC, cn=11),
            line(2, "brokers/2", "num.replica.fetchers", "1", BUILTIN, cn=11),
            line(2, "topics/orders", "retention.ms", "999", TOPIC, cn=11),
            line(2, "topics/pinned", "segment.bytes", "7", TOPIC, cn=11),
        ],
    }
    for broker, lines in rows.items():
        write_lines(tmp_path / f"broker-{broker}.jsonl", lines)
    desired = ExpectedState(
        13,
        (
            ExpectedValue(None, "brokers/<default>", "message.max.bytes", "2097152"),
            ExpectedValue(None, "brokers/1", "num.replica.fetchers", "4"),  # the path names the broker
            ExpectedValue(None, "topics/orders", "retention.ms", "1000"),
            ExpectedValue(None, "topics/new", "cleanup.policy", "compact"),
            ExpectedValue(2, "topics/pinned", "segment.bytes", "8"),  # for broker 2 only
        ),
    )
    doc = audit(spark, str(tmp_path), desired)
    assert doc["latest_change_number"] == 13
    assert [s["broker_id"] for s in doc["stale_brokers"]] == [1, 2]
    missed = {
        (m["broker_id"], m["entity_path"], m["name"]): (m["expected_value"], m["actual_value"])
        for m in doc["missed_changes"]
    }
    assert missed == {
        # brokers/<default> key no longer set in ZooKeeper but still applied as a default
        (1, "brokers/1", "log.cleaner.threads"): (None, "2"),
        (1, "topics/gone", "retention.ms"): (None, "5"),
        (1, "topics/new", "cleanup.policy"): ("compact", None),
        (2, "brokers/2", "message.max.bytes"): ("2097152", "1048588"),
        (2, "topics/orders", "retention.ms"): ("1000", "999"),
        (2, "topics/new", "cleanup.policy"): ("compact", None),
        (2, "topics/pinned", "segment.bytes"): ("8", "7"),
    }  # the sensitive per-broker key without an expectation is not judged
    partial = ExpectedState(13, desired.expected, complete=False)
    doc = audit(spark, str(tmp_path), partial)
    keys = {(m["broker_id"], m["entity_path"], m["name"]) for m in doc["missed_changes"]}
    assert (1, "topics/gone", "retention.ms") not in keys and (
        1,
        "brokers/1",
        "log.cleaner.threads",
    ) not in keys
    assert (2, "topics/orders", "retention.ms") in keys
