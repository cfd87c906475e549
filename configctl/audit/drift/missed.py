"""``missed_changes``: brokers whose effective value differs from the expected state.

Only with an expected state (ZooKeeper or a desired-state file); without one the finding is
``null``. The matching rules are :mod:`configctl.audit.expected`'s: ``brokers/<id>`` beats
``brokers/<default>``, no expectation means "not set dynamically" when the state is complete,
a sensitive broker key without an expectation is not judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from configctl.audit import sql
from configctl.audit.drift.base import DriftClass, Frames, Heat, Inputs
from configctl.audit.drift.groups import VALUE_GROUPS, value_groups
from configctl.audit.expected import ExpectedState, snapshot_form
from configctl.audit.schema import BROKER_DEFAULT_PATH, sensitive_name_regex
from configctl.sources import DYNAMIC_BROKER_SOURCES

_BROKER_PATH = re.compile(r"^brokers/([0-9]+)$")
DRIFT_NAME = "missed_changes"
COLUMNS = ("broker_id", "entity_path", "name", "expected_value", "actual_value")

_GENERAL_SCHEMA = (("path", "string"), ("name", "string"), ("exp_value", "string"), ("has_exp", "boolean"))
_SPECIFIC_SCHEMA = (
    ("broker_id", "int"),
    ("entity_path", "string"),
    ("name", "string"),
    ("expected_value", "string"),
)
_CHOSEN_SCHEMA = (("broker_id", "int"), ("name", "string"), ("exp_value", "string"))


def _pick(values: list[str | None]) -> str | None:
    """One value among expectations for the same key: ``null`` first, then the smallest (deterministic)."""
    return min(values, key=lambda v: (v is not None, v or ""))


@dataclass
class _Expectations:
    """The expected state cut the way the comparisons need it.

    Broker keys are matched by name on the broker's own lines; ``brokers/<id>`` as a path
    implies that broker. Done on the driver, where the expected state is; expectations for one
    broker only count for brokers the snapshots have (known once the first job is back).
    """

    general_entities: dict[tuple[str, str], list[str | None]] = field(default_factory=dict)
    specific_entities: dict[tuple[int, str, str], list[str | None]] = field(default_factory=dict)
    general_brokers: dict[str, list[str | None]] = field(default_factory=dict)
    specific_brokers: dict[tuple[int, str], list[str | None]] = field(default_factory=dict)

    @classmethod
    def of(cls, state: ExpectedState, digest_key: bytes | None = None) -> _Expectations:
        cut = cls()
        for e in state.expected:
            value = snapshot_form(e.name, e.value, digest_key)
            broker_id = e.broker_id
            if e.entity_path.startswith("brokers/"):
                match = _BROKER_PATH.match(e.entity_path)
                if broker_id is None and match:
                    broker_id = int(match.group(1))
                if broker_id is None:
                    cut.general_brokers.setdefault(e.name, []).append(value)
                else:
                    cut.specific_brokers.setdefault((broker_id, e.name), []).append(value)
            elif broker_id is None:
                cut.general_entities.setdefault((e.entity_path, e.name), []).append(value)
            else:
                cut.specific_entities.setdefault((broker_id, e.entity_path, e.name), []).append(value)
        return cut

    def chosen_broker_keys(self, brokers: tuple[int, ...]) -> list[tuple[int, str, str | None]]:
        """Per broker and key, the expectation that applies: brokers/<id> beats brokers/<default>."""
        known = set(brokers)
        chosen = {
            (b, name): _pick(values) for (b, name), values in self.specific_brokers.items() if b in known
        }
        for name, values in self.general_brokers.items():
            value = _pick(values)
            for b in brokers:
                chosen.setdefault((b, name), value)
        return [(b, name, value) for (b, name), value in sorted(chosen.items())]


@dataclass(frozen=True)
class _Prepared:
    cut: _Expectations
    general: DataFrame  # fleet-wide entity expectations: path, name, exp_value, has_exp (cached)


def prepare(inputs: Inputs) -> _Prepared:
    """The expected state cut, and its fleet-wide entity expectations loaded into Spark, while
    the snapshots are condensed (tens of thousands of keys: the transfer and the parsing need
    nothing from the snapshots, so they cost no wall time there)."""
    state = inputs.expected
    assert state is not None
    cut = _Expectations.of(state, inputs.options.digest_key)
    general = inputs.keep(
        inputs.rows_table(
            (
                (path, name, _pick(values), True)
                for (path, name), values in sorted(cut.general_entities.items())
            ),
            _GENERAL_SCHEMA,
        )
    )
    general.count()  # materialized now, in parallel with the condensing job
    return _Prepared(cut, general)


def compute(frames: Frames) -> DataFrame:
    """Entity keys are read off the per-key value groups (one row per key, not per broker and
    key, so a fleet-wide expectation never has to be multiplied by the number of brokers);
    expectations for one broker and the broker keys (a few hundred per broker) are joined.
    """
    state = frames.expected
    assert state is not None
    prepared: _Prepared = frames.prepared[DRIFT_NAME]
    cut, general = prepared.cut, prepared.general
    known = set(frames.broker_ids)
    entity_groups = frames.shared(VALUE_GROUPS, value_groups).filter(
        f"path != {sql.text(BROKER_DEFAULT_PATH)}"
    )
    results = [_missed_entities(frames, entity_groups, general, state.complete)]

    specific_entities = {k: v for k, v in cut.specific_entities.items() if k[0] in known}
    if specific_entities:
        specific = frames.rows_table(
            # every expectation for the key is checked (a desired state naming two values for one
            # broker's key is contradictory: each value the broker lacks is reported)
            (
                (b, path, name, value)
                for (b, path, name), values in sorted(specific_entities.items())
                for value in values
            ),
            _SPECIFIC_SCHEMA,
        )
        keys = ["broker_id", "entity_path", "name"]
        wanted = specific.selectExpr("entity_path AS path", "name").distinct()
        actual = (
            entity_groups.join(wanted, ["path", "name"], "left_semi")
            .selectExpr("path AS entity_path", "name", "explode(values) AS v")
            .selectExpr("explode(v.brokers) AS broker_id", "entity_path", "name", "v.value AS actual_value")
        )
        # absent brokers sit in the null group
        checked = specific.join(actual, keys, "left").filter("NOT actual_value <=> expected_value")
        results[0] = results[0].join(specific.select(*keys), keys, "left_anti")
        results.append(checked.select(*COLUMNS))

    chosen = frames.rows_table(cut.chosen_broker_keys(frames.broker_ids), _CHOSEN_SCHEMA)
    results.append(_missed_broker_keys(frames, chosen, state.complete))
    return reduce(DataFrame.unionByName, [r.select(*COLUMNS) for r in results])


def _missed_entities(frames: Frames, groups: DataFrame, general: DataFrame, complete: bool) -> DataFrame:
    """Fleet-wide entity expectations against the value groups: every non-matching group's brokers."""
    nobody = (
        "array(named_struct('neg_count', 0, 'is_null', true, 'value', CAST(NULL AS STRING), "
        f"'brokers', {frames.all_brokers_sql()}))"
    )
    joined = groups.join(general, ["path", "name"], "full_outer")
    if not complete:
        joined = joined.filter("has_exp")
    wrong = f"filter(coalesce(values, {nobody}), v -> NOT v.value <=> exp_value)"
    return joined.selectExpr("path", "name", "exp_value", f"explode({wrong}) AS v").selectExpr(
        "explode(v.brokers) AS broker_id",
        "path AS entity_path",
        "name",
        "exp_value AS expected_value",
        "v.value AS actual_value",
    )


def _missed_broker_keys(frames: Frames, chosen: DataFrame, complete: bool) -> DataFrame:
    """Broker keys against the chosen expectation; no expectation means "not set dynamically".

    The expectation and every line a broker has for a key meet in one aggregation per (broker,
    key): a broker with no line holds ``null``; one reporting a key twice is judged per value.
    Expected null ("not set dynamically"), or no expectation when the desired state is
    complete: a line with a dynamic source is wrong. A sensitive key without any expectation is
    not judged: its desired value may be unreadable (an encrypted broker password).
    """
    expectations = chosen.selectExpr(
        "broker_id",
        "name",
        "named_struct('exp_value', exp_value) AS e",
        "CAST(NULL AS STRUCT<value: STRING, source: STRING>) AS a",
    )
    lines = frames.own.selectExpr(
        "explode(brokers) AS broker_id",
        "name",
        "CAST(NULL AS STRUCT<exp_value: STRING>) AS e",
        "named_struct('value', value, 'source', source) AS a",
    )
    per_key = (
        expectations.unionByName(lines)
        .groupBy("broker_id", "name")
        .agg(F.expr("first(e, true) AS e"), F.expr("collect_list(a) AS lines"))
    )
    has_exp = "e IS NOT NULL"
    sensitive = f"name RLIKE {sql.text(sensitive_name_regex())}"
    dynamic = sql.one_of("l.source", DYNAMIC_BROKER_SOURCES)
    wrong = (
        f"CASE WHEN e.exp_value IS NOT NULL THEN NOT l.value <=> e.exp_value "
        f"ELSE ({has_exp} OR {str(complete).lower()}) AND {dynamic} AND ({has_exp} OR NOT {sensitive}) END"
    )
    running = (
        "CASE WHEN size(lines) = 0 THEN "
        "CASE WHEN e.exp_value IS NOT NULL THEN array(CAST(NULL AS STRING)) ELSE CAST(array() AS ARRAY<STRING>) END "
        f"ELSE array_distinct(transform(filter(lines, l -> {wrong}), l -> l.value)) END"
    )
    return per_key.selectExpr(
        "broker_id",
        "concat('brokers/', CAST(broker_id AS STRING)) AS entity_path",
        "name",
        "e.exp_value AS expected_value",
        f"explode({running}) AS actual_value",
    )


def to_json(row: Row, frames: Frames) -> dict[str, Any]:
    return {name: row[name] for name in COLUMNS}


def _cells(df: DataFrame) -> DataFrame:
    return df.selectExpr(
        "broker_id",
        "CASE WHEN startswith(entity_path, 'brokers/') THEN name ELSE concat_ws(' ', entity_path, name) END AS key",
    )


def _cells_from_json(items: Iterable[dict[str, Any]]) -> Iterator[tuple[int, str]]:
    for item in items:
        path, name = item["entity_path"], item["name"]
        yield item["broker_id"], name if path.startswith("brokers/") else f"{path} {name}"


DRIFT = DriftClass(
    DRIFT_NAME,
    compute,
    # a broker reporting one key twice gives two rows: the values make the order total
    COLUMNS,
    to_json,
    prepare=prepare,
    needs_expected=True,
    shares=(VALUE_GROUPS,),
    heat=Heat("missed", 4, _cells, _cells_from_json),
)
