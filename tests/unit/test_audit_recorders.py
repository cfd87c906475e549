"""``audit recorders``' judgement of what the flight recorders published (pure; Spark's Kafka
source reading a real cluster's topic: tests/kraft/test_refused_apply.py)."""

from __future__ import annotations

from configctl.audit.recorders import judge, kafka_options

NOW = 1_000_000


def recorder(broker: int, digest: str | None, *, to: int = 100, age_s: float = 5, refused=(), answers=True):
    observed = {"answers": answers, "reason": None if answers else "no answer", "default_digest": digest,
                "not_applied": list(refused)}  # fmt: skip
    return {"kind": "recorder", "broker_id": broker, "recorded_to": to, "time_ms": NOW - int(age_s * 1000),
            "problems": [], "observed": observed}  # fmt: skip


def test_the_broker_running_other_defaults_than_most_is_divergent():
    found = {"recorders": [recorder(1, "a"), recorder(2, "b"), recorder(3, "a", to=90)], "gaps": [], "writes": 4,
             "entities": 2}  # fmt: skip
    doc = judge(found, NOW, 120)
    assert doc["divergent"] == [{"broker_id": 2, "default_digest": "b", "most_run": "a"}]
    assert [b["behind"] for b in doc["brokers"]] == [0, 0, 10]  # shown, not drift
    assert doc["stale"] == [] and doc["drift"] is True and doc["counts"]["divergent"] == 1


def test_refusals_silence_and_gaps():
    item = {"key": "log.cleaner.threads", "held": "2", "layer": "DYNAMIC_DEFAULT_BROKER_CONFIG", "running": "1",
            "source": "DEFAULT_CONFIG"}  # fmt: skip
    found = {
        "recorders": [
            recorder(1, "a", refused=[item]),
            recorder(2, "a", age_s=600),
            recorder(3, None, answers=False),
        ],
        "gaps": [{"kind": "gap", "start": 0, "end": 30, "entities": None}],
        "writes": 0,
        "entities": 0,
    }
    doc = judge(found, NOW, 120)
    assert doc["not_applied"] == [{"broker_id": 1, **item}]
    assert [s["broker_id"] for s in doc["stale"]] == [2, 3]
    assert "600s ago" in doc["stale"][0]["reason"] and "did not answer" in doc["stale"][1]["reason"]
    assert doc["gaps"] == [{"start": 0, "end": 30, "entities": None}] and doc["counts"]["gaps"] == 1
    assert doc["divergent"] == []


def test_a_quiet_fleet_is_no_drift_and_client_properties_reach_the_kafka_source():
    doc = judge(
        {"recorders": [recorder(1, "a"), recorder(2, "a")], "gaps": [], "writes": 0, "entities": 0}, NOW, 120
    )
    assert doc["drift"] is False
    options = kafka_options("k:9092", {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"})
    assert options == {
        "kafka.bootstrap.servers": "k:9092",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
    }
