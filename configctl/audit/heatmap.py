"""The brokers × keys heatmap: the most drifted keys and the brokers deviating most on them.

Every drift class with a :class:`~configctl.audit.drift.base.Heat` marks cells (a broker
deviates on a key: a non-majority value, a per-broker override, a missed change); a cell
marked by several classes takes the kind of highest priority. Two equal ways to draw it: from the
findings frames in Spark (always exact), or from the listed findings on the driver when none was
cut short (saves three Spark jobs).

Stale brokers are one root cause each (the change they stopped at), and a stale broker misses
every key that changed since: ranked with the others they would fill every row and drown the
rest of the drift. So the rows (``brokers``) go first to the brokers that are *not* stale; stale
brokers take only the rows left over (flagged ``stale``), and the rest of them are folded into
``stale_groups``, one row per change they stopped at (present when some stale broker deviating
on a key shown has no row of its own). Every deviating broker is in exactly one of the two.
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
    latest = frames.latest
    stopped = {b: cn for b, cn in frames.brokers if latest is not None and cn < latest}
    is_stale = F.col("broker_id").isin(list(stopped))
    top_brokers = _most_cells(
        on_top.filter(~is_stale) if stopped else on_top, "broker_id", opts.heatmap_brokers
    )
    left = opts.heatmap_brokers - len(top_brokers)
    top_stale = _most_cells(on_top.filter(is_stale), "broker_id", left) if stopped and left > 0 else []
    rows = sorted((r["broker_id"], r["n"]) for r in top_brokers) + sorted(
        (r["broker_id"], r["n"]) for r in top_stale
    )
    shown = on_top.filter(F.col("broker_id").isin([b for b, _ in rows] + list(stopped)))
    prio = {(r["broker_id"], r["key"]): r["prio"] for r in shown.collect()}
    return _document([(r["key"], r["n"]) for r in top_keys], rows, prio, stopped, kind_of_priority())


def _document(
    top_keys: list[tuple[str, int]],
    rows: list[tuple[int, int]],
    prio: dict[tuple[int, str], int],
    stopped: dict[int, int],
    kinds: dict[int, str],
) -> dict[str, Any]:
    """The heatmap document from its ranked keys and rows, every cell's priority and the stale brokers."""
    key_names = [k for k, _ in top_keys]
    out: dict[str, Any] = {
        "keys": [{"key": k, "brokers": n} for k, n in top_keys],
        "brokers": [{"broker_id": b, "deviations": n, "stale": b in stopped} for b, n in rows],
        "cells": [[kinds[prio[(b, k)]] if (b, k) in prio else None for k in key_names] for b, _ in rows],
    }
    in_rows = {b for b, _ in rows}
    groups: dict[int, list[int]] = {}
    for broker, change in stopped.items():
        if broker not in in_rows and any((broker, k) in prio for k in key_names):
            groups.setdefault(change, []).append(broker)
    if groups:
        out["stale_groups"] = [
            {
                "change_number": change,
                "brokers": sorted(ids),
                "cells": [
                    kinds[max(prio[(b, k)] for b in ids if (b, k) in prio)]
                    if any((b, k) in prio for b in ids)
                    else None
                    for k in key_names
                ],
            }
            for change, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        ]
    return out


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
    chosen = {k for k, _ in top_keys}
    stopped = {item["broker_id"]: item["change_number"] for item in doc["stale_brokers"]}
    per_broker = Counter(broker for broker, key in cells if key in chosen)
    fresh = _most(Counter({b: n for b, n in per_broker.items() if b not in stopped}), max_brokers)
    left = max_brokers - len(fresh)
    stale = _most(Counter({b: n for b, n in per_broker.items() if b in stopped}), left) if left > 0 else []
    rows = sorted(fresh) + sorted(stale)
    prio = {bk: p for bk, p in cells.items() if bk[1] in chosen}
    return _document(top_keys, rows, prio, stopped, kind_of_priority())


def cut_short(doc: dict[str, Any]) -> bool:
    """True when some listed finding is incomplete (a list, a value list or a broker list was cut)."""
    if any(doc["truncated"].values()):
        return True
    for d in REGISTRY:
        for item in doc.get(d.name) or []:
            if "values_truncated" in item or any("brokers_truncated" in v for v in item.get("values", ())):
                return True
    return False
