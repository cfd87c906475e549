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

from configctl.audit import sql
from configctl.audit.drift.base import Frames
from configctl.audit.options import AuditOptions
from configctl.audit.schema import BROKER_DEFAULT_PATH
from configctl.sources import DYNAMIC_BROKER_CONFIG

VALUE_GROUPS = "value_groups"
"""The shared intermediate: cluster-wide entity keys plus dynamic broker keys, grouped."""


def value_groups(frames: Frames) -> DataFrame:
    """Cluster-wide entities by path and key, and the dynamic broker keys by name under
    ``brokers/<default>`` with the per-broker overrides left out of the comparison."""
    entity_rows = frames.entities.selectExpr("path", "name", "false AS excluded", "value", "brokers")
    broker_rows = frames.own.filter(sql.one_of("name", frames.dynamic_names)).selectExpr(
        f"{sql.text(BROKER_DEFAULT_PATH)} AS path",
        "name",
        f"source = {sql.text(DYNAMIC_BROKER_CONFIG)} AS excluded",
        "value",
        "brokers",
    )
    return group_values(frames, entity_rows.unionByName(broker_rows), ("path", "name"), True)


# A key's rows merged by value where a value occurs twice (a broker key: one row per broker; an
# entity line written with two sources); most keys have one row per value and pass as they are.
_KINDS = "array_distinct(transform(rows, r -> named_struct('excluded', r.excluded, 'value', r.value)))"
_MERGED = f"""CASE WHEN size(rows) = 1 OR size({_KINDS}) = size(rows) THEN rows
ELSE transform({_KINDS}, d -> named_struct('excluded', d.excluded, 'value', d.value, 'brokers',
  array_sort(array_distinct(flatten(transform(
    filter(rows, r -> r.excluded = d.excluded AND r.value <=> d.value), r -> r.brokers))))))
END"""


def _ranked(value: str, brokers: str) -> str:
    return f"named_struct('neg_count', -size({brokers}), 'is_null', {value} IS NULL, 'value', {value}, 'brokers', {brokers})"


def group_values(frames: Frames, rows: DataFrame, keys: tuple[str, ...], absent_is_value: bool) -> DataFrame:
    """Per key: the brokers holding each value, as ``values`` (majority first).

    ``rows``: the key columns, excluded, value, brokers. An ``excluded`` row accounts for
    brokers deliberately left out of the comparison (per-broker overrides). With
    ``absent_is_value`` every broker with no row for a key holds ``null``. No joins: the fleet's
    broker ids travel as a literal array. One shuffle and one aggregation: the rows of a key
    are collected as they are and merged by value only where a value occurs twice. The common
    key, one value held by every broker, takes a short path that builds no intermediate arrays.
    """
    per_key = (
        rows.repartition(*keys)
        .groupBy(*keys)
        .agg(
            F.expr(
                "collect_list(named_struct('excluded', excluded, 'value', value, 'brokers', brokers)) AS rows"
            )
        )
    )
    # Computed once per key (CollapseProject keeps an expensive column it would have to repeat).
    per_key = per_key.selectExpr(*keys, f"{_MERGED} AS g")
    counted = "filter(g, r -> NOT r.excluded)"
    n = frames.n_brokers
    if absent_is_value:
        present = "array_distinct(flatten(transform(g, r -> r.brokers)))"
        absent = (
            f"CASE WHEN size({present}) < {n} THEN array_except({frames.all_brokers_sql()}, {present}) "
            "ELSE CAST(array() AS ARRAY<INT>) END"
        )
        null_held = f"flatten(transform(filter({counted}, r -> r.value IS NULL), r -> r.brokers))"
        null_brokers = f"array_sort(array_union({null_held}, {absent}))"
        held = f"filter({counted}, r -> r.value IS NOT NULL)"
        nobody_else = (
            f"named_struct('excluded', false, 'value', CAST(NULL AS STRING), 'brokers', {null_brokers})"
        )
        values = (
            f"CASE WHEN size({null_brokers}) > 0 THEN concat({held}, array({nobody_else})) ELSE {held} END"
        )
        # one value (null or not) on every broker: nothing to merge, nobody absent
        alone = f"size(g) = 1 AND NOT g[0].excluded AND size(g[0].brokers) = {n}"
    else:
        values = counted
        alone = "size(g) = 1 AND NOT g[0].excluded"
    full = f"sort_array(transform({values}, v -> {_ranked('v.value', 'v.brokers')}))"
    short = f"array({_ranked('g[0].value', 'g[0].brokers')})"
    return per_key.selectExpr(*keys, f"CASE WHEN {alone} THEN {short} ELSE {full} END AS values")


def disagreements(groups: DataFrame) -> DataFrame:
    """Keys held with more than one value, with their majority value."""
    return groups.filter("size(values) > 1").selectExpr("*", "values[0].value AS majority_value")


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
