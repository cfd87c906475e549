"""The config-audit Spark job: which brokers run stale or wrong config, and where the fleet disagrees.

Input: snapshot lines (Contract 4), optionally a :class:`DesiredState`. Output: one JSON-ready
dict (Contract 5). Every finding is computed by Spark; the driver only collects the findings
themselves, each list cut at ``AuditOptions.limit`` (with the number left out), so the job
behaves the same on three brokers and on thousands.

Why the answers do not depend on partitioning: every aggregation is order-insensitive
(counts, sets of broker ids that are then sorted, maxima), ties are broken by value, and every
list is sorted by its natural key before it is cut.

Definitions (docs/audit.md explains them to operators):

* A broker's change number is the highest ``change_number`` on its lines. The newest change is
  the desired state's (ZooKeeper) when given, else the highest across brokers; brokers below
  it are ``stale_brokers``.
* ``divergent``: for every cluster-wide key (topics, clients, users, ips: compared by entity
  path and key) the brokers are grouped by the value they hold; a broker without a line for
  the key holds ``null``. Broker keys are compared by name, reported under
  ``brokers/<default>``, when at least one broker takes the key from ``brokers/<default>``;
  brokers that set the key per broker are left out of the comparison (they are listed in
  ``per_broker_overrides``). Keys that are per-broker by nature never count.
* ``static_skew``: broker keys no broker takes from ``brokers/<default>``, compared over the
  brokers whose value comes from server.properties or the built-in default.
* Majority value: held by the most brokers; on a tie, a present value beats ``null``, then the
  smallest value in code-point order wins. ``values`` are listed in that same order.
* ``missed_changes`` (desired state only): a broker whose effective value differs from what
  the desired state implies; see :mod:`configctl.audit.desired` for the matching rules.

Imports only pyspark, the standard library and ``configctl.audit`` modules, so the module runs
under ``spark-submit --py-files configctl.zip configctl/audit/job.py``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from configctl.audit.desired import DesiredState, read_desired_state, snapshot_form
from configctl.audit.schema import (
    BROKER_DEFAULT_PATH,
    CORRUPT_COLUMN,
    DEFAULT_BROKER_SOURCE,
    DEFAULT_FILE_PATTERN,
    DIGEST_PREFIX,
    DYNAMIC_BROKER_SOURCES,
    FIELD_NAMES,
    PER_BROKER_SOURCE,
    REQUIRED_FIELDS,
    SENSITIVE_NAME_REGEX,
    SERVER_PROPERTIES_SOURCES,
    per_broker_regex,
    snapshot_schema,
)
from configctl.audit.verdict import DRIFT_EXIT_CODE, has_drift

# Finding kinds as the heatmap ranks them when one broker/key cell has several.
KIND_PRIORITY = {"missed": 4, "divergent": 3, "static": 2, "override": 1}
_KIND_BY_PRIORITY = {v: k for k, v in KIND_PRIORITY.items()}

# A malformed line's text is shown only if it names no secret.
_SECRET_HINT = r"(?i)(password|secret|jaas|scram|ssl\.key|keystore\.key|certificate)"
_EXAMPLE_CHARS = 200
_BROKER_PATH = re.compile(r"^brokers/([0-9]+)$")


class AuditInputError(Exception):
    """The input cannot be audited (missing path, unreadable, bad desired state): one line for the user."""


@dataclass(frozen=True)
class AuditOptions:
    """Bounds and knobs. ``limit`` caps every finding list; ``max_listed`` caps brokers per value."""

    limit: int = 1000
    max_listed: int = 100
    per_broker_keys: tuple[str, ...] = ()
    heatmap_keys: int = 20
    heatmap_brokers: int = 40
    examples: int = 10
    file_pattern: str = DEFAULT_FILE_PATTERN
    # The heatmap is drawn from the collected findings when none was cut short (exact, and
    # saves three Spark jobs); set this to always compute it in Spark (tests compare both).
    heatmap_in_spark: bool = False

    def __post_init__(self) -> None:
        for name in ("limit", "max_listed", "heatmap_keys", "heatmap_brokers"):
            if getattr(self, name) < 1:
                raise AuditInputError(f"{name} must be at least 1")


# -- reading ----------------------------------------------------------------------------------------


def read_snapshots(spark: SparkSession, path: str, pattern: str = DEFAULT_FILE_PATTERN) -> DataFrame:
    """The raw snapshot lines of a directory, a file or a URI, plus the file each came from.

    Uses the explicit schema with ``_corrupt_record`` (PERMISSIVE): a bad line is kept and
    counted, never fatal. In a directory only files matching ``pattern`` are read, so the
    simulator's ``ground_truth.json`` and a listener's half-written temporary file are skipped.
    """
    is_dir = _check_path(spark, path)
    reader = (
        spark.read.schema(snapshot_schema())
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .option("ignoreMissingFiles", "true")  # the listener replaces files while we read
    )
    if is_dir:
        reader = reader.option("pathGlobFilter", pattern)
    try:
        raw = reader.json(path)
        return raw.select(*raw.columns, F.col("_metadata.file_name").alias("_file"))
    except PySparkException as exc:
        raise AuditInputError(f"cannot read snapshots at {path}: {_first_line(exc)}") from None


def _check_path(spark: SparkSession, path: str) -> bool:
    """Fail early, in one line, on a path that does not exist; True for a directory."""
    try:
        jvm = spark.sparkContext._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        if not fs.exists(hadoop_path):
            raise AuditInputError(f"snapshots path {path} does not exist")
        return bool(fs.getFileStatus(hadoop_path).isDirectory())
    except AuditInputError:
        raise
    except Exception as exc:  # py4j errors carry a Java stack; keep the first line
        raise AuditInputError(f"cannot open snapshots path {path}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "JVM stacktrace")):
            return line[:300]
    return type(exc).__name__


def _parse(raw: DataFrame) -> DataFrame:
    """Flag bad lines, digest secrets that arrived in clear, mark a broker's own lines."""
    corrupt = F.col(CORRUPT_COLUMN)
    missing = reduce(
        lambda a, b: a | b,
        [
            F.col(name).isNull() | (F.length(F.col(name)) == 0)
            if name in ("entity_path", "name", "source")
            else F.col(name).isNull()
            for name in REQUIRED_FIELDS
        ],
    )
    bad = F.when(corrupt.isNotNull(), F.lit("unparseable")).when(missing, F.lit("missing_fields"))
    value = F.col("value")
    clear_secret = (
        value.isNotNull() & F.col("name").rlike(SENSITIVE_NAME_REGEX) & ~value.startswith(DIGEST_PREFIX)
    )
    normalized = F.when(clear_secret, F.concat(F.lit(DIGEST_PREFIX), F.sha2(value, 256))).otherwise(value)
    fields = [F.col(name) if name != "value" else normalized.alias("value") for name in FIELD_NAMES]
    text = F.coalesce(corrupt, F.to_json(F.struct(*fields)))
    shown = F.when(text.rlike(_SECRET_HINT), F.lit("(text withheld: it names a secret)")).otherwise(
        F.substring(text, 1, _EXAMPLE_CHARS)
    )
    own = F.col("entity_path") == F.concat(F.lit("brokers/"), F.col("broker_id").cast("string"))
    return raw.select(
        "broker_id",
        "change_number",
        "entity_path",
        "name",
        normalized.alias("value"),
        "source",
        F.coalesce(own, F.lit(False)).alias("_own"),
        bad.alias("_bad"),
        F.when(bad.isNotNull(), shown).alias("_line"),
        F.when(bad.isNotNull(), F.col("_file")).alias("_file"),
    )


# -- condensing -------------------------------------------------------------------------------------
#
# The input is mostly the same lines repeated by every broker (every topic override is on every
# broker), so the job first condenses it in one pass: lines are grouped by what they say, each
# group keeping the set of brokers saying it. Everything after works on this, much smaller,
# table: the raw lines are read and shuffled exactly once and never cached.

KIND_OWN = "own"  # a broker's line about its own broker keys (path left null: compared by name)
KIND_ENTITY = "entity"  # a line about a cluster-wide entity (topic, client, user, ip)
KIND_CHANGE = "cn"  # one per broker: its change number (path holds the broker id)
KIND_BAD = "bad"  # a malformed line (path: file, name: unparseable|missing_fields, value: text)


def _condense(parsed: DataFrame) -> DataFrame:
    """kind, path, name, value, source, n (lines), brokers (sorted ids), cn (max change number)."""
    bad = F.col("_bad").isNotNull()
    own = F.col("_own")

    def key(kind: Column, path: Column, name: Column, value: Column, source: Column) -> Column:
        return F.struct(
            kind.alias("kind"),
            path.alias("path"),
            name.alias("name"),
            value.alias("value"),
            source.alias("source"),
            F.lit(1).alias("lines"),
        )

    null = F.lit(None).cast("string")
    content = F.when(
        bad, key(F.lit(KIND_BAD), F.col("_file"), F.col("_bad"), F.col("_line"), null)
    ).otherwise(
        F.when(own, key(F.lit(KIND_OWN), null, F.col("name"), F.col("value"), F.col("source"))).otherwise(
            key(F.lit(KIND_ENTITY), F.col("entity_path"), F.col("name"), F.col("value"), null)
        )
    )
    change = key(F.lit(KIND_CHANGE), F.col("broker_id").cast("string"), null, null, null).withField(
        "lines", F.lit(0)
    )
    keys = F.when(bad, F.array(content)).otherwise(F.array(content, change))
    return (
        parsed.select(F.explode(keys).alias("k"), "broker_id", "change_number")
        .groupBy("k.kind", "k.path", "k.name", "k.value", "k.source")
        .agg(
            F.sum("k.lines").alias("n"),
            F.array_sort(F.collect_set("broker_id")).alias("brokers"),
            F.max("change_number").alias("cn"),
        )
    )


# -- the audit --------------------------------------------------------------------------------------


@dataclass
class _Context:
    spark: SparkSession
    options: AuditOptions
    n_brokers: int
    brokers: DataFrame  # broker_id, change_number
    all_brokers: DataFrame | None = None  # one row: all_brokers (sorted array of ids)
    cached: list[DataFrame] = field(default_factory=list)

    def keep(self, df: DataFrame) -> DataFrame:
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        self.cached.append(df)
        return df

    def release(self) -> None:
        for df in self.cached:
            df.unpersist()


def audit(
    spark: SparkSession,
    path: str,
    desired: DesiredState | None = None,
    options: AuditOptions | None = None,
) -> dict[str, Any]:
    """Audit the snapshots at ``path`` (a directory, file or URI Spark reads)."""
    options = options or AuditOptions()
    return audit_frame(spark, read_snapshots(spark, path, options.file_pattern), desired, options)


def audit_frame(
    spark: SparkSession,
    raw: DataFrame,
    desired: DesiredState | None = None,
    options: AuditOptions | None = None,
) -> dict[str, Any]:
    """Audit raw snapshot rows as :func:`read_snapshots` returns them (any partitioning)."""
    options = options or AuditOptions()
    condensed = _condense(_parse(raw)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return _run(spark, condensed, desired, options)
    except PySparkException as exc:
        raise AuditInputError(f"the audit failed: {_first_line(exc)}") from None
    finally:
        condensed.unpersist()


def _run(
    spark: SparkSession, condensed: DataFrame, desired: DesiredState | None, options: AuditOptions
) -> dict:
    kind = F.col("kind")
    stats = condensed.agg(
        F.sum("n").alias("rows"),
        F.sum(F.when((kind == KIND_BAD) & (F.col("name") == "unparseable"), F.col("n"))).alias("unparseable"),
        F.sum(F.when((kind == KIND_BAD) & (F.col("name") == "missing_fields"), F.col("n"))).alias("missing"),
        F.count(F.when(kind == KIND_CHANGE, 1)).alias("brokers"),
        F.max(F.when(kind == KIND_CHANGE, F.col("cn"))).alias("latest"),
    ).first()
    malformed = {
        "unparseable": int(stats["unparseable"] or 0),
        "missing_fields": int(stats["missing"] or 0),
        "examples": [],
    }
    if malformed["unparseable"] or malformed["missing_fields"]:
        examples = (
            condensed.filter(kind == KIND_BAD)
            .select("path", "value", "name", "n")
            .orderBy("path", "value", "name")
            .limit(options.examples)
            .collect()
        )
        malformed["examples"] = [
            {"file": r["path"], "kind": r["name"], "line": r["value"], "times": r["n"]} for r in examples
        ]
    n_brokers = int(stats["brokers"])
    if desired is not None and desired.latest_change_number is not None:
        latest, latest_source = desired.latest_change_number, "zookeeper"
    else:
        latest = None if stats["latest"] is None else int(stats["latest"])
        latest_source = "snapshots"
    doc: dict[str, Any] = {
        "brokers": n_brokers,
        "rows": int(stats["rows"] or 0),
        "malformed": malformed,
        "latest_change_number": latest,
        "latest_change_source": latest_source,
    }
    if n_brokers == 0:  # nothing to compare: every finding is empty
        doc.update(_no_findings(options, desired))
        return doc

    broker_cn = condensed.filter(kind == KIND_CHANGE).select(
        F.col("path").cast("int").alias("broker_id"), F.col("cn").alias("change_number")
    )
    ctx = _Context(spark, options, n_brokers, broker_cn)
    try:
        # Only what is both costly and read twice is cached: the condensed input, and the value
        # groups when missed changes read them too. Filters of the condensed table are cheap.
        ctx.all_brokers = broker_cn.agg(F.array_sort(F.collect_list("broker_id")).alias("all_brokers"))
        own = condensed.filter(kind == KIND_OWN).select("name", "value", "source", "brokers")
        entities = condensed.filter(kind == KIND_ENTITY).select("path", "name", "value", "brokers")
        doc.update(_findings(ctx, own, entities, latest, desired))
        return doc
    finally:
        ctx.release()


def _no_findings(options: AuditOptions, desired: DesiredState | None) -> dict[str, Any]:
    names = ["stale_brokers", "divergent", "per_broker_overrides", "static_skew"]
    out: dict[str, Any] = {name: [] for name in names}
    out["missed_changes"] = None if desired is None else []
    if desired is not None:
        names.append("missed_changes")
    out["counts"] = dict.fromkeys(names, 0)
    out["truncated"] = dict.fromkeys(names, 0)
    out["heatmap"] = {"keys": [], "brokers": [], "cells": []}
    out["limits"] = {"limit": options.limit, "max_listed": options.max_listed}
    return out


def _findings(
    ctx: _Context, own: DataFrame, entities: DataFrame, latest: int | None, desired: DesiredState | None
) -> dict:
    opts = ctx.options
    counts: dict[str, int] = {}
    truncated: dict[str, int] = {}
    out: dict[str, Any] = {}

    def take(name: str, df: DataFrame, order: Sequence[str | Column], convert) -> None:
        items, total = _bounded(df, order, opts.limit)
        out[name] = [convert(r) for r in items]
        counts[name] = total
        truncated[name] = total - len(items)

    if latest is None:
        out["stale_brokers"], counts["stale_brokers"], truncated["stale_brokers"] = [], 0, 0
    else:
        take(
            "stale_brokers",
            ctx.brokers.filter(F.col("change_number") < F.lit(latest)),
            ["broker_id"],
            lambda r: {
                "broker_id": r["broker_id"],
                "change_number": r["change_number"],
                "behind": latest - r["change_number"],
            },
        )

    # Broker keys: which names anyone takes from brokers/<default> (those are compared for
    # divergence), and which not (compared for static skew).
    nature = per_broker_regex(opts.per_broker_keys)
    key_kind = (
        own.filter(~F.col("name").rlike(nature))
        .groupBy("name")
        .agg(F.max((F.col("source") == DEFAULT_BROKER_SOURCE).cast("int")).alias("dynamic"))
    )
    dynamic_names = key_kind.filter(F.col("dynamic") == 1).select("name")
    static_names = key_kind.filter(F.col("dynamic") == 0).select("name")

    # Cluster-wide entities by path and key, and the dynamic broker keys by name with the
    # per-broker overrides left out of the comparison.
    entity_rows = entities.select("path", "name", F.lit(False).alias("excluded"), "value", "brokers")
    broker_rows = own.join(dynamic_names, "name", "left_semi").select(
        F.lit(BROKER_DEFAULT_PATH).alias("path"),
        "name",
        (F.col("source") == PER_BROKER_SOURCE).alias("excluded"),
        "value",
        "brokers",
    )
    groups = _value_groups(ctx, entity_rows.unionByName(broker_rows), True)
    if desired is not None:  # missed changes of entity keys are read off the same value groups
        groups = ctx.keep(groups)
    divergent = _with_majority(groups.filter(F.size("values") > 1))
    take("divergent", divergent, ["path", "name"], lambda r: _entry(r, opts, with_path=True))

    overrides = own.filter(F.col("source") == PER_BROKER_SOURCE).select(
        F.explode("brokers").alias("broker_id"), "name", "value"
    )
    take("per_broker_overrides", overrides, ["broker_id", "name", "value"], lambda r: r.asDict())

    static_rows = (
        own.filter(F.col("source").isin(*SERVER_PROPERTIES_SOURCES))
        .join(static_names, "name", "left_semi")
        .select(
            F.lit("server.properties").alias("path"),
            "name",
            F.lit(False).alias("excluded"),
            "value",
            "brokers",
        )
    )
    skew = _with_majority(_value_groups(ctx, static_rows, False).filter(F.size("values") > 1))
    take("static_skew", skew, ["name"], lambda r: _entry(r, opts, with_path=False))

    missed = None
    if desired is None:
        out["missed_changes"] = None
    else:
        entity_groups = groups.filter(F.col("path") != BROKER_DEFAULT_PATH)
        missed = _missed(ctx, own, entity_groups, desired)
        take(
            "missed_changes",
            missed,
            # a broker reporting one key twice gives two rows: the values make the order total
            ["broker_id", "entity_path", "name", "expected_value", "actual_value"],
            lambda r: {
                "broker_id": r["broker_id"],
                "entity_path": r["entity_path"],
                "name": r["name"],
                "expected_value": r["expected_value"],
                "actual_value": r["actual_value"],
            },
        )

    out["counts"] = counts
    out["truncated"] = truncated
    complete = not any(truncated.values()) and not any(
        "values_truncated" in e or any("brokers_truncated" in v for v in e["values"])
        for e in [*out["divergent"], *out["static_skew"]]
    )
    if complete and not opts.heatmap_in_spark:
        out["heatmap"] = heatmap_from_findings(out, opts.heatmap_keys, opts.heatmap_brokers)
    else:
        out["heatmap"] = _heatmap(ctx, divergent, skew, overrides, missed, latest)
    out["limits"] = {"limit": opts.limit, "max_listed": opts.max_listed}
    return out


def _bounded(df: DataFrame, order: Sequence[str | Column], limit: int) -> tuple[list, int]:
    """At most ``limit`` rows in order, and the total (counted only when the cap is hit)."""
    rows = df.orderBy(*order).limit(limit + 1).collect()
    if len(rows) <= limit:
        return rows, len(rows)
    return rows[:limit], int(df.count())


def _with_majority(groups: DataFrame) -> DataFrame:
    return groups.select("path", "name", "values", F.col("values")[0]["value"].alias("majority_value"))


def _value_groups(ctx: _Context, rows: DataFrame, absent_is_value: bool) -> DataFrame:
    """Per key (path, name): the brokers holding each value.

    ``rows``: path, name, excluded, value, brokers. An ``excluded`` row accounts for brokers
    that are deliberately left out of the comparison (per-broker overrides). With
    ``absent_is_value`` every broker with no row for a key holds ``null``. No joins: the
    fleet's broker ids travel as one broadcast array. ``values`` comes out sorted majority
    first (struct(neg_count, is_null, value, brokers) ascending).
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
        per_key = per_key.crossJoin(F.broadcast(ctx.all_brokers))
        present = F.array_distinct(F.flatten(F.transform("g", lambda g: g["brokers"])))
        absent = F.when(
            F.size(present) < F.lit(ctx.n_brokers), F.array_except("all_brokers", present)
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


def _entry(row: Any, opts: AuditOptions, *, with_path: bool) -> dict[str, Any]:
    values = []
    for v in row["values"][: opts.max_listed]:
        brokers = list(v["brokers"])
        item = {"value": v["value"], "count": len(brokers), "brokers": brokers[: opts.max_listed]}
        if len(brokers) > opts.max_listed:
            item["brokers_truncated"] = len(brokers) - opts.max_listed
        values.append(item)
    entry: dict[str, Any] = {"entity_path": row["path"]} if with_path else {}
    entry.update({"name": row["name"], "values": values, "majority_value": row["majority_value"]})
    if len(row["values"]) > opts.max_listed:
        entry["values_truncated"] = len(row["values"]) - opts.max_listed
    return entry


# -- missed changes ---------------------------------------------------------------------------------

_EXPECTED_SCHEMA = StructType(
    [
        StructField("broker_id", IntegerType(), True),
        StructField("kind", StringType(), False),
        StructField("cpath", StringType(), False),
        StructField("name", StringType(), False),
        StructField("value", StringType(), True),
    ]
)


def _expected_rows(desired: DesiredState) -> list[tuple[int | None, str, str, str, str | None]]:
    """Normalize expectations: broker keys match by name on the broker's own lines."""
    rows = []
    for e in desired.expected:
        broker_id = e.broker_id
        if e.entity_path.startswith("brokers/"):
            match = _BROKER_PATH.match(e.entity_path)
            if broker_id is None and match:
                broker_id = int(match.group(1))
            rows.append((broker_id, "broker", "", e.name, snapshot_form(e.name, e.value)))
        else:
            rows.append((broker_id, "entity", e.entity_path, e.name, snapshot_form(e.name, e.value)))
    return rows


def _missed(ctx: _Context, own: DataFrame, entity_groups: DataFrame, desired: DesiredState) -> DataFrame:
    """Brokers whose effective value differs from what the desired state implies.

    Entity keys are read off the per-key value groups (one row per key, not per broker and
    key, so a fleet-wide expectation never has to be multiplied by the number of brokers);
    expectations for one broker and the broker keys (a few hundred per broker) are joined.
    """
    rows = _expected_rows(desired)
    expected = ctx.spark.createDataFrame(rows, _EXPECTED_SCHEMA)
    brokers = ctx.brokers.select("broker_id")
    columns = ["broker_id", "entity_path", "name", "expected_value", "actual_value"]
    results = [
        _missed_entities(ctx, entity_groups, expected.filter(F.col("kind") == "entity"), desired.complete)
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
        results.append(checked.select(*columns))

    results.append(
        _missed_broker_keys(ctx, own, expected.filter(F.col("kind") == "broker"), desired.complete)
    )
    return reduce(DataFrame.unionByName, [r.select(*columns) for r in results])


def _missed_entities(ctx: _Context, groups: DataFrame, expected: DataFrame, complete: bool) -> DataFrame:
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
    joined = groups.join(general, ["path", "name"], "full_outer").crossJoin(F.broadcast(ctx.all_brokers))
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


def _missed_broker_keys(ctx: _Context, own: DataFrame, expected: DataFrame, complete: bool) -> DataFrame:
    """Broker keys: brokers/<id> beats brokers/<default>; no expectation means "not set dynamically"."""
    keys = ["broker_id", "name"]
    brokers = ctx.brokers.select("broker_id")
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
    actual = own.select(
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
    sensitive = F.col("name").rlike(SENSITIVE_NAME_REGEX)
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


# -- heatmap ----------------------------------------------------------------------------------------


def _heatmap(
    ctx: _Context,
    divergent: DataFrame,
    skew: DataFrame,
    overrides: DataFrame,
    missed: DataFrame | None,
    latest: int | None,
) -> dict[str, Any]:
    """The most drifted keys × the brokers drifting most on them, each cell the strongest kind.

    A broker deviates on a key when it holds a non-majority value (divergent, static skew),
    overrides the key per broker, or missed a change to it.
    """
    opts = ctx.options

    def minorities(df: DataFrame, kind: str, label: Column) -> DataFrame:
        return (
            df.select(label.alias("key"), F.posexplode("values").alias("pos", "v"))
            .filter(F.col("pos") > 0)
            .select("key", F.explode("v.brokers").alias("broker_id"))
            .select("broker_id", "key", F.lit(KIND_PRIORITY[kind]).alias("prio"))
        )

    label = F.when(F.col("path") == BROKER_DEFAULT_PATH, F.col("name")).otherwise(
        F.concat_ws(" ", F.col("path"), F.col("name"))
    )
    parts = [
        minorities(divergent, "divergent", label),
        minorities(skew, "static", F.col("name")),
        overrides.select(
            "broker_id", F.col("name").alias("key"), F.lit(KIND_PRIORITY["override"]).alias("prio")
        ),
    ]
    if missed is not None:
        missed_label = F.when(F.col("entity_path").startswith("brokers/"), F.col("name")).otherwise(
            F.concat_ws(" ", F.col("entity_path"), F.col("name"))
        )
        parts.append(
            missed.select(
                "broker_id", missed_label.alias("key"), F.lit(KIND_PRIORITY["missed"]).alias("prio")
            )
        )
    cells = reduce(DataFrame.unionByName, parts).groupBy("broker_id", "key").agg(F.max("prio").alias("prio"))
    cells = ctx.keep(cells)
    top_keys = (
        cells.groupBy("key")
        .agg(F.count(F.lit(1)).alias("n"))
        .orderBy(F.desc("n"), "key")
        .limit(opts.heatmap_keys)
        .collect()
    )
    if not top_keys:
        return {"keys": [], "brokers": [], "cells": []}
    key_names = [r["key"] for r in top_keys]
    on_top = cells.filter(F.col("key").isin(key_names))
    top_brokers = (
        on_top.groupBy("broker_id")
        .agg(F.count(F.lit(1)).alias("n"))
        .orderBy(F.desc("n"), "broker_id")
        .limit(opts.heatmap_brokers)
        .collect()
    )
    broker_ids = sorted(r["broker_id"] for r in top_brokers)
    stale_ids = set()
    if latest is not None:
        stale_ids = {
            r["broker_id"]
            for r in ctx.brokers.filter(
                F.col("broker_id").isin(broker_ids) & (F.col("change_number") < latest)
            )
            .select("broker_id")
            .collect()
        }
    found = {
        (r["broker_id"], r["key"]): _KIND_BY_PRIORITY[r["prio"]]
        for r in on_top.filter(F.col("broker_id").isin(broker_ids)).collect()
    }
    deviations = {r["broker_id"]: r["n"] for r in top_brokers}
    return {
        "keys": [{"key": r["key"], "brokers": r["n"]} for r in top_keys],
        "brokers": [
            {"broker_id": b, "deviations": deviations[b], "stale": b in stale_ids} for b in broker_ids
        ],
        "cells": [[found.get((b, k)) for k in key_names] for b in broker_ids],
    }


def _heat_key(entity_path: str, name: str) -> str:
    return name if entity_path.startswith("brokers/") else f"{entity_path} {name}"


def heatmap_from_findings(doc: dict[str, Any], max_keys: int, max_brokers: int) -> dict[str, Any]:
    """The same heatmap as :func:`_heatmap`, from complete (uncut) findings on the driver."""
    cells: dict[tuple[int, str], int] = {}

    def mark(broker: int, key: str, kind: str) -> None:
        cells[(broker, key)] = max(cells.get((broker, key), 0), KIND_PRIORITY[kind])

    for entry in doc["divergent"]:
        for value in entry["values"][1:]:
            for broker in value["brokers"]:
                mark(broker, _heat_key(entry["entity_path"], entry["name"]), "divergent")
    for entry in doc["static_skew"]:
        for value in entry["values"][1:]:
            for broker in value["brokers"]:
                mark(broker, entry["name"], "static")
    for item in doc["per_broker_overrides"]:
        mark(item["broker_id"], item["name"], "override")
    for item in doc["missed_changes"] or []:
        mark(item["broker_id"], _heat_key(item["entity_path"], item["name"]), "missed")
    per_key: dict[str, int] = {}
    for _, key in cells:
        per_key[key] = per_key.get(key, 0) + 1
    top_keys = sorted(per_key.items(), key=lambda kv: (-kv[1], kv[0]))[:max_keys]
    if not top_keys:
        return {"keys": [], "brokers": [], "cells": []}
    key_names = [k for k, _ in top_keys]
    chosen = set(key_names)
    per_broker: dict[int, int] = {}
    for broker, key in cells:
        if key in chosen:
            per_broker[broker] = per_broker.get(broker, 0) + 1
    top_brokers = sorted(per_broker.items(), key=lambda kv: (-kv[1], kv[0]))[:max_brokers]
    broker_ids = sorted(b for b, _ in top_brokers)
    stale = {item["broker_id"] for item in doc["stale_brokers"]}
    return {
        "keys": [{"key": k, "brokers": n} for k, n in top_keys],
        "brokers": [{"broker_id": b, "deviations": per_broker[b], "stale": b in stale} for b in broker_ids],
        "cells": [
            [_KIND_BY_PRIORITY[cells[(b, k)]] if (b, k) in cells else None for k in key_names]
            for b in broker_ids
        ],
    }


# -- entry point ------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="configctl-audit-job", description="Audit configctl broker snapshots for drift (Spark job)."
    )
    parser.add_argument(
        "--snapshots", required=True, help="directory, file or URI (file://, hdfs://, s3a://)"
    )
    parser.add_argument(
        "--master", default=None, help="Spark master (default: spark-submit's, else local[*])"
    )
    parser.add_argument("--output", choices=("json", "table"), default="json")
    parser.add_argument("--json-file", default=None, help="also write the JSON document to this local file")
    parser.add_argument(
        "--html", default=None, help="write the HTML report to this local file (needs Jinja2)"
    )
    parser.add_argument("--desired-state", default=None, help="desired state JSON (DesiredState.to_json)")
    parser.add_argument("--limit", type=int, default=AuditOptions.limit)
    parser.add_argument("--per-broker-key", action="append", default=[], help="another per-broker key")
    parser.add_argument("--pattern", default=DEFAULT_FILE_PATTERN, help="snapshot file glob in a directory")
    parser.add_argument("--fail-on-drift", action="store_true", help="exit 2 when drift is found")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit --py-files configctl.zip configctl/audit/job.py --snapshots URI``."""
    args = _parser().parse_args(argv)
    from configctl.audit.spark import SparkStartError, audit_session

    try:
        desired = read_desired_state(args.desired_state) if args.desired_state else None
        options = AuditOptions(
            limit=args.limit, per_broker_keys=tuple(args.per_broker_key), file_pattern=args.pattern
        )
    except (ValueError, AuditInputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        with audit_session(args.master) as spark:
            doc = audit(spark, args.snapshots, desired, options)
    except (AuditInputError, SparkStartError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(doc, indent=2)
    if args.json_file:
        with open(args.json_file, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    if args.html:
        from configctl.audit.report import write_html

        write_html(doc, args.html)
    if args.output == "json":
        print(text)
    else:
        from configctl.audit.report import print_summary

        print_summary(doc)
    return DRIFT_EXIT_CODE if args.fail_on_drift and has_drift(doc) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
