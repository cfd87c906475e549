"""What a broker reports about a config, in configctl's terms (pure: no I/O).

The Admin API's DescribeConfigs answer per key (value, source, sensitive, synonyms) is kept as
:class:`ReportedConfig`, whose ``to_json`` has the shape of one entry of ``describe --effective``
(``{"name","value","source","synonyms":[{"name","value","source"}]}``), so what configctl computes
and what the broker reports are compared as equal documents. Quotas come back as doubles
(DescribeClientQuotas): :func:`quota_text` writes them back as the text configctl stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from configctl.entities import Entity, EntityType
from configctl.sources import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_BROKER_SOURCES,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
)

BROKER_LAYERS = (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG)
"""A broker's layers, the one in force first: a value of an earlier layer shadows a later one's."""


@dataclass(frozen=True)
class ReportedSynonym:
    name: str
    value: str | None
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": self.source}


@dataclass(frozen=True)
class ReportedConfig:
    """One key as the broker reports it. A sensitive value is never sent by Kafka (None)."""

    name: str
    value: str | None
    source: str
    sensitive: bool = False
    read_only: bool = False
    synonyms: tuple[ReportedSynonym, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "source": self.source,
            "synonyms": [synonym.to_json() for synonym in self.synonyms],
        }


def quota_text(value: float) -> str:
    """A quota the broker reports as a double, as configctl stores it (``2048.0`` -> ``"2048"``).

    Kafka parses a quota to a double when it loads it; a whole number is written without a
    fraction, as kafka-configs.sh users write it; anything else keeps Python's shortest repr.
    """
    if value == int(value) and abs(value) < 2**63:
        return str(int(value))
    return repr(value)


@dataclass(frozen=True)
class NotApplied:
    """A key a broker holds at a dynamic layer (its metadata reached the write) while the value it
    runs comes from a layer below it: the broker refused to apply it. Kafka tells no writer so; a
    KRaft broker that fails to apply a committed record logs an ERROR and reports the value it
    kept, the held one only among the synonyms."""

    key: str
    held: str | None
    layer: str
    running: str | None
    source: str

    def sentence(self, broker_id: int) -> str:
        return (
            f"broker {broker_id} holds {self.key}={self.held} ({self.layer}) but runs {self.running} "
            f"({self.source}): it refused to apply it (its server.log says why)"
        )

    def entity(self, broker_id: int) -> Entity:
        """The broker layer that holds it: ``brokers/<default>``, or broker ``broker_id``'s own."""
        return Entity.named(
            EntityType.BROKERS, "" if self.layer == DYNAMIC_DEFAULT_BROKER_CONFIG else str(broker_id)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "held": self.held,
            "layer": self.layer,
            "running": self.running,
            "source": self.source,
        }


def _layers(entry: ReportedConfig) -> list[ReportedSynonym]:
    """``entry``'s synonyms of its own name at a broker layer, the one in force first (a synonym
    of another name, say hours for milliseconds, is left out: its units differ)."""
    return sorted(
        (s for s in entry.synonyms if s.name == entry.name and s.source in BROKER_LAYERS),
        key=lambda s: BROKER_LAYERS.index(s.source),
    )


def not_applied(reported: Mapping[str, ReportedConfig]) -> list[NotApplied]:
    """Every key of a broker's own report (``describe`` of ``brokers/<id>`` with synonyms) whose
    highest layer is a dynamic one holding another value than the broker runs. Kafka then reports
    the value it kept under the held layer's source; the layer the kept value comes from is the
    highest synonym holding it. (A synonym of another name, say hours for milliseconds, is not
    compared: its units differ.)"""
    found = []
    for name in sorted(reported):
        entry = reported[name]
        if entry.sensitive:
            continue
        same = _layers(entry)
        if not same or same[0].source not in DYNAMIC_BROKER_SOURCES or same[0].value == entry.value:
            continue
        kept = next((s.source for s in same if s.value == entry.value), entry.source)
        found.append(NotApplied(name, same[0].value, same[0].source, entry.value, kept))
    return found


def default_layer_running(reported: Mapping[str, ReportedConfig]) -> dict[str, str | None]:
    """The value a broker runs for every key whose highest layer is the cluster-wide
    ``<default>`` (from its own report with synonyms): what every broker should run alike, so
    brokers are compared on it (a per-broker override is the broker's own, and not compared)."""
    running = {}
    for name in sorted(reported):
        entry = reported[name]
        same = _layers(entry)
        if same and same[0].source == DYNAMIC_DEFAULT_BROKER_CONFIG:
            running[name] = None if entry.sensitive else entry.value
    return running
