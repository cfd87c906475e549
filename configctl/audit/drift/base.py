"""The one shape every drift class has, and the frames they are all computed from.

A drift class is a name (its key in the audit document), how its findings are computed from
the condensed snapshot table, the order its list is sorted and cut in, how one row becomes
JSON, whether it counts as drift, and what it adds to the brokers × keys heatmap. The job
runs whatever :data:`configctl.audit.drift.REGISTRY` lists; nothing else names the classes
one by one except the renderers (each has its own table).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession

from configctl.audit.expected import ExpectedState
from configctl.audit.options import AuditOptions


@dataclass
class Frames:
    """What drift classes read: the condensed input cut by kind, and intermediates they share.

    ``own`` holds each broker's lines about its own broker keys (name, value, source,
    brokers: the sorted ids saying it); ``entities`` the lines about cluster-wide entities
    (path, name, value, brokers); ``brokers`` one row per broker (broker_id, change_number);
    ``all_brokers`` one row with every broker id as a sorted array. ``found`` collects each
    class's findings frame as it is computed (the heatmap reads them).
    """

    spark: SparkSession
    options: AuditOptions
    n_brokers: int
    latest: int | None
    expected: ExpectedState | None
    brokers: DataFrame
    all_brokers: DataFrame
    own: DataFrame
    entities: DataFrame
    found: dict[str, DataFrame] = field(default_factory=dict)
    users: Counter[str] = field(default_factory=Counter)
    _shared: dict[str, DataFrame] = field(default_factory=dict)
    _cached: list[DataFrame] = field(default_factory=list)

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

    def keep(self, df: DataFrame) -> DataFrame:
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        self._cached.append(df)
        return df

    def release(self) -> None:
        for df in self._cached:
            df.unpersist()


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
    compute: Callable[[Frames], DataFrame | None]  # None: nothing to find (an empty list)
    order: tuple[str, ...]  # the natural key the list is sorted and cut by (a total order)
    to_json: Callable[[Row, Frames], dict[str, Any]]
    is_drift: bool = True  # counts for the verdict and --fail-on-drift
    needs_expected: bool = False  # without an expected state the finding is null, not []
    shares: tuple[str, ...] = ()  # Frames.shared intermediates it reads
    heat: Heat | None = None

    def applies(self, frames_expected: ExpectedState | None) -> bool:
        return not self.needs_expected or frames_expected is not None
