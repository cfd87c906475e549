"""``stale_brokers``: brokers whose change number is below the newest change.

The newest change is the expected state's (ZooKeeper) when known, else the highest change
number across the snapshots. Every broker's change number is already on the driver (one per
broker, from the audit's first job), so this needs no Spark job. Stale brokers add no heatmap
cells: the heatmap flags them.
"""

from __future__ import annotations

from typing import Any

from configctl.audit.drift.base import DriftClass, Frames


def compute(frames: Frames) -> list[dict[str, Any]]:
    latest = frames.latest
    if latest is None:
        return []
    return [{"broker_id": b, "change_number": cn} for b, cn in frames.brokers if cn < latest]


def to_json(row: dict[str, Any], frames: Frames) -> dict[str, Any]:
    assert frames.latest is not None
    return {
        "broker_id": row["broker_id"],
        "change_number": row["change_number"],
        "behind": frames.latest - row["change_number"],
    }


DRIFT = DriftClass("stale_brokers", compute, ("broker_id",), to_json)
