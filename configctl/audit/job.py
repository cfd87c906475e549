"""The config-audit Spark job: which brokers run stale or wrong config, and where the fleet disagrees.

Input: snapshot lines (Contract 4), optionally an :class:`ExpectedState`. Output: one JSON-ready
dict (Contract 5). Every finding is computed by Spark; the driver only collects the findings
themselves, each list cut at ``AuditOptions.limit`` (with the number left out), so the job
behaves the same on three brokers and on thousands.

Why the answers do not depend on partitioning: every aggregation is order-insensitive
(counts, sets of broker ids that are then sorted, maxima), ties are broken by value, and every
list is sorted by its natural key before it is cut.

This module reads and condenses the input, then runs the drift classes of
:data:`configctl.audit.drift.REGISTRY` (one module each). Definitions (docs/audit.md explains
them to operators):

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
  the desired state implies; see :mod:`configctl.audit.expected` for the matching rules.

Imports only pyspark, the standard library and pure configctl modules (the snapshot line, the
source names, the catalogue and its schemas), so the module runs under
``spark-submit --py-files configctl.zip configctl/audit/job.py`` (``configctl audit package``
builds that zip).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from functools import reduce
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from configctl import snapshot
from configctl.audit.drift import REGISTRY, Frames
from configctl.audit.expected import ExpectedState, read_expected_state
from configctl.audit.heatmap import EMPTY, cut_short, heatmap_from_findings, heatmap_in_spark
from configctl.audit.options import AuditInputError, AuditOptions
from configctl.audit.schema import CORRUPT_COLUMN, DIGEST_PREFIX, sensitive_name_regex, snapshot_schema
from configctl.audit.verdict import DRIFT_EXIT_CODE, has_drift

__all__ = ["AuditInputError", "AuditOptions", "audit", "audit_frame", "main", "read_snapshots"]

# A malformed line's text is shown only if it names no secret.
_SECRET_HINT = r"(?i)(password|secret|jaas|scram|ssl\.key|keystore\.key|certificate)"
_EXAMPLE_CHARS = 200


# -- reading ----------------------------------------------------------------------------------------


def read_snapshots(spark: SparkSession, path: str, pattern: str = snapshot.FILE_PATTERN) -> DataFrame:
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
            for name in snapshot.REQUIRED_FIELDS
        ],
    )
    bad = F.when(corrupt.isNotNull(), F.lit("unparseable")).when(missing, F.lit("missing_fields"))
    value = F.col("value")
    clear_secret = (
        value.isNotNull() & F.col("name").rlike(sensitive_name_regex()) & ~value.startswith(DIGEST_PREFIX)
    )
    normalized = F.when(clear_secret, F.concat(F.lit(DIGEST_PREFIX), F.sha2(value, 256))).otherwise(value)
    fields = [F.col(name) if name != "value" else normalized.alias("value") for name in snapshot.FIELD_NAMES]
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


def audit(
    spark: SparkSession,
    path: str,
    expected: ExpectedState | None = None,
    options: AuditOptions | None = None,
) -> dict[str, Any]:
    """Audit the snapshots at ``path`` (a directory, file or URI Spark reads)."""
    options = options or AuditOptions()
    return audit_frame(spark, read_snapshots(spark, path, options.file_pattern), expected, options)


def audit_frame(
    spark: SparkSession,
    raw: DataFrame,
    expected: ExpectedState | None = None,
    options: AuditOptions | None = None,
) -> dict[str, Any]:
    """Audit raw snapshot rows as :func:`read_snapshots` returns them (any partitioning)."""
    options = options or AuditOptions()
    condensed = _condense(_parse(raw)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return _run(spark, condensed, expected, options)
    except PySparkException as exc:
        raise AuditInputError(f"the audit failed: {_first_line(exc)}") from None
    finally:
        condensed.unpersist()


def _run(
    spark: SparkSession, condensed: DataFrame, expected: ExpectedState | None, options: AuditOptions
) -> dict[str, Any]:
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
    if expected is not None and expected.latest_change_number is not None:
        latest, latest_source = expected.latest_change_number, "zookeeper"
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
        doc.update(_no_findings(options, expected))
        return doc

    broker_cn = condensed.filter(kind == KIND_CHANGE).select(
        F.col("path").cast("int").alias("broker_id"), F.col("cn").alias("change_number")
    )
    frames = Frames(
        spark=spark,
        options=options,
        n_brokers=n_brokers,
        latest=latest,
        expected=expected,
        brokers=broker_cn,
        all_brokers=broker_cn.agg(F.array_sort(F.collect_list("broker_id")).alias("all_brokers")),
        own=condensed.filter(kind == KIND_OWN).select("name", "value", "source", "brokers"),
        entities=condensed.filter(kind == KIND_ENTITY).select("path", "name", "value", "brokers"),
    )
    try:
        # Only what is both costly and read twice is cached: the condensed input, and an
        # intermediate more than one drift class reads (Frames.shared). Filters of the
        # condensed table are cheap.
        doc.update(_findings(frames))
        return doc
    finally:
        frames.release()


def _no_findings(options: AuditOptions, expected: ExpectedState | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    counted = []
    for drift in REGISTRY:
        if drift.applies(expected):
            out[drift.name] = []
            counted.append(drift.name)
        else:
            out[drift.name] = None
    out["counts"] = dict.fromkeys(counted, 0)
    out["truncated"] = dict.fromkeys(counted, 0)
    out["heatmap"] = dict(EMPTY)
    out["limits"] = {"limit": options.limit, "max_listed": options.max_listed}
    return out


def _findings(frames: Frames) -> dict[str, Any]:
    """Every drift class of the registry, in order: its list (cut at the limit), count and cut."""
    opts = frames.options
    counts: dict[str, int] = {}
    truncated: dict[str, int] = {}
    out: dict[str, Any] = {}
    classes = [d for d in REGISTRY if d.applies(frames.expected)]
    for drift in classes:
        frames.users.update(drift.shares)
    for drift in REGISTRY:
        if drift not in classes:
            out[drift.name] = None
            continue
        df = drift.compute(frames)
        if df is None:
            out[drift.name], counts[drift.name], truncated[drift.name] = [], 0, 0
            continue
        frames.found[drift.name] = df
        items, total = _bounded(df, drift.order, opts.limit)
        out[drift.name] = [drift.to_json(r, frames) for r in items]
        counts[drift.name] = total
        truncated[drift.name] = total - len(items)

    out["counts"] = counts
    out["truncated"] = truncated
    if opts.heatmap_in_spark or cut_short(out):
        out["heatmap"] = heatmap_in_spark(frames)
    else:
        out["heatmap"] = heatmap_from_findings(out, opts.heatmap_keys, opts.heatmap_brokers)
    out["limits"] = {"limit": opts.limit, "max_listed": opts.max_listed}
    return out


def _bounded(df: DataFrame, order: Sequence[str | Column], limit: int) -> tuple[list, int]:
    """At most ``limit`` rows in order, and the total (counted only when the cap is hit)."""
    rows = df.orderBy(*order).limit(limit + 1).collect()
    if len(rows) <= limit:
        return rows, len(rows)
    return rows[:limit], int(df.count())


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
    parser.add_argument(
        "--desired-state", default=None, help="desired state JSON (configctl audit desired-state)"
    )
    parser.add_argument("--limit", type=int, default=AuditOptions.limit)
    parser.add_argument("--per-broker-key", action="append", default=[], help="another per-broker key")
    parser.add_argument("--pattern", default=snapshot.FILE_PATTERN, help="snapshot file glob in a directory")
    parser.add_argument("--fail-on-drift", action="store_true", help="exit 2 when drift is found")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit --py-files configctl.zip configctl/audit/job.py --snapshots URI``."""
    args = _parser().parse_args(argv)
    from configctl.audit.spark import SparkStartError, audit_session

    try:
        expected = read_expected_state(args.desired_state) if args.desired_state else None
        options = AuditOptions(
            limit=args.limit, per_broker_keys=tuple(args.per_broker_key), file_pattern=args.pattern
        )
    except (ValueError, AuditInputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        with audit_session(args.master) as spark:
            doc = audit(spark, args.snapshots, expected, options)
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
