"""``missed_changes``: brokers whose effective value differs from the expected state.

Only with an expected state (ZooKeeper or a desired-state file); without one the finding is
``null``. The matching rules are :mod:`configctl.audit.expected`'s: ``brokers/<id>`` beats
``brokers/<default>``, no expectation means "not set dynamically" when the state is complete,
a sensitive broker key without an expectation is not judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from configctl.audit.drift.base import DriftClass, Frames, Heat
from configctl.audit.drift.groups import VALUE_GROUPS, value_groups
from configctl.audit.expected import ExpectedState, snapshot_form
from configctl.audit.schema import BROKER_DEFAULT_PATH, sensitive_name_regex
from configctl.sources import DYNAMIC_BROKER_SOURCES

_BROKER_PATH = re.compile(r"^brokers/([0-9]+)$")
COLUMNS = ("broker_id", "entity_path", "name", "expected_value", "actual_value")

_EXPECTED_SCHEMA = StructType(
    [
        StructField("broker_id", IntegerType(), True),
        StructField("kind", StringType(), False),
        StructField("cpath", StringType(), False),
        StructField("name", StringType(), False),
        StructField("value", StringType(), True),
    ]
)


def _expected_rows(expected: ExpectedState) -> list[tuple[int | None, str, str, str, str | None]]:
    """Normalize expectations: broker keys match by name on the broker's own lines."""
    rows = []
    for e in expected.expected:
        broker_id = e.broker_id
        if e.entity_path.startswith("brokers/"):
            match = _BROKER_PATH.match(e.entity_path)
            if broker_id is None and match:
                broker_id = int(match.group(1))
            rows.append((broker_id, "broker", "", e.name, snapshot_form(e.name, e.value)))
        else:
            rows.append((broker_id, "entity", e.entity_path, e.name, snapshot_form(e.name, e.value)))
    return rows


def compute(frames: Frames) -> DataFrame:
    """Entity keys are read off the per-key value groups (one row per key, not per broker and
    key, so a fleet-wide expectation never has to be multiplied by the number of brokers);
    expectations for one broker and the broker keys (a few hundred per broker) are joined.
    """
    state = frames.expected
    assert state is not None
    entity_groups = frames.shared(VALUE_GROUPS, value_groups).filter(F.col("path") != BROKER_DEFAULT_PATH)
    rows = _expected_rows(state)
    expected = frames.spark.createDataFrame(rows, _EXPECTED_SCHEMA)
    brokers = frames.brokers.select("broker_id")
    results = [
        _missed_entities(frames, entity_groups, expected.filter(F.col("kind") == "entity"), state.complete)
    ]

    specific_entities = expected.filter((F.col("kind") == "entity") & F.col("broker_id").isNotNull())
    if any(r[0] is not None and r[1] == "entity" for r in rows):
        specific = specific_entities.join(brokers, "broker_id", "left_semi").select(
            "broker_id", F.col("cpath").alias("entity_path"), "name", F.col("value").alias("expected_value")
        )
        keys = ["broker_id", "entity_path", "name"]
        wanted = specific.select(F.col("entity_path").alias("path"), "name").distinct()
        actual = (
            entity_groups.join(wanted, ["path", "name"], "left_semi")
            .select(F.col("path").alias("entity_path"), "name", F.explode("values").alias("v"))
            .select(
                F.explode("v.brokers").alias("broker_id"),
                "entity_path",
                "name",
                F.col("v.value").alias("actual_value"),
            )
        )
        checked = specific.join(actual, keys, "left").filter(  # absent brokers sit in the null group
            ~F.col("actual_value").eqNullSafe(F.col("expected_value"))
        )
        results[0] = results[0].join(specific.select(*keys), keys, "left_anti")
        results.append(checked.select(*COLUMNS))

    results.append(_missed_broker_keys(frames, expected.filter(F.col("kind") == "broker"), state.complete))
    return reduce(DataFrame.unionByName, [r.select(*COLUMNS) for r in results])


def _missed_entities(frames: Frames, groups: DataFrame, expected: DataFrame, complete: bool) -> DataFrame:
    """Fleet-wide entity expectations against the value groups: every non-matching group's brokers."""
    general = (
        expected.filter(F.col("broker_id").isNull())
        .groupBy(F.col("cpath").alias("path"), "name")
        .agg(F.min(F.struct("value")).alias("e"))
        .select("path", "name", F.col("e.value").alias("exp_value"), F.lit(True).alias("has_exp"))
    )
    nobody = F.array(
        F.struct(
            F.lit(0).alias("neg_count"),
            F.lit(True).alias("is_null"),
            F.lit(None).cast("string").alias("value"),
            F.col("all_brokers").alias("brokers"),
        )
    )
    joined = groups.join(general, ["path", "name"], "full_outer").crossJoin(F.broadcast(frames.all_brokers))
    if not complete:
        joined = joined.filter(F.col("has_exp"))
    values = F.coalesce(F.col("values"), nobody)
    wrong = F.filter(values, lambda v: ~v["value"].eqNullSafe(F.col("exp_value")))
    return joined.select("path", "name", "exp_value", F.explode(wrong).alias("v")).select(
        F.explode("v.brokers").alias("broker_id"),
        F.col("path").alias("entity_path"),
        "name",
        F.col("exp_value").alias("expected_value"),
        F.col("v.value").alias("actual_value"),
    )


def _missed_broker_keys(frames: Frames, expected: DataFrame, complete: bool) -> DataFrame:
    """Broker keys: brokers/<id> beats brokers/<default>; no expectation means "not set dynamically"."""
    keys = ["broker_id", "name"]
    brokers = frames.brokers.select("broker_id")
    general = expected.filter(F.col("broker_id").isNull()).drop("broker_id").crossJoin(brokers)
    specific = expected.filter(F.col("broker_id").isNotNull()).join(brokers, "broker_id", "left_semi")
    # The most specific expectation wins; among equals the smallest value (deterministic).
    chosen = (
        specific.withColumn("prio", F.lit(0))
        .unionByName(general.withColumn("prio", F.lit(1)))
        .groupBy(*keys)
        .agg(F.min(F.struct("prio", "value")).alias("e"))
        .select(*keys, F.lit(True).alias("has_exp"), F.col("e.value").alias("exp_value"))
    )
    actual = frames.own.select(
        F.explode("brokers").alias("broker_id"),
        "name",
        F.lit(True).alias("has_act"),
        F.col("value").alias("act_value"),
        "source",
    )
    joined = chosen.join(actual, keys, "full_outer")
    has_exp = F.coalesce(F.col("has_exp"), F.lit(False))
    has_act = F.coalesce(F.col("has_act"), F.lit(False))
    dynamic = F.col("source").isin(*DYNAMIC_BROKER_SOURCES)
    sensitive = F.col("name").rlike(sensitive_name_regex())
    # Expected null ("not set dynamically"), or no expectation when the desired state is complete.
    # A sensitive key without any expectation is not judged: its desired value may be unreadable.
    unset_expected = F.col("exp_value").isNull() & (has_exp | F.lit(complete))
    set_anyway = has_act & dynamic & (has_exp | ~sensitive)
    mismatch = F.when(
        F.col("exp_value").isNotNull(), ~F.col("act_value").eqNullSafe(F.col("exp_value"))
    ).otherwise(unset_expected & set_anyway)
    return (
        joined.filter(mismatch)
        .select(
            "broker_id",
            F.concat(F.lit("brokers/"), F.col("broker_id").cast("string")).alias("entity_path"),
            "name",
            F.col("exp_value").alias("expected_value"),
            F.col("act_value").alias("actual_value"),
        )
        .distinct()
    )


def to_json(row: Row, frames: Frames) -> dict[str, Any]:
    return {name: row[name] for name in COLUMNS}


def _label() -> Column:
    return F.when(F.col("entity_path").startswith("brokers/"), F.col("name")).otherwise(
        F.concat_ws(" ", F.col("entity_path"), F.col("name"))
    )


def _cells(df: DataFrame) -> DataFrame:
    return df.select("broker_id", _label().alias("key"))


def _cells_from_json(items: Iterable[dict[str, Any]]) -> Iterator[tuple[int, str]]:
    for item in items:
        path, name = item["entity_path"], item["name"]
        yield item["broker_id"], name if path.startswith("brokers/") else f"{path} {name}"


DRIFT = DriftClass(
    "missed_changes",
    compute,
    # a broker reporting one key twice gives two rows: the values make the order total
    COLUMNS,
    to_json,
    needs_expected=True,
    shares=(VALUE_GROUPS,),
    heat=Heat("missed", 4, _cells, _cells_from_json),
)
