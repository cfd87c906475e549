"""``stale_brokers``: brokers whose change number is below the newest change.

The newest change is the expected state's (ZooKeeper) when known, else the highest change
number across the snapshots. Stale brokers add no heatmap cells: the heatmap flags them.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from configctl.audit.drift.base import DriftClass, Frames


def compute(frames: Frames) -> DataFrame | None:
    if frames.latest is None:
        return None
    return frames.brokers.filter(F.col("change_number") < F.lit(frames.latest))


def to_json(row: Row, frames: Frames) -> dict[str, Any]:
    assert frames.latest is not None
    return {
        "broker_id": row["broker_id"],
        "change_number": row["change_number"],
        "behind": frames.latest - row["change_number"],
    }


DRIFT = DriftClass("stale_brokers", compute, ("broker_id",), to_json)
