"""The config-audit Spark job: which brokers run stale or wrong config, and where the fleet disagrees.

Input: snapshot lines (see docs/reference/snapshots.md), optionally an :class:`ExpectedState`. Output: one JSON-ready
dict (see docs/audit.md). Every finding is computed by Spark; the driver only collects the findings
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
import contextlib
import functools
import json
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from configctl import snapshot
from configctl.audit import sql
from configctl.audit.drift import REGISTRY, Frames
from configctl.audit.drift.base import Inputs
from configctl.audit.expected import ExpectedState, read_expected_state
from configctl.audit.heatmap import EMPTY, cut_short, heatmap_from_findings, heatmap_in_spark
from configctl.audit.options import AuditInputError, AuditOptions
from configctl.audit.schema import (
    CORRUPT_COLUMN,
    DIGEST_PREFIX,
    KEYED_PREFIX,
    per_broker_regex,
    sensitive_name_regex,
    snapshot_schema,
)
from configctl.audit.verdict import DRIFT_EXIT_CODE, has_drift
from configctl.digests import digest, read_digest_key
from configctl.errors import InvalidInput
from configctl.sources import DYNAMIC_DEFAULT_BROKER_CONFIG

__all__ = ["AuditInputError", "AuditOptions", "audit", "audit_frame", "main", "read_snapshots"]

# A malformed line's text is shown only if it names no secret.
_SECRET_HINT = r"(?i)(password|secret|jaas|scram|ssl\.key|keystore\.key|certificate)"
_EXAMPLE_CHARS = 200


# -- reading ----------------------------------------------------------------------------------------


def read_snapshots(spark: SparkSession, path: str, pattern: str = snapshot.FILE_PATTERN) -> DataFrame:
    """The raw snapshot lines of a directory, a file or a URI; a malformed one with its problem and file.

    Uses the explicit schema with ``_corrupt_record`` (PERMISSIVE): a bad line is kept and
    counted, never fatal. In a directory only files matching ``pattern`` are read, so the
    simulator's ``ground_truth.json`` and a listener's half-written temporary file are skipped.
    ``_bad`` names a line's problem (null for a good line) and ``_file`` the file of a bad
    line: asked of Spark only for bad lines (``input_file_name`` in a branch good lines never
    take), where attaching ``_metadata`` to every line cost about a fifth of the read.
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
        raw = reader.json(path).selectExpr("*", f"{_problem()} AS _bad")
        return raw.selectExpr(
            "*", "CASE WHEN _bad IS NOT NULL THEN regexp_extract(input_file_name(), '[^/]*$', 0) END AS _file"
        )
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


# -- condensing -------------------------------------------------------------------------------------
#
# The input is mostly the same lines repeated by every broker (every topic override is on every
# broker), so the job condenses it in ONE pass, the only one over the raw lines: lines are
# grouped by what they say (path, name, value, source), each group keeping the sorted set of
# brokers saying it, and in the same aggregation every broker's highest change number (each
# line is counted twice, once by what it says and once for its broker). The per-line work is
# kept to what a bare "read + groupBy" does: a malformed line is recognised by null checks,
# and what only malformed lines need (the file name, the text shown) sits in branches good
# lines never take. Classifying groups (a broker's own key or a cluster-wide entity) and
# digesting secrets sent in clear happen after, on the condensed table: distinct lines, not
# lines. Expressions are SQL text (see configctl.audit.sql: one JVM round trip each).

KIND_OWN = "own"  # a broker's line about its own broker keys (path null: compared by name)
KIND_ENTITY = "entity"  # a line about a cluster-wide entity (topic, client, user, ip)
KIND_CHANGE = "cn"  # one per broker: its change number (broker_id); one with a null id counts bad lines
KIND_BAD = "bad"  # malformed lines (path: file, name: unparseable|missing_fields, value: text)

_WITHHELD = "(text withheld: it names a secret)"


def _problem() -> str:
    """What is wrong with a raw line: ``unparseable``, ``missing_fields``, or null for a good line."""
    missing = " OR ".join(
        f"{name} IS NULL OR {name} = ''" if name in ("entity_path", "name", "source") else f"{name} IS NULL"
        for name in snapshot.REQUIRED_FIELDS
    )
    return (
        f"CASE WHEN {CORRUPT_COLUMN} IS NOT NULL THEN 'unparseable' WHEN {missing} THEN 'missing_fields' END"
    )


def _clear_secret(value: str = "value", name: str = "name") -> str:
    """SQL: ``value`` is a secret that arrived in clear (a digest in neither form)."""
    return (
        f"({value} IS NOT NULL AND NOT startswith({value}, {sql.text(DIGEST_PREFIX)}) "
        f"AND NOT startswith({value}, {sql.text(KEYED_PREFIX)}) "
        f"AND {name} RLIKE {sql.text(sensitive_name_regex())})"
    )


def _comparable(value: str = "value") -> str:
    """SQL: :func:`configctl.digests.comparable`: a ``hmac-sha256:<hex>`` digest in snapshot form
    (``sha256:<hex>``, the same HMAC), so lines holding either form of one secret are one value."""
    return (
        f"CASE WHEN startswith({value}, {sql.text(KEYED_PREFIX)}) "
        f"THEN concat({sql.text(DIGEST_PREFIX)}, substring({value}, {len(KEYED_PREFIX) + 1})) ELSE {value} END"
    )


def _digested(value: str = "value", name: str = "name") -> str:
    """SQL: a secret in clear as its digest (the listener's ``configctl.secrets.digest``), else the value."""
    return (
        f"CASE WHEN {_clear_secret(value, name)} "
        f"THEN concat({sql.text(DIGEST_PREFIX)}, sha2({value}, 256)) ELSE {value} END"
    )


def _lines(raw: DataFrame, keyed: bool) -> DataFrame:
    """Each raw line as the condensing groups it (a malformed one by file, problem and text).

    A malformed line's text shows a secret in clear as its digest; under a digest key (``keyed``)
    Spark cannot compute that digest, so such a line's text is withheld instead.
    """
    fields = ", ".join(
        f"'{name}', {_digested() if name == 'value' else name}" for name in snapshot.FIELD_NAMES
    )
    text = f"coalesce({CORRUPT_COLUMN}, to_json(named_struct({fields})))"
    withhold = f"{text} RLIKE {sql.text(_SECRET_HINT)}"
    if keyed:
        withhold = f"{withhold} OR coalesce({_clear_secret()}, false)"
    shown = f"CASE WHEN {withhold} THEN {sql.text(_WITHHELD)} ELSE substring({text}, 1, {_EXAMPLE_CHARS}) END"
    return raw.selectExpr(
        "CASE WHEN _bad IS NULL THEN entity_path ELSE _file END AS path",
        "CASE WHEN _bad IS NULL THEN name END AS name",
        f"CASE WHEN _bad IS NULL THEN {_comparable()} ELSE {shown} END AS value",
        "coalesce(_bad, source) AS source",
        "CASE WHEN _bad IS NULL THEN broker_id END AS broker_id",
        "change_number",
    )


def _condense(raw: DataFrame, keyed: bool) -> DataFrame:
    """The one pass: line groups (``line`` = 1) and one row per broker (``line`` = 0).

    Columns: line, path, name, value, source, broker, brokers (sorted ids), n (lines), cn (max
    change number). A malformed line's group has a null name, its file as path, its problem as
    source and its (shown) text as value; it gives no broker a change number. The two groupings
    are a Generate, not GROUPING SETS: Spark plans those as an Expand, which the cache manager
    does not recognise again once a query unions the cached table with itself.
    """
    twice = _lines(raw, keyed).selectExpr("*", "explode(array(1, 0)) AS line")
    keys = [F.expr(f"CASE WHEN line = 1 THEN {c} END AS {c}") for c in ("path", "name", "value", "source")]
    return twice.groupBy(F.col("line"), *keys, F.expr("CASE WHEN line = 0 THEN broker_id END AS broker")).agg(
        F.expr("array_sort(collect_set(broker_id)) AS brokers"),
        F.expr("count(1) AS n"),
        F.expr("max(change_number) AS cn"),
    )


def _classify(condensed: DataFrame, keyed: bool) -> DataFrame:
    """The table every finding reads: kind, broker_id, path, name, value, source, brokers, n, cn, clear.

    A ``brokers/<id>`` group is split: broker <id> saying it is its own key, any other broker
    saying it is an entity line (as before condensing, where ``own`` compared the line's path
    with its broker). The owner is the id written as Java writes an int ("brokers/007" is
    nobody's own path). Values of secrets in clear are digested here (``clear`` marks them);
    under a digest key (``keyed``) they are left in clear for :func:`_digest_clear_under_key`.
    No higher-order functions: a cached plan with lambdas is not recognised again when a query
    unions the cached table with itself.
    """
    named = f"substring(path, {len('brokers/') + 1})"
    owner = f"CASE WHEN CAST(try_cast({named} AS INT) AS STRING) = {named} THEN try_cast({named} AS INT) END"
    is_owner = f"coalesce(array_contains(brokers, {owner}), false)"
    own_brokers = f"CASE WHEN {is_owner} THEN array({owner}) ELSE CAST(array() AS ARRAY<INT>) END"
    other_brokers = f"CASE WHEN {is_owner} THEN array_remove(brokers, {owner}) ELSE brokers END"

    def row(kind: str, path: str, source: str, brokers: str, broker: str = "CAST(NULL AS INT)") -> str:
        return (
            f"named_struct('kind', '{kind}', 'broker_id', {broker}, 'path', {path}, "
            f"'brokers', {brokers}, 'source', {source})"
        )

    null = "CAST(NULL AS STRING)"
    rows = (
        f"CASE WHEN line = 0 THEN array({row(KIND_CHANGE, null, null, 'brokers', 'broker')}) "
        f"WHEN name IS NULL THEN array({row(KIND_BAD, 'path', null, 'brokers')}) "
        f"WHEN startswith(path, 'brokers/') THEN array({row(KIND_OWN, null, 'source', own_brokers)}, "
        f"{row(KIND_ENTITY, 'path', null, other_brokers)}) "
        f"ELSE array({row(KIND_ENTITY, 'path', null, 'brokers')}) END"
    )
    good_line = "(line = 1 AND name IS NOT NULL)"
    return (
        condensed.selectExpr(
            f"explode({rows}) AS r",
            # a bad group keeps its problem in ``name`` (as the examples list it)
            f"CASE WHEN {good_line} OR line = 0 THEN name ELSE source END AS name",
            f"CASE WHEN {good_line} THEN {'value' if keyed else _digested()} ELSE value END AS value",
            "n",
            "cn",
            f"{good_line} AND {_clear_secret()} AS clear",
        )
        .selectExpr(
            "r.kind", "r.broker_id", "r.path", "name", "value", "r.source", "r.brokers", "n", "cn", "clear"
        )
        .filter(f"kind = '{KIND_CHANGE}' OR kind = '{KIND_BAD}' OR size(brokers) > 0")
    )


_TABLE_SCHEMA = (
    ("kind", "string"),
    ("broker_id", "int"),
    ("path", "string"),
    ("name", "string"),
    ("value", "string"),
    ("source", "string"),
    ("brokers", "array<int>"),
    ("n", "bigint"),
    ("cn", "bigint"),
    ("clear", "boolean"),
)


def _digest_clear_under_key(inputs: Inputs, table: DataFrame, key: bytes) -> DataFrame:
    """The table with every secret sent in clear replaced by its HMAC digest under the fleet's key.

    Spark SQL has no HMAC, so the rows holding such secrets (rare: listeners write digests;
    distinct lines, not lines) come to the driver, are digested there with the listener's own
    :func:`configctl.digests.digest`, and go back as a small table. The key never leaves the
    driver, and what goes back into the plan holds digests only, never a secret.
    """
    rows = table.filter("clear").collect()
    digested = [
        tuple(digest(r["value"], key) if name == "value" else r[name] for name, _ in _TABLE_SCHEMA)
        for r in rows
    ]
    return table.filter("NOT clear").unionByName(inputs.rows_table(digested, _TABLE_SCHEMA))


def _merge_digested(table: DataFrame) -> DataFrame:
    """Groups that became equal when secrets in clear were digested, merged into one.

    Only needed when some secret arrived in clear (rare: listeners write digests): then a
    broker saying both the clear value and its digest must count once, as one value.
    """
    return table.groupBy("kind", "broker_id", "path", "name", "value", "source").agg(
        F.expr("array_sort(array_distinct(flatten(collect_list(brokers)))) AS brokers"),
        F.expr("sum(n) AS n"),
        F.expr("max(cn) AS cn"),
        F.expr("false AS clear"),
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
    cached: list[DataFrame] = []

    def keep(df: DataFrame) -> DataFrame:
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(df)
        return df

    keyed = options.digest_key is not None
    table = keep(_classify(_condense(raw, keyed), keyed))
    inputs = Inputs(spark, options, expected, keep)
    preparing = [d for d in REGISTRY if d.prepare is not None and d.applies(expected)]
    with ThreadPoolExecutor(max_workers=max(1, len(preparing)), thread_name_prefix="configctl-prep") as pool:
        # What needs only the inputs is prepared while the snapshots are being condensed.
        futures = {d.name: pool.submit(d.prepare, inputs) for d in preparing if d.prepare is not None}
        try:
            return _run(inputs, table, futures)
        except PySparkException as exc:
            raise AuditInputError(f"the audit failed: {_first_line(exc)}") from None
        finally:
            for future in futures.values():
                with contextlib.suppress(Exception):
                    future.result()  # never leave a preparation running behind the audit
            for df in cached:
                df.unpersist()


def _run(inputs: Inputs, table: DataFrame, preparing: dict[str, Future[Any]]) -> dict[str, Any]:
    spark, options, expected, keep = inputs.spark, inputs.options, inputs.expected, inputs.keep
    own_key = f"kind = '{KIND_OWN}' AND NOT name RLIKE {sql.text(per_broker_regex(options.per_broker_keys))}"
    # One job answers every question whose answer is small: the figures, each broker's change
    # number (the fleet's broker ids travel as a literal from here on: no joins with them), and
    # which broker keys anyone takes from brokers/<default> (compared for divergence) or not
    # (compared for static skew).
    stats = table.agg(
        F.expr(f"sum(CASE WHEN kind = '{KIND_CHANGE}' THEN n END) AS rows"),
        F.expr(f"sum(CASE WHEN kind = '{KIND_BAD}' AND name = 'unparseable' THEN n END) AS unparseable"),
        F.expr(f"sum(CASE WHEN kind = '{KIND_BAD}' AND name = 'missing_fields' THEN n END) AS missing"),
        F.expr(
            f"collect_list(CASE WHEN kind = '{KIND_CHANGE}' AND broker_id IS NOT NULL "
            "THEN named_struct('broker_id', broker_id, 'cn', cn) END) AS brokers"
        ),
        F.expr(
            f"collect_set(CASE WHEN {own_key} AND source = {sql.text(DYNAMIC_DEFAULT_BROKER_CONFIG)} "
            "THEN name END) AS dynamic"
        ),
        F.expr(f"collect_set(CASE WHEN {own_key} THEN name END) AS own_names"),
        F.expr("count_if(clear) AS clear"),
    ).first()
    assert stats is not None
    if stats["clear"]:
        if options.digest_key is not None:
            table = _digest_clear_under_key(inputs, table, options.digest_key)
        table = keep(_merge_digested(table))
    malformed = {
        "unparseable": int(stats["unparseable"] or 0),
        "missing_fields": int(stats["missing"] or 0),
        "examples": [],
    }
    examples = None
    if malformed["unparseable"] or malformed["missing_fields"]:
        examples = (
            table.filter(f"kind = '{KIND_BAD}'")
            .select("path", "value", "name", "n")
            .orderBy("path", "value", "name")
            .limit(options.examples)
        )
    brokers = tuple(sorted((int(r["broker_id"]), int(r["cn"])) for r in stats["brokers"]))
    if expected is not None and expected.latest_change_number is not None:
        latest, latest_source = expected.latest_change_number, expected.source
    else:
        latest = max((cn for _, cn in brokers), default=None)
        latest_source = "snapshots"
    doc: dict[str, Any] = {
        "brokers": len(brokers),
        "rows": int(stats["rows"] or 0),
        "malformed": malformed,
        "latest_change_number": latest,
        "latest_change_source": latest_source,
    }
    if not brokers:  # nothing to compare: every finding is empty
        if examples is not None:
            malformed["examples"] = _examples(examples.collect())
        doc.update(_no_findings(options, expected))
        return doc

    dynamic = set(stats["dynamic"])
    frames = Frames(
        spark=spark,
        options=options,
        latest=latest,
        expected=expected,
        brokers=brokers,
        own=table.filter(f"kind = '{KIND_OWN}'").select("name", "value", "source", "brokers"),
        entities=table.filter(f"kind = '{KIND_ENTITY}'").select("path", "name", "value", "brokers"),
        dynamic_names=tuple(sorted(dynamic)),
        static_names=tuple(sorted(set(stats["own_names"]) - dynamic)),
        keep=keep,
        prepared={name: future.result() for name, future in preparing.items()},
    )
    doc.update(_findings(frames, examples, malformed))
    return doc


def _examples(rows: list[Row]) -> list[dict[str, Any]]:
    return [{"file": r["path"], "kind": r["name"], "line": r["value"], "times": r["n"]} for r in rows]


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


def _findings(frames: Frames, examples: DataFrame | None, malformed: dict[str, Any]) -> dict[str, Any]:
    """Every drift class of the registry, in order: its list (cut at the limit), count and cut.

    The classes' queries are planned one after the other, then run at the same time (one
    thread each): each is a few small stages over the cached table, so running them side by
    side overlaps one's planning and scheduling with another's tasks instead of adding them up.
    """
    opts = frames.options
    counts: dict[str, int] = {}
    truncated: dict[str, int] = {}
    out: dict[str, Any] = {}
    classes = [d for d in REGISTRY if d.applies(frames.expected)]
    for drift in classes:
        frames.users.update(drift.shares)
    found = {drift.name: drift.compute(frames) for drift in classes}
    queries: dict[str, Callable[[], Any]] = {}
    for drift in classes:
        result = found[drift.name]
        if isinstance(result, DataFrame):
            frames.found[drift.name] = result
            queries[drift.name] = functools.partial(_bounded, result, drift.order, opts.limit)
    if examples is not None:
        queries["malformed examples"] = examples.collect
    answers = _run_together(queries)
    if examples is not None:
        malformed["examples"] = _examples(answers["malformed examples"])
    for drift in REGISTRY:
        if drift not in classes:
            out[drift.name] = None
            continue
        if drift.name in answers:
            items, total = answers[drift.name]
        else:  # computed on the driver from what the first job brought back
            ordered = sorted(found[drift.name], key=lambda row: tuple(row[k] for k in drift.order))
            items, total = ordered[: opts.limit], len(ordered)
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


def _run_together(queries: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Run Spark actions from one thread each and wait for all; the first failure is raised."""
    if len(queries) <= 1:
        return {name: query() for name, query in queries.items()}
    with ThreadPoolExecutor(max_workers=len(queries), thread_name_prefix="configctl-audit") as pool:
        futures = {name: pool.submit(query) for name, query in queries.items()}
        return {name: future.result() for name, future in futures.items()}


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
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="the applied logs under --snapshots: every interval of disagreement",
    )
    parser.add_argument("--since", default=None, help="with --timeline: from T (ISO-8601 or -2h)")
    parser.add_argument("--until", default=None, help="with --timeline: up to T")
    parser.add_argument("--at", default=None, help="the drift report as of T, from the applied logs")
    parser.add_argument(
        "--digest-key-file",
        default=None,
        help="file holding the fleet's digest key, as the listeners use (else $CONFIGCTL_DIGEST_KEY_FILE); "
        "with --deploy-mode cluster ship it with --files. Never give the key itself on a command line.",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit --py-files configctl.zip configctl/audit/job.py --snapshots URI``."""
    args = _parser().parse_args(argv)
    from configctl.audit.spark import SparkStartError, audit_session

    try:
        expected = read_expected_state(args.desired_state) if args.desired_state else None
        options = AuditOptions(
            limit=args.limit,
            per_broker_keys=tuple(args.per_broker_key),
            file_pattern=args.pattern,
            digest_key=read_digest_key(args.digest_key_file),
        )
    except (ValueError, AuditInputError, InvalidInput) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        moments = {name: _moment(getattr(args, name)) for name in ("since", "until", "at")}
        with audit_session(args.master) as spark:
            if args.timeline or moments["at"] is not None:
                from configctl.audit import timeline

                if args.timeline:
                    window = timeline.Window(moments["since"], moments["until"])
                    doc = timeline.timeline(spark, args.snapshots, window, args.limit, options.digest_key)
                    print(json.dumps(doc, indent=2))
                    return 0
                assert moments["at"] is not None
                doc = timeline.audit_at(spark, args.snapshots, moments["at"], None, options)
            else:
                doc = audit(spark, args.snapshots, expected, options)
    except (AuditInputError, SparkStartError, InvalidInput) as exc:
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


def _moment(text: str | None) -> int | None:
    """A moment given to the spark-submit entry point, in epoch ms (``change:N`` needs ``configctl audit``)."""
    if text is None:
        return None
    from configctl.timeref import parse

    ref = parse(text)
    if ref.at_ms is None:
        raise InvalidInput(f"{text}: give a time here; change:N is read by `configctl audit`")
    return ref.at_ms


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
