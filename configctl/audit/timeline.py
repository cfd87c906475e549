"""The audit in time: the fleet's applied logs read with Spark (``audit --timeline`` and ``--at``).

Input: the state directories under a path (local, ``hdfs://``, ``s3a://``), each with its
``applied/broker-<id>-<seq>.jsonl`` segments (docs/reference/applied-log.md). Spark reads every
segment whole (one row per file: a segment is at most ``--applied-log-max-bytes``, and a line's
order inside its file is what the rule needs), groups the segments by broker, and parses each
broker's log in order on an executor.

- ``--timeline``: each broker's lines become its ``((entity_path, key), event)`` pairs by
  :func:`configctl.travel.timeline.light_events`; Spark groups them by ``(entity_path, key)`` and
  folds each group with :func:`configctl.travel.timeline.key_intervals`. The interval rule has one
  home, the pure module; this one only distributes it (tests check both give the same answer).
  Every line of the fleet crosses Python once: read as a plain tuple
  (:func:`configctl.applied.scan_lines`, no record object), turned into events, and each broker's
  events of one key shipped as one list; nothing is cached, and one action gives both the
  intervals listed and how many there are.
- ``--at T``: each broker's log is folded to T by :func:`configctl.applied.fold` (the fold
  ``describe --effective --at`` uses) and written out as the snapshot lines the broker would
  have had (docs/reference/snapshots.md) for every key its log knows; the ordinary audit
  (:func:`configctl.audit.run.audit_frame`) runs on those rows. A broker whose log does not
  cover T (no ``load`` before T) is left out and listed.

Secrets are digests in the logs already; a value of a sensitive key that is not one (a log
written by hand) is digested on the driver under the fleet's key before it is reported, so
nothing leaves this module in clear.
"""

from __future__ import annotations

import heapq
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
from configctl.audit.spark_input import check_path, first_line
from configctl.digests import digest, is_digest
from configctl.travel import timeline as rule
from configctl.travel.timeline import Interval, Move

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
    check_path(spark, path)
    try:
        return (
            spark.read.option("recursiveFileLookup", "true")
            .option("pathGlobFilter", applied.SEGMENT_GLOB)
            .option("ignoreMissingFiles", "true")  # a listener deletes its oldest segment while we read
            .text(path, wholetext=True)
            .selectExpr("input_file_name() AS file", "value")
        )
    except PySparkException as exc:
        raise AuditInputError(f"cannot read applied logs at {path}: {first_line(exc)}") from None


def _ordered_segments(spark: SparkSession, path: str) -> DataFrame:
    """The segments brought together by broker and put in order by the JVM (a repartition and a
    sort within partitions: no file's text is pickled through a Python shuffle), so each
    partition holds whole brokers, each one's segments in sequence order. Whether a file is a
    segment is :func:`configctl.applied.segment_of`'s to say; the numbers SQL extracts only order them.
    """
    _workers_run_this_python(spark)
    segments = read_segments(spark, path).selectExpr(
        "file",
        "value",
        "CAST(regexp_extract(file, 'broker-([0-9]+)-[0-9]+\\.jsonl$', 1) AS INT) AS broker",
        "CAST(regexp_extract(file, '-([0-9]+)\\.jsonl$', 1) AS BIGINT) AS seq",
    )
    return segments.repartition(spark.sparkContext.defaultParallelism, "broker").sortWithinPartitions(
        "broker", "seq", "file"
    )


def _runs(rows: Iterable[Any]) -> Iterator[tuple[int, Iterator[tuple[int, str]]]]:
    """A partition's rows as ``(broker, its segments' texts in order)``."""
    located = ((applied.segment_of(row[0]), row[1]) for row in rows)
    mine = ((found[0], text) for found, text in located if found is not None)
    return itertools.groupby(mine, key=lambda item: item[0])


def broker_logs(spark: SparkSession, path: str) -> tuple[RDD[tuple[int, list[applied.Record]]], Any]:
    """Each broker's records, oldest first (its segments in order), and an accumulator of
    ``(lines, skipped, newest applied_at_ms, brokers)``: a torn or foreign line is skipped and
    counted, never fatal."""
    counts = spark.sparkContext.accumulator((0, 0, 0, 0), _Counts())

    def parsed(rows: Iterable[Any]) -> Iterator[tuple[int, list[applied.Record]]]:
        for broker, run in _runs(rows):
            stats = applied.ReadStats()
            records = [r for _, text in run for r in applied.parse_lines(text, stats)]
            newest = max((r.applied_at_ms for r in records), default=0)
            counts.add((stats.lines, stats.skipped, newest, 1))
            yield broker, records

    return _ordered_segments(spark, path).rdd.mapPartitions(parsed), counts


def broker_moves(spark: SparkSession, path: str) -> tuple[RDD[tuple[tuple[str, str], list[Move]]], Any]:
    """Each broker's events by ``(entity_path, key)``: one ``(pair, [event, ...])`` row per broker
    and key, each event a plain :data:`configctl.travel.timeline.Move` tuple; and the accumulator
    of :func:`broker_logs`. The timeline's one pass over every line in Python, so nothing is
    built that the rule does not read: no record object, no event object, no row per event
    through the shuffle (one list per broker and key)."""
    counts = spark.sparkContext.accumulator((0, 0, 0, 0), _Counts())

    def moved(rows: Iterable[Any]) -> Iterator[tuple[tuple[str, str], list[Move]]]:
        for _, run in _runs(rows):
            stats = applied.ReadStats()
            lines = [line for _, text in run for line in applied.scan_lines(text, stats)]
            grouped: dict[tuple[str, str], list[Move]] = {}
            for pair, move in rule.light_events(lines):
                found = grouped.get(pair)
                if found is None:
                    grouped[pair] = [move]
                else:
                    found.append(move)
            newest = max((line[4] for line in lines), default=0)
            counts.add((stats.lines, stats.skipped, newest, 1))
            yield from grouped.items()

    return _ordered_segments(spark, path).rdd.mapPartitions(moved), counts


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
    """Adds ``(lines, skipped, _, brokers)`` and keeps the newest time."""

    def zero(self, value: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        return (0, 0, 0, 0)

    def addInPlace(  # Spark's name
        self, a: tuple[int, int, int, int], b: tuple[int, int, int, int]
    ) -> tuple[int, int, int, int]:
        return (a[0] + b[0], a[1] + b[1], max(a[2], b[2]), a[3] + b[3])


def first_applied_ms(logs: RDD[tuple[int, list[applied.Record]]], change: int) -> int | None:
    """When change ``change`` first took effect on any broker (what ``change:N`` means here)."""
    times = logs.flatMap(
        lambda item: [
            r.applied_at_ms for r in item[1] if r.change_number == change and r.kind == applied.APPLIED
        ]
    )
    return None if times.isEmpty() else int(times.min())


# -- the timeline ----------------------------------------------------------------------------------


def intervals_rdd(moves: RDD[tuple[tuple[str, str], list[Move]]], window: Window) -> RDD[Interval]:
    """The disagreement intervals overlapping ``window``: every broker's events of one
    ``(entity_path, key)`` brought together and folded by the pure rule."""
    since, until = window.since_ms, window.until_ms
    return (
        moves.groupByKey()
        .flatMap(lambda group: rule.key_intervals(*group[0], itertools.chain.from_iterable(group[1])))
        .filter(lambda interval: rule.overlaps(interval, since, until))
    )


def first_intervals(found: RDD[Interval], limit: int) -> tuple[list[Interval], int]:
    """The first ``limit`` intervals in :func:`configctl.travel.timeline.order` (or one more, to
    tell a cut list from a whole one) and how many there are, in one pass: each partition sends
    its own first ones and its count, so the intervals are found once (no cache, no second job)."""

    def firsts(intervals: Iterable[Interval]) -> Iterator[tuple[int, list[Interval]]]:
        everyone = list(intervals)
        yield len(everyone), heapq.nsmallest(limit + 1, everyone, key=rule.order)

    parts = found.mapPartitions(firsts).collect()
    listed = heapq.nsmallest(limit + 1, itertools.chain.from_iterable(p[1] for p in parts), key=rule.order)
    return listed, sum(p[0] for p in parts)


def timeline(
    spark: SparkSession,
    path: str,
    window: Window,
    limit: int = 1000,
    digest_key: bytes | None = None,
) -> dict[str, Any]:
    """The ``audit --timeline`` document: ``{"intervals": [...]}`` oldest first, cut at ``limit``,
    with how many brokers and lines were read, lines skipped and intervals left out."""
    moves, counts = broker_moves(spark, path)
    try:
        listed, total = first_intervals(intervals_rdd(moves, window), limit)
    except PySparkException as exc:
        raise AuditInputError(f"the timeline failed: {first_line(exc)}") from None
    lines, skipped, newest, brokers = counts.value
    if not brokers:
        raise AuditInputError(_NO_LOGS.format(path=path))
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
    # Here, not at the top: the drift classes load for this report alone, never for --timeline.
    from configctl.audit.run import audit_frame

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
        raise AuditInputError(f"the audit at {at_ms} failed: {first_line(exc)}") from None
    finally:
        logs.unpersist()
    return {"at_ms": at_ms, **doc, "uncovered_brokers": uncovered}
