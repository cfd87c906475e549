"""``divergent``: cluster-wide keys on which the brokers disagree.

Topics, clients, users and ips are compared by entity path and key, a broker without a line
holding ``null``. Broker keys are compared by name, reported under ``brokers/<default>``,
when at least one broker takes the key from there; brokers setting it per broker are left out
(they are ``per_broker_overrides``). Keys per broker by nature never count.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from configctl.audit.drift.base import DriftClass, Frames, Heat
from configctl.audit.drift.groups import (
    VALUE_GROUPS,
    disagreements,
    entry,
    minority_cells,
    minority_cells_from_json,
    value_groups,
)
from configctl.audit.schema import BROKER_DEFAULT_PATH


def compute(frames: Frames) -> DataFrame:
    return disagreements(frames.shared(VALUE_GROUPS, value_groups))


def to_json(row: Row, frames: Frames) -> dict[str, Any]:
    return entry(row, frames.options, with_path=True)


def _key(item: dict[str, Any]) -> str:
    path, name = item["entity_path"], item["name"]
    return name if path == BROKER_DEFAULT_PATH else f"{path} {name}"


def _label() -> Column:
    return F.when(F.col("path") == BROKER_DEFAULT_PATH, F.col("name")).otherwise(
        F.concat_ws(" ", F.col("path"), F.col("name"))
    )


DRIFT = DriftClass(
    "divergent",
    compute,
    ("path", "name"),
    to_json,
    shares=(VALUE_GROUPS,),
    heat=Heat("divergent", 3, minority_cells(_label), minority_cells_from_json(_key)),
)
