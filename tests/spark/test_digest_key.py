"""The fleet digest key: keyed listeners' snapshots audit clean only with the same key.

Listeners given a digest key write secrets as HMAC-SHA256 under it (``configctl.digests``). The
audit must digest the desired state's secrets, and any secret a snapshot carries in clear,
under that same key: then equal secrets compare equal; without the key the desired state's
plain SHA-256 digests cannot match and the secret honestly shows up as a missed change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configctl.audit import job
from configctl.audit.expected import expected_from_configs
from configctl.audit.options import AuditOptions
from configctl.audit.run import audit
from configctl.digests import DIGEST_KEY_ENV, digest
from configctl.entities import Entity
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.records import EntityRead
from configctl.secrets import scram_credential
from configctl.znodes import encode_entity_config

pytestmark = pytest.mark.spark

KEY = b"fleet-digest-key-0123456789"
SCRAM = scram_credential("SCRAM-SHA-256", "alice-secret", 4096, salt=b"0123456789abcdef")
CONFIGS = {
    "topics/orders": {"retention.ms": "3600000"},
    "users/User%3Aalice": {"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1048576"},
}


def _keyed_fleet(directory: Path) -> None:
    """Three listeners with the fleet key, every change applied: a fleet without drift."""
    for broker in (1, 2, 3):
        manager = DynamicConfigManager(broker, {"broker.id": str(broker)}, digest_key=KEY)
        for number, (path, config) in enumerate(CONFIGS.items(), start=101):
            manager.apply([EntityRead(Entity.from_path(path), encode_entity_config(config), number)], number)
        text = "".join(manager.snapshot_lines(captured_at_ms=1_763_780_000_000))
        (directory / f"broker-{broker}.jsonl").write_text(text, encoding="utf-8")


def test_keyed_snapshots_audit_clean_with_the_key_and_not_without(spark, tmp_path: Path) -> None:
    _keyed_fleet(tmp_path)
    written = "".join(p.read_text() for p in tmp_path.iterdir())
    assert digest(SCRAM, KEY) in written and digest(SCRAM) not in written

    keyed = audit(
        spark,
        str(tmp_path),
        expected_from_configs(102, CONFIGS, digest_key=KEY),
        AuditOptions(digest_key=KEY),
    )
    assert keyed["missed_changes"] == [] and keyed["divergent"] == [] and keyed["stale_brokers"] == []

    # Without the key the desired state holds plain SHA-256 digests: every broker is reported
    # as running another SCRAM credential than ZooKeeper's (the brokers still agree with each other).
    plain = audit(spark, str(tmp_path), expected_from_configs(102, CONFIGS))
    assert plain["divergent"] == []
    assert plain["missed_changes"] == [
        {
            "broker_id": broker,
            "entity_path": "users/User%3Aalice",
            "name": "SCRAM-SHA-256",
            "expected_value": digest(SCRAM),
            "actual_value": digest(SCRAM, KEY),
        }
        for broker in (1, 2, 3)
    ]


def _line(broker: int, name: str, value: str | None) -> str:
    return json.dumps(
        {
            "broker_id": broker,
            "change_number": 7,
            "entity_path": f"brokers/{broker}",
            "name": name,
            "value": value,
            "source": "STATIC_BROKER_CONFIG",
            "captured_at_ms": 1,
        }
    )


def test_a_secret_in_clear_is_digested_under_the_key(spark, tmp_path: Path) -> None:
    # Brokers 1 and 2 hold the same truststore password (1 in clear, 2 as a keyed listener
    # writes it); broker 3 holds another one, in clear. A malformed line carries it in clear too.
    lines = {
        1: [_line(1, "ssl.truststore.password", "hunter2-truststore")],
        2: [_line(2, "ssl.truststore.password", digest("hunter2-truststore", KEY))],
        3: [
            _line(3, "ssl.truststore.password", "other-truststore"),
            json.dumps(
                {"broker_id": 3, "entity_path": "brokers/3", "name": "sasl.jaas.config", "value": "x y"}
            ),
        ],
    }
    for broker, text in lines.items():
        (tmp_path / f"broker-{broker}.jsonl").write_text("\n".join(text) + "\n", encoding="utf-8")

    doc = audit(spark, str(tmp_path), options=AuditOptions(digest_key=KEY))
    assert [
        (s["name"], s["majority_value"], [(v["value"], v["brokers"]) for v in s["values"]])
        for s in doc["static_skew"]
    ] == [
        (
            "ssl.truststore.password",
            digest("hunter2-truststore", KEY),
            [(digest("hunter2-truststore", KEY), [1, 2]), (digest("other-truststore", KEY), [3])],
        )
    ]
    text = json.dumps(doc)
    assert "hunter2" not in text and "other-truststore" not in text and KEY.decode() not in text
    assert digest("hunter2-truststore") not in text  # no guessable plain digest either
    assert doc["malformed"]["missing_fields"] == 1 and "x y" not in text

    # Without the key the clear password gets the plain digest: it no longer equals broker 2's.
    doc = audit(spark, str(tmp_path))
    assert sorted((v["value"], v["brokers"]) for v in doc["static_skew"][0]["values"]) == sorted(
        [
            (digest("hunter2-truststore", KEY), [2]),
            (digest("hunter2-truststore"), [1]),
            (digest("other-truststore"), [3]),
        ]
    )


def test_the_job_reads_the_key_from_a_file_never_argv(spark, tmp_path: Path, capsys, monkeypatch) -> None:
    _keyed_fleet(tmp_path)
    desired = tmp_path / "desired.json"
    desired.write_text(json.dumps(expected_from_configs(102, CONFIGS, digest_key=KEY).to_json()))
    key_file = tmp_path / "digest.key"
    key_file.write_bytes(KEY + b"\n")
    monkeypatch.delenv(DIGEST_KEY_ENV, raising=False)
    args = ["--snapshots", str(tmp_path), "--desired-state", str(desired), "--fail-on-drift"]

    assert job.main([*args, "--digest-key-file", str(key_file)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["missed_changes"] == [] and KEY.decode() not in out + err

    monkeypatch.setenv(DIGEST_KEY_ENV, str(key_file))  # the listeners' variable works as well
    assert job.main(args) == 0
    capsys.readouterr()

    key_file.write_bytes(b"short")
    assert job.main([*args, "--digest-key-file", str(key_file)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        f"error: digest key file {key_file}: the key must be at least 16 bytes"
    ]


def test_the_cli_takes_the_key_file_as_the_listeners_do(spark, tmp_path: Path, capsys, monkeypatch) -> None:
    from configctl.cli.main import main

    monkeypatch.delenv("CONFIGCTL_ZOOKEEPER", raising=False)
    _keyed_fleet(tmp_path)
    desired = tmp_path / "desired.json"
    # A hand-written desired state may hold secrets in clear: the audit digests them (under the key).
    clear = [
        {"broker_id": None, "entity_path": path, "name": name, "value": value}
        for path, config in CONFIGS.items()
        for name, value in config.items()
    ]
    desired.write_text(json.dumps({"latest_change_number": 102, "complete": True, "expected": clear}))
    (tmp_path / "digest.key").write_bytes(KEY)
    args = ["audit", "--snapshots", str(tmp_path), "--desired-state", str(desired), "--output", "json"]

    def run(*extra: str) -> dict:
        with pytest.raises(SystemExit) as exited:
            main([*args, *extra])
        out, err = capsys.readouterr()
        assert exited.value.code == 0, err
        assert KEY.decode() not in out + err
        return json.loads(out)

    monkeypatch.delenv(DIGEST_KEY_ENV, raising=False)
    assert [m["name"] for m in run()["missed_changes"]] == ["SCRAM-SHA-256"] * 3
    assert run("--digest-key-file", str(tmp_path / "digest.key"))["missed_changes"] == []
    monkeypatch.setenv(DIGEST_KEY_ENV, str(tmp_path / "digest.key"))
    assert run()["missed_changes"] == []
