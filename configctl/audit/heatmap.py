"""The brokers × keys heatmap: the most drifted keys and the brokers deviating most on them.

Every drift class with a :class:`~configctl.audit.drift.base.Heat` marks cells (a broker
deviates on a key: a non-majority value, a per-broker override, a missed change); a cell
marked by several classes takes the kind of highest priority. Stale brokers are flagged per
row. Two equal ways to draw it: from the findings frames in Spark (always exact), or from the
listed findings on the driver when none was cut short (saves three Spark jobs).
"""

from __future__ import annotations

from collections import Counter
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from configctl.audit.drift import REGISTRY, Frames

EMPTY: dict[str, Any] = {"keys": [], "brokers": [], "cells": []}


def kind_of_priority() -> dict[int, str]:
    return {d.heat.priority: d.heat.kind for d in REGISTRY if d.heat is not None}


def heatmap_in_spark(frames: Frames) -> dict[str, Any]:
    """The heatmap computed from every drift class's findings frame (``frames.found``)."""
    opts = frames.options
    parts = [
        d.heat.cells(frames.found[d.name]).select("broker_id", "key", F.lit(d.heat.priority).alias("prio"))
        for d in REGISTRY
        if d.heat is not None and d.name in frames.found
    ]
    if not parts:
        return dict(EMPTY)
    cells = reduce(DataFrame.unionByName, parts).groupBy("broker_id", "key").agg(F.max("prio").alias("prio"))
    cells = frames.keep(cells)
    top_keys = _most_cells(cells, "key", opts.heatmap_keys)
    if not top_keys:
        return dict(EMPTY)
    key_names = [r["key"] for r in top_keys]
    on_top = cells.filter(F.col("key").isin(key_names))
    top_brokers = _most_cells(on_top, "broker_id", opts.heatmap_brokers)
    broker_ids = sorted(r["broker_id"] for r in top_brokers)
    latest = frames.latest
    stale_ids = {b for b, cn in frames.brokers if latest is not None and cn < latest}
    kinds = kind_of_priority()
    found = {
        (r["broker_id"], r["key"]): kinds[r["prio"]]
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


def _most_cells(cells: DataFrame, column: str, limit: int) -> list[Any]:
    """The ``limit`` values of ``column`` with the most cells (rows ``column``, ``n``), ties by value."""
    return (
        cells.groupBy(column)
        .agg(F.count(F.lit(1)).alias("n"))
        .orderBy(F.desc("n"), column)
        .limit(limit)
        .collect()
    )


def _most(counts: Counter[Any], limit: int) -> list[tuple[Any, int]]:
    """:func:`_most_cells` on the driver: the ``limit`` most counted, ties by value."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


def heatmap_from_findings(doc: dict[str, Any], max_keys: int, max_brokers: int) -> dict[str, Any]:
    """The same heatmap as :func:`heatmap_in_spark`, from complete (uncut) findings on the driver."""
    cells: dict[tuple[int, str], int] = {}
    for d in REGISTRY:
        if d.heat is None:
            continue
        for broker, key in d.heat.cells_from_json(doc.get(d.name) or []):
            cells[(broker, key)] = max(cells.get((broker, key), 0), d.heat.priority)
    top_keys = _most(Counter(key for _, key in cells), max_keys)
    if not top_keys:
        return dict(EMPTY)
    key_names = [k for k, _ in top_keys]
    chosen = set(key_names)
    per_broker = Counter(broker for broker, key in cells if key in chosen)
    top_brokers = _most(per_broker, max_brokers)
    broker_ids = sorted(b for b, _ in top_brokers)
    stale = {item["broker_id"] for item in doc["stale_brokers"]}
    kinds = kind_of_priority()
    return {
        "keys": [{"key": k, "brokers": n} for k, n in top_keys],
        "brokers": [{"broker_id": b, "deviations": per_broker[b], "stale": b in stale} for b in broker_ids],
        "cells": [[kinds[cells[(b, k)]] if (b, k) in cells else None for k in key_names] for b in broker_ids],
    }


def cut_short(doc: dict[str, Any]) -> bool:
    """True when some listed finding is incomplete (a list, a value list or a broker list was cut)."""
    if any(doc["truncated"].values()):
        return True
    for d in REGISTRY:
        for item in doc.get(d.name) or []:
            if "values_truncated" in item or any("brokers_truncated" in v for v in item.get("values", ())):
                return True
    return False
