"""``configctl audit recorders``: a KRaft fleet audited from what its flight recorders keep in the cluster.

On KRaft no listener writes snapshot files: each broker's flight recorder
(:mod:`configctl.kraft.recorder`) publishes, in the cluster's recorder topic, how far it
recorded and what its broker runs (asked of the broker: a digest of the values it runs for the
cluster-wide ``<default>`` keys, and each key it holds but refused to apply), beside every
committed write and every gap. This job reads that topic straight from Kafka with Spark's own
Kafka source (``spark-sql-kafka``, pinned in ``kafka/spark-kafka/pom.xml``), keeps the newest
record of each key (the topic is compacted, but not every copy is compacted away yet), and
judges (:func:`judge`, pure):

- **divergent**: brokers whose ``<default>`` digest differs from the one most brokers run;
- **not applied**: keys a broker holds but refused to apply;
- **stale**: recorders that have not published for ``stale_after`` seconds (a stopped sidecar
  or broker; a running one publishes every 30 s), or whose broker did not answer them; how far
  each is behind the furthest is shown (recorders stop at different offsets as the quorum's own
  records go by, so that alone is not drift);
- **gaps**: metadata offsets deleted before any recorder read them (reported, not drift);
- how many writes the topic holds, and how many entities they touched.

Drift (``--fail-on-drift``: exit 2, as the snapshot audit) is any of the first three.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

DRIFT = ("divergent", "not_applied", "stale")
"""The findings that are drift; ``gaps`` are reported, not judged."""


def kafka_options(bootstrap: str, client: Mapping[str, str]) -> dict[str, str]:
    """Spark's Kafka source options: the bootstrap servers, and each client property of
    ``--command-config`` (security protocol, SASL, TLS) as ``kafka.<property>``."""
    options = {f"kafka.{key}": value for key, value in client.items()}
    options["kafka.bootstrap.servers"] = bootstrap
    return options


def read_topic(spark: SparkSession, topic: str, options: Mapping[str, str]) -> DataFrame:
    """The newest record of every key of ``topic`` (``key``, ``value`` as text, ``offset``), read
    as a batch from its first offset to its last."""
    raw = (
        spark.read.format("kafka")
        .options(**options)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .where(F.col("key").isNotNull())
        .select(
            F.col("key").cast("string").alias("key"),
            F.col("value").cast("string").alias("value"),
            F.col("offset"),
        )
    )
    newest = Window.partitionBy("key").orderBy(F.col("offset").desc())
    return raw.withColumn("n", F.row_number().over(newest)).where("n = 1").drop("n")


def collect(latest: DataFrame) -> dict[str, Any]:
    """What the job brings to the driver: every recorder's progress and every gap (one row per
    broker, per gap), and counts of the writes (computed in Spark)."""
    small = latest.where(F.col("key").startswith("recorder/") | F.col("key").startswith("gap/")).collect()
    changes = latest.where(F.col("key").startswith("change/") & F.col("value").isNotNull())
    entity = F.get_json_object(F.col("value"), "$.entity_path")
    counted = changes.agg(
        F.count(F.lit(1)).alias("writes"), F.countDistinct(entity).alias("entities")
    ).first()
    recorders, gaps = [], []
    for row in small:
        if row["value"] is None:
            continue
        try:
            document = json.loads(row["value"])
        except ValueError:
            continue
        if not isinstance(document, dict):
            continue
        if document.get("kind") == "recorder" and isinstance(document.get("broker_id"), int):
            recorders.append(document)
        elif document.get("kind") == "gap":
            gaps.append(document)
    return {
        "recorders": recorders,
        "gaps": gaps,
        "writes": int(counted["writes"]) if counted is not None else 0,
        "entities": int(counted["entities"]) if counted is not None else 0,
    }


def judge(found: Mapping[str, Any], now_ms: int, stale_after_s: float) -> dict[str, Any]:
    """The audit document of what :func:`collect` brought (pure)."""
    recorders: Sequence[dict[str, Any]] = sorted(found["recorders"], key=lambda r: r["broker_id"])
    furthest = max((r.get("recorded_to") or 0 for r in recorders), default=0)
    digests = Counter(
        (r.get("observed") or {}).get("default_digest")
        for r in recorders
        if (r.get("observed") or {}).get("default_digest")
    )
    majority = digests.most_common(1)[0][0] if digests else None
    brokers, divergent, refused, stale = [], [], [], []
    for r in recorders:
        observed = r.get("observed") or {}
        age_s = (now_ms - r["time_ms"]) / 1000 if isinstance(r.get("time_ms"), int) else None
        behind = furthest - r["recorded_to"] if isinstance(r.get("recorded_to"), int) else None
        row = {
            "broker_id": r["broker_id"],
            "recorded_to": r.get("recorded_to"),
            "behind": behind,
            "seconds_since": age_s,
            "answers": observed.get("answers"),
            "default_digest": observed.get("default_digest"),
            "not_applied": observed.get("not_applied") or [],
            "problems": r.get("problems") or [],
        }
        brokers.append(row)
        digest = observed.get("default_digest")
        if digest and majority and digest != majority:
            divergent.append({"broker_id": r["broker_id"], "default_digest": digest, "most_run": majority})
        for item in row["not_applied"]:
            refused.append({"broker_id": r["broker_id"], **item})
        if age_s is None or age_s > stale_after_s or observed.get("answers") is False:
            why = (
                f"its broker did not answer: {observed.get('reason')}"
                if observed.get("answers") is False
                else f"last published {age_s:.0f}s ago ({behind} offsets behind the furthest recorder)"
                if age_s is not None
                else "no time published"
            )
            stale.append({"broker_id": r["broker_id"], "reason": why})
    gaps = sorted(
        (
            {"start": g.get("start"), "end": g.get("end"), "entities": g.get("entities")}
            for g in found["gaps"]
        ),
        key=lambda g: g["start"] or 0,
    )
    counts = {
        "divergent": len(divergent),
        "not_applied": len(refused),
        "stale": len(stale),
        "gaps": len(gaps),
    }
    return {
        "source": "kafka",
        "recorders": len(recorders),
        "writes_recorded": found["writes"],
        "entities_written": found["entities"],
        "recorded_to": furthest,
        "brokers": brokers,
        "divergent": divergent,
        "not_applied": refused,
        "stale": stale,
        "gaps": gaps,
        "counts": counts,
        "drift": any(counts[name] for name in DRIFT),
    }


def audit_recorders(
    spark: SparkSession, topic: str, options: Mapping[str, str], now_ms: int, stale_after_s: float
) -> dict[str, Any]:
    """Read ``topic`` with Spark's Kafka source and judge what the recorders published."""
    return judge(collect(read_topic(spark, topic, options)), now_ms, stale_after_s)


__all__ = ["DRIFT", "audit_recorders", "collect", "judge", "kafka_options", "read_topic"]
