"""The one shape every drift class has, and the frames they are all computed from.

A drift class is a name (its key in the audit document), how its findings are computed from
the condensed snapshot table, the order its list is sorted and cut in, how one row becomes
JSON, whether it counts as drift, and what it adds to the brokers × keys heatmap. The job
runs whatever :data:`configctl.audit.drift.REGISTRY` lists; nothing else names the classes
one by one except the renderers (each has its own table).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from configctl.audit.expected import ExpectedState
from configctl.audit.options import AuditOptions


@dataclass
class Frames:
    """What drift classes read: the condensed input cut by kind, what the first job brought back,
    and intermediates they share.

    ``own`` holds the lines about brokers' own keys (name, value, source, brokers: the sorted
    ids saying it); ``entities`` the lines about cluster-wide entities (path, name, value,
    brokers). Small answers are plain data on the driver: ``brokers`` (every broker's id and
    change number, by id), ``dynamic_names`` (broker keys some broker takes from
    ``brokers/<default>``) and ``static_names`` (the other broker keys), per-broker-by-nature
    keys left out of both. ``found`` collects each class's findings frame (the heatmap reads it).
    """

    spark: SparkSession
    options: AuditOptions
    latest: int | None
    expected: ExpectedState | None
    brokers: tuple[tuple[int, int], ...]
    own: DataFrame
    entities: DataFrame
    dynamic_names: tuple[str, ...]
    static_names: tuple[str, ...]
    keep: Callable[[DataFrame], DataFrame]  # persist for the rest of the audit
    prepared: dict[str, Any] = field(default_factory=dict)  # each class's ``prepare`` result
    found: dict[str, DataFrame] = field(default_factory=dict)
    users: Counter[str] = field(default_factory=Counter)
    _shared: dict[str, DataFrame] = field(default_factory=dict)

    @property
    def n_brokers(self) -> int:
        return len(self.brokers)

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(b for b, _ in self.brokers)

    def all_brokers_sql(self) -> str:
        """Every broker id, sorted, as a literal SQL array (no join or broadcast needed to use it)."""
        return f"array({', '.join(str(b) for b in self.broker_ids)})"

    def rows_table(self, rows: Iterable[tuple[Any, ...]], columns: tuple[tuple[str, str], ...]) -> DataFrame:
        """See :meth:`Inputs.rows_table`."""
        return Inputs(self.spark, self.options, self.expected, self.keep).rows_table(rows, columns)

    def shared(self, name: str, make: Callable[[Frames], DataFrame], *, cache: bool = True) -> DataFrame:
        """An intermediate several classes read, made once; cached when more than one class uses it.

        ``users`` counts the classes of this run that declared ``name`` in their ``shares``.
        """
        if name not in self._shared:
            df = make(self)
            if cache and self.users[name] > 1:
                df = self.keep(df)
            self._shared[name] = df
        return self._shared[name]


@dataclass(frozen=True)
class Inputs:
    """What a drift class may use before the snapshots are condensed: the audit's inputs alone."""

    spark: SparkSession
    options: AuditOptions
    expected: ExpectedState | None
    keep: Callable[[DataFrame], DataFrame]

    def rows_table(self, rows: Iterable[tuple[Any, ...]], columns: tuple[tuple[str, str], ...]) -> DataFrame:
        """Rows made on the driver as a small DataFrame (``columns``: (name, Spark SQL type) pairs).

        Sent as one JSON text and unpacked in the JVM. ``createDataFrame`` on a Python list
        would start Python worker processes to unpickle it (seconds on the first use, and
        Python on every executor of a cluster); this needs neither.
        """
        names = [name for name, _ in columns]
        text = json.dumps([dict(zip(names, row, strict=True)) for row in rows])
        fields = ", ".join(f"{name}: {kind}" for name, kind in columns)
        return self.spark.range(1).select(F.inline(F.from_json(F.lit(text), f"array<struct<{fields}>>")))


@dataclass(frozen=True)
class Heat:
    """What a drift class adds to the heatmap: cells of one kind, computed in Spark or from its JSON.

    ``cells`` maps the class's findings frame to rows (broker_id, key); ``cells_from_json``
    yields the same pairs from the listed findings (used when no list was cut short). A cell
    several classes mark takes the kind of highest ``priority``.
    """

    kind: str
    priority: int
    cells: Callable[[DataFrame], DataFrame]
    cells_from_json: Callable[[Iterable[dict[str, Any]]], Iterator[tuple[int, str]]]


@dataclass(frozen=True)
class DriftClass:
    """One kind of finding in the audit document."""

    name: str
    # A DataFrame of findings, or rows (dicts) computed on the driver from ``Frames``' plain data;
    # a class with ``heat`` returns a DataFrame.
    compute: Callable[[Frames], DataFrame | list[dict[str, Any]]]
    order: tuple[str, ...]  # the natural key the list is sorted and cut by (a total order)
    to_json: Callable[[Any, Frames], dict[str, Any]]  # a Row, or a dict from the driver
    # Work that needs only the audit's inputs (e.g. the expected state as a Spark table), run in
    # a thread while the snapshots are being condensed; its result is ``Frames.prepared[name]``.
    prepare: Callable[[Inputs], Any] | None = None
    is_drift: bool = True  # counts for the verdict and --fail-on-drift
    needs_expected: bool = False  # without an expected state the finding is null, not []
    shares: tuple[str, ...] = ()  # Frames.shared intermediates it reads
    heat: Heat | None = None

    def applies(self, frames_expected: ExpectedState | None) -> bool:
        return not self.needs_expected or frames_expected is not None
