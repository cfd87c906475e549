"""The audit in time: the fleet's applied logs read with Spark (``audit --timeline`` and ``--at``).

Input: the state directories under a path (local, ``hdfs://``, ``s3a://``), each with its
``applied/broker-<id>-<seq>.jsonl`` segments (docs/reference/applied-log.md). Spark reads every
segment whole (one row per file: a segment is at most ``--applied-log-max-bytes``, and a line's
order inside its file is what the rule needs), groups the segments by broker, and parses each
broker's log in order on an executor.

- ``--timeline``: each broker's records become its ``((entity_path, key), event)`` pairs by
  :func:`configctl.travel.timeline.events`; Spark groups them by ``(entity_path, key)`` and folds
  each group with :func:`configctl.travel.timeline.key_intervals`. The interval rule has one
  home, the pure module; this one only distributes it (tests check both give the same answer).
- ``--at T``: each broker's log is folded to T by :func:`configctl.applied.fold` (the fold
  ``describe --effective --at`` uses) and written out as the snapshot lines the broker would
  have had (docs/reference/snapshots.md) for every key its log knows; the ordinary audit
  (:func:`configctl.audit.job.audit_frame`) runs on those rows. A broker whose log does not
  cover T (no ``load`` before T) is left out and listed.

Secrets are digests in the logs already; a value of a sensitive key that is not one (a log
written by hand) is digested on the driver under the fleet's key before it is reported, so
nothing leaves this module in clear.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark import RDD, AccumulatorParam, StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from configctl import applied
from configctl.audit.options import AuditInputError
from configctl.audit.schema import CORRUPT_COLUMN, is_sensitive, snapshot_schema
from configctl.digests import digest, is_digest
from configctl.travel import timeline as rule
from configctl.travel.timeline import Event, Interval

_NULL = "null"
_NO_LOGS = (
    "no applied log under {path}: give the directory holding the listeners' state directories "
    "(their applied/broker-<id>-<seq>.jsonl files)"
)


@dataclass(frozen=True)
class Window:
    """``--since``/``--until`` in epoch milliseconds (None: unbounded)."""

    since_ms: int | None = None
    until_ms: int | None = None


# -- reading ----------------------------------------------------------------------------------------


def read_segments(spark: SparkSession, path: str) -> DataFrame:
    """Every applied-log segment under ``path`` as ``(file, value)``: one row per whole file."""
    from configctl.audit.job import _check_path, _first_line

    _check_path(spark, path)
    try:
        return (
            spark.read.option("recursiveFileLookup", "true")
            .option("pathGlobFilter", applied.SEGMENT_GLOB)
            .option("ignoreMissingFiles", "true")  # a listener deletes its oldest segment while we read
            .text(path, wholetext=True)
            .selectExpr("input_file_name() AS file", "value")
        )
    except PySparkException as exc:
        raise AuditInputError(f"cannot read applied logs at {path}: {_first_line(exc)}") from None


def broker_logs(spark: SparkSession, path: str) -> tuple[RDD[tuple[int, list[applied.Record]]], Any]:
    """Each broker's records, oldest first (its segments in order), and an accumulator of
    ``(lines, skipped, newest applied_at_ms)``: a torn or foreign line is skipped and counted, never fatal.

    The segments are brought together by broker and put in order by the JVM (a repartition and a
    sort within partitions: no file's text is pickled through a Python shuffle), then each
    partition's run of one broker's segments is parsed in Python. Whether a file is a segment is
    :func:`configctl.applied.segment_of`'s to say; the numbers SQL extracts only order them.
    """
    _workers_run_this_python(spark)
    counts = spark.sparkContext.accumulator((0, 0, 0), _Counts())
    segments = read_segments(spark, path).selectExpr(
        "file",
        "value",
        "CAST(regexp_extract(file, 'broker-([0-9]+)-[0-9]+\\.jsonl$', 1) AS INT) AS broker",
        "CAST(regexp_extract(file, '-([0-9]+)\\.jsonl$', 1) AS BIGINT) AS seq",
    )
    ordered = segments.repartition(spark.sparkContext.defaultParallelism, "broker").sortWithinPartitions(
        "broker", "seq", "file"
    )

    def parsed(rows: Iterable[Any]) -> Iterator[tuple[int, list[applied.Record]]]:
        located = ((applied.segment_of(row["file"]), row["value"]) for row in rows)
        mine = ((found[0], text) for found, text in located if found is not None)
        for broker, run in itertools.groupby(mine, key=lambda item: item[0]):
            stats = applied.ReadStats()
            records = [r for _, text in run for r in applied.parse_lines(text, stats)]
            newest = max((r.applied_at_ms for r in records), default=0)
            counts.add((stats.lines, stats.skipped, newest))
            yield broker, records

    return ordered.rdd.mapPartitions(parsed), counts


def _workers_run_this_python(spark: SparkSession) -> None:
    """In local mode, Python workers run this interpreter (the one configctl is installed in).

    The timeline runs the rule in Python workers, which PySpark starts as ``python3`` unless told
    otherwise: another interpreter, without configctl, wherever the command is not run from the
    source tree. ``PYSPARK_PYTHON`` (or spark-submit's ``spark.pyspark.python``) still wins; on a
    cluster the executors' interpreter is the operator's to set, with ``--py-files configctl.zip``.
    """
    context = spark.sparkContext
    local = context.master.startswith("local")
    if local and "PYSPARK_PYTHON" not in os.environ and not context.getConf().get("spark.pyspark.python"):
        context.pythonExec = sys.executable


class _Counts(AccumulatorParam):
    """Adds ``(lines, skipped)`` and keeps the newest time."""

    def zero(self, value: tuple[int, int, int]) -> tuple[int, int, int]:
        return (0, 0, 0)

    def addInPlace(  # Spark's name
        self, a: tuple[int, int, int], b: tuple[int, int, int]
    ) -> tuple[int, int, int]:
        return (a[0] + b[0], a[1] + b[1], max(a[2], b[2]))


def first_applied_ms(logs: RDD[tuple[int, list[applied.Record]]], change: int) -> int | None:
    """When change ``change`` first took effect on any broker (what ``change:N`` means here)."""
    times = logs.flatMap(
        lambda item: [
            r.applied_at_ms for r in item[1] if r.change_number == change and r.kind == applied.APPLIED
        ]
    )
    return None if times.isEmpty() else int(times.min())


# -- the timeline ----------------------------------------------------------------------------------


def intervals_rdd(logs: RDD[tuple[int, list[applied.Record]]], window: Window) -> RDD[Interval]:
    """The disagreement intervals overlapping ``window``: events per broker, grouped by
    ``(entity_path, key)``, each group folded by the pure rule. Events cross the shuffle as plain
    tuples (a dataclass pickles several times slower)."""
    since, until = window.since_ms, window.until_ms
    return (
        logs.flatMap(
            lambda item: (
                (pair, (e.at_ms, e.broker_id, e.change_number, e.value, e.known))
                for pair, e in rule.events(item[1])
            )
        )
        .groupByKey()
        .flatMap(lambda group: rule.key_intervals(*group[0], (Event(*fields) for fields in group[1])))
        .filter(lambda interval: rule.overlaps(interval, since, until))
    )


def timeline(
    spark: SparkSession,
    path: str,
    window: Window,
    limit: int = 1000,
    digest_key: bytes | None = None,
) -> dict[str, Any]:
    """The ``audit --timeline`` document: ``{"intervals": [...]}`` oldest first, cut at ``limit``,
    with how many brokers and lines were read, lines skipped and intervals left out."""
    logs, counts = broker_logs(spark, path)
    logs = logs.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        found = intervals_rdd(logs, window).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            listed = found.takeOrdered(limit + 1, key=rule.order)
            total = len(listed) if len(listed) <= limit else found.count()
            brokers = logs.count()
        finally:
            found.unpersist()
    except PySparkException as exc:
        from configctl.audit.job import _first_line

        raise AuditInputError(f"the timeline failed: {_first_line(exc)}") from None
    finally:
        logs.unpersist()
    if not brokers:
        raise AuditInputError(_NO_LOGS.format(path=path))
    lines, skipped, newest = counts.value
    return {
        "since_ms": window.since_ms,
        "until_ms": window.until_ms,
        "logs_end_ms": newest or None,
        "brokers": brokers,
        "lines": lines,
        "skipped_lines": skipped,
        "intervals": [shown(i, digest_key) for i in listed[:limit]],
        "intervals_truncated": max(0, total - limit),
    }


def shown(interval: Interval, digest_key: bytes | None) -> dict[str, Any]:
    """An interval's JSON, a sensitive key's values as digests whatever the log held."""
    document = interval.to_json()
    if is_sensitive(interval.key):
        document["values"] = {
            (value if value == _NULL or is_digest(value) else digest(value, digest_key)): brokers
            for value, brokers in document["values"].items()
        }
    return document


# -- the drift report as of a moment ---------------------------------------------------------------


def snapshot_rows(broker: int, records: list[applied.Record], at_ms: int) -> list[tuple[Any, ...]]:
    """The snapshot lines broker ``broker`` would have had at ``at_ms``, for each key its log
    knows then (none when its log does not cover ``at_ms``). A secret not in digest form is
    withheld (null): the driver alone holds the fleet's key."""
    folded = applied.fold(records, at_ms)
    if not folded.covers(at_ms):
        return []
    number = folded.last_change if folded.last_change is not None else 0
    rows = []
    for (path, key), ran in sorted(folded.values.items()):
        value = ran.value
        if value is not None and is_sensitive(key) and not is_digest(value):
            value = None
        rows.append((broker, number, path, key, value, ran.source or "UNKNOWN", at_ms))
    return rows


def audit_at(
    spark: SparkSession, path: str, at_ms: int, expected: Any = None, options: Any = None
) -> dict[str, Any]:
    """The drift report as of ``at_ms`` from the applied logs, plus ``at_ms`` and the brokers
    whose logs do not reach back that far (``uncovered_brokers``: left out of the report)."""
    from configctl.audit.job import _first_line, audit_frame

    logs, _ = broker_logs(spark, path)
    logs = logs.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        covered = dict(logs.map(lambda item: (item[0], applied.fold(item[1], at_ms).covers(at_ms))).collect())
        if not covered:
            raise AuditInputError(_NO_LOGS.format(path=path))
        uncovered = sorted(broker for broker, yes in covered.items() if not yes)
        rows = logs.flatMap(lambda item: snapshot_rows(item[0], item[1], at_ms))
        fields = StructType([f for f in snapshot_schema().fields if f.name != CORRUPT_COLUMN])
        frame = spark.createDataFrame(rows, fields).selectExpr(
            "*", *(f"CAST(NULL AS STRING) AS {name}" for name in (CORRUPT_COLUMN, "_bad", "_file"))
        )
        doc = audit_frame(spark, frame, expected, options)
    except PySparkException as exc:
        raise AuditInputError(f"the audit at {at_ms} failed: {_first_line(exc)}") from None
    finally:
        logs.unpersist()
    return {"at_ms": at_ms, **doc, "uncovered_brokers": uncovered}
