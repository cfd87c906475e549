"""``static_skew``: server.properties values that differ across brokers.

Broker keys no broker takes from ``brokers/<default>``, compared over the brokers whose value
comes from server.properties or the built-in default (a broker overriding the key in
``brokers/<id>`` is left out). Keys per broker by nature never count.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from configctl.audit import sql
from configctl.audit.drift.base import DriftClass, Frames, Heat
from configctl.audit.drift.groups import (
    disagreements,
    entry,
    group_values,
    minority_cells,
    minority_cells_from_json,
)
from configctl.sources import SERVER_PROPERTIES_SOURCES


def compute(frames: Frames) -> DataFrame:
    rows = frames.own.filter(
        f"{sql.one_of('source', SERVER_PROPERTIES_SOURCES)} AND {sql.one_of('name', frames.static_names)}"
    ).selectExpr("name", "false AS excluded", "value", "brokers")
    return disagreements(group_values(frames, rows, ("name",), False))


def to_json(row: Row, frames: Frames) -> dict[str, Any]:
    return entry(row, frames.options, with_path=False)


DRIFT = DriftClass(
    "static_skew",
    compute,
    ("name",),
    to_json,
    heat=Heat(
        "static",
        2,
        minority_cells(lambda: F.col("name")),
        minority_cells_from_json(lambda item: item["name"]),
    ),
)
