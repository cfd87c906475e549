"""``per_broker_overrides``: every broker key set in ``brokers/<id>``.

Listed, never drift: a per-broker override is a deliberate setting in ZooKeeper.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from configctl.audit import sql
from configctl.audit.drift.base import DriftClass, Frames, Heat
from configctl.sources import DYNAMIC_BROKER_CONFIG


def compute(frames: Frames) -> DataFrame:
    return frames.own.filter(f"source = {sql.text(DYNAMIC_BROKER_CONFIG)}").selectExpr(
        "explode(brokers) AS broker_id", "name", "value"
    )


def to_json(row: Row, frames: Frames) -> dict[str, Any]:
    return row.asDict()


def _cells(df: DataFrame) -> DataFrame:
    return df.select("broker_id", F.col("name").alias("key"))


def _cells_from_json(items: Iterable[dict[str, Any]]) -> Iterator[tuple[int, str]]:
    for item in items:
        yield item["broker_id"], item["name"]


DRIFT = DriftClass(
    "per_broker_overrides",
    compute,
    ("broker_id", "name", "value"),
    to_json,
    is_drift=False,
    heat=Heat("override", 1, _cells, _cells_from_json),
)
