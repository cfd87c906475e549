"""Value groups: per key, which brokers hold which value, majority first.

``divergent`` and ``static_skew`` are both "brokers disagree on a key" over different
populations; ``missed_changes`` reads the same groups for entity keys. The grouping, the
majority rule and the JSON form of a group live here once.

Majority value: held by the most brokers; on a tie a present value beats ``null``, then the
smallest value in code-point order. ``values`` come out in that order (a sorted array of
struct(neg_count, is_null, value, brokers)), so the answer never depends on partitioning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from configctl.audit.drift.base import Frames
from configctl.audit.options import AuditOptions
from configctl.audit.schema import BROKER_DEFAULT_PATH, per_broker_regex
from configctl.sources import DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG

VALUE_GROUPS = "value_groups"
"""The shared intermediate: cluster-wide entity keys plus dynamic broker keys, grouped."""


def broker_key_kinds(frames: Frames) -> DataFrame:
    """Per broker key name (per-broker-by-nature keys left out): 1 when any broker takes it
    from ``brokers/<default>`` (compared for divergence), else 0 (compared for static skew)."""
    nature = per_broker_regex(frames.options.per_broker_keys)
    return (
        frames.own.filter(~F.col("name").rlike(nature))
        .groupBy("name")
        .agg(F.max((F.col("source") == DYNAMIC_DEFAULT_BROKER_CONFIG).cast("int")).alias("dynamic"))
    )


def broker_key_names(frames: Frames, dynamic: bool) -> DataFrame:
    kinds = frames.shared("broker_key_kinds", broker_key_kinds, cache=False)
    return kinds.filter(F.col("dynamic") == (1 if dynamic else 0)).select("name")


def value_groups(frames: Frames) -> DataFrame:
    """Cluster-wide entities by path and key, and the dynamic broker keys by name under
    ``brokers/<default>`` with the per-broker overrides left out of the comparison."""
    entity_rows = frames.entities.select("path", "name", F.lit(False).alias("excluded"), "value", "brokers")
    broker_rows = frames.own.join(broker_key_names(frames, True), "name", "left_semi").select(
        F.lit(BROKER_DEFAULT_PATH).alias("path"),
        "name",
        (F.col("source") == DYNAMIC_BROKER_CONFIG).alias("excluded"),
        "value",
        "brokers",
    )
    return group_values(frames, entity_rows.unionByName(broker_rows), True)


def group_values(frames: Frames, rows: DataFrame, absent_is_value: bool) -> DataFrame:
    """Per key (path, name): the brokers holding each value.

    ``rows``: path, name, excluded, value, brokers. An ``excluded`` row accounts for brokers
    that are deliberately left out of the comparison (per-broker overrides). With
    ``absent_is_value`` every broker with no row for a key holds ``null``. No joins: the
    fleet's broker ids travel as one broadcast array.
    """
    keys = ["path", "name"]
    merged = rows.groupBy(*keys, "excluded", "value").agg(
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("brokers")))).alias("brokers")
    )
    per_key = merged.groupBy(*keys).agg(F.collect_list(F.struct("excluded", "value", "brokers")).alias("g"))

    def pair(value: Column, brokers: Column) -> Column:
        return F.struct(value.alias("value"), brokers.alias("brokers"))

    counted = F.filter("g", lambda g: ~g["excluded"])
    if absent_is_value:
        per_key = per_key.crossJoin(F.broadcast(frames.all_brokers))
        present = F.array_distinct(F.flatten(F.transform("g", lambda g: g["brokers"])))
        absent = F.when(
            F.size(present) < F.lit(frames.n_brokers), F.array_except("all_brokers", present)
        ).otherwise(F.array().cast("array<int>"))
        null_held = F.flatten(
            F.transform(F.filter(counted, lambda g: g["value"].isNull()), lambda g: g["brokers"])
        )
        null_brokers = F.array_sort(F.array_union(null_held, absent))
        held = F.transform(
            F.filter(counted, lambda g: g["value"].isNotNull()), lambda g: pair(g["value"], g["brokers"])
        )
        values = F.when(
            F.size(null_brokers) > 0, F.concat(held, F.array(pair(F.lit(None).cast("string"), null_brokers)))
        ).otherwise(held)
    else:
        values = F.transform(counted, lambda g: pair(g["value"], g["brokers"]))
    ranked = F.sort_array(
        F.transform(
            values,
            lambda v: F.struct(
                (-F.size(v["brokers"])).alias("neg_count"),
                v["value"].isNull().alias("is_null"),
                v["value"].alias("value"),
                v["brokers"].alias("brokers"),
            ),
        )
    )
    return per_key.select(*keys, ranked.alias("values"))


def disagreements(groups: DataFrame) -> DataFrame:
    """Keys held with more than one value, with their majority value."""
    return groups.filter(F.size("values") > 1).select(
        "path", "name", "values", F.col("values")[0]["value"].alias("majority_value")
    )


def entry(row: Any, opts: AuditOptions, *, with_path: bool) -> dict[str, Any]:
    """A disagreement as JSON: values (majority first) with their brokers, each list capped at max_listed."""
    values = []
    for v in row["values"][: opts.max_listed]:
        brokers = list(v["brokers"])
        item = {"value": v["value"], "count": len(brokers), "brokers": brokers[: opts.max_listed]}
        if len(brokers) > opts.max_listed:
            item["brokers_truncated"] = len(brokers) - opts.max_listed
        values.append(item)
    result: dict[str, Any] = {"entity_path": row["path"]} if with_path else {}
    result.update({"name": row["name"], "values": values, "majority_value": row["majority_value"]})
    if len(row["values"]) > opts.max_listed:
        result["values_truncated"] = len(row["values"]) - opts.max_listed
    return result


def minority_cells(label: Callable[[], Column]) -> Callable[[DataFrame], DataFrame]:
    """Heatmap cells of a disagreement frame: every broker holding a non-majority value.

    ``label`` makes the key's label column (made when used: a Column needs a running session).
    """

    def cells(df: DataFrame) -> DataFrame:
        return (
            df.select(label().alias("key"), F.posexplode("values").alias("pos", "v"))
            .filter(F.col("pos") > 0)
            .select(F.explode("v.brokers").alias("broker_id"), "key")
        )

    return cells


def minority_cells_from_json(
    label: Callable[[dict[str, Any]], str],
) -> Callable[[Iterable[dict[str, Any]]], Iterator[tuple[int, str]]]:
    """:func:`minority_cells` from listed (uncut) disagreements."""

    def cells(items: Iterable[dict[str, Any]]) -> Iterator[tuple[int, str]]:
        for item in items:
            key = label(item)
            for value in item["values"][1:]:
                for broker in value["brokers"]:
                    yield broker, key

    return cells
