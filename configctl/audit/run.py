"""The config audit, run: which brokers run stale or wrong config, and where the fleet disagrees.

Input: snapshot lines (see docs/reference/snapshots.md), optionally an :class:`ExpectedState`. Output: one JSON-ready
dict (see docs/audit.md). Every finding is computed by Spark; the driver only collects the findings
themselves, each list cut at ``AuditOptions.limit`` (with the number left out), so the audit
behaves the same on three brokers and on thousands.

Why the answers do not depend on partitioning: every aggregation is order-insensitive
(counts, sets of broker ids that are then sorted, maxima), ties are broken by value, and every
list is sorted by its natural key before it is cut.

This module reads the input (:mod:`configctl.audit.reading`), condenses it
(:mod:`configctl.audit.condense`), then runs the drift classes of
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

:func:`audit_frame` is also what the drift report as of a moment runs on the rows the applied
logs give (:func:`configctl.audit.timeline.audit_at`); the spark-submit entry point is
:mod:`configctl.audit.job`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from configctl.audit import sql
from configctl.audit.condense import (
    KIND_BAD,
    KIND_CHANGE,
    KIND_ENTITY,
    KIND_OWN,
    classify,
    condense,
    digest_clear_under_key,
    merge_digested,
)
from configctl.audit.drift import REGISTRY, Frames
from configctl.audit.drift.base import Inputs
from configctl.audit.expected import ExpectedState
from configctl.audit.heatmap import EMPTY, cut_short, heatmap_from_findings, heatmap_in_spark
from configctl.audit.options import AuditInputError, AuditOptions
from configctl.audit.reading import read_snapshots
from configctl.audit.schema import per_broker_regex
from configctl.audit.spark_input import first_line
from configctl.sources import DYNAMIC_DEFAULT_BROKER_CONFIG

__all__ = ["audit", "audit_frame"]


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
    table = keep(classify(condense(raw, keyed), keyed))
    inputs = Inputs(spark, options, expected, keep)
    preparing = [d for d in REGISTRY if d.prepare is not None and d.applies(expected)]
    with ThreadPoolExecutor(max_workers=max(1, len(preparing)), thread_name_prefix="configctl-prep") as pool:
        # What needs only the inputs is prepared while the snapshots are being condensed.
        futures = {d.name: pool.submit(d.prepare, inputs) for d in preparing if d.prepare is not None}
        try:
            return _run(inputs, table, futures)
        except PySparkException as exc:
            raise AuditInputError(f"the audit failed: {first_line(exc)}") from None
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
            table = digest_clear_under_key(inputs, table, options.digest_key)
        table = keep(merge_digested(table))
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
