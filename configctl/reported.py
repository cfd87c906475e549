"""What a broker reports about a config, in configctl's terms (pure: no I/O).

The Admin API's DescribeConfigs answer per key (value, source, sensitive, synonyms) is kept as
:class:`ReportedConfig`, whose ``to_json`` has the shape of one entry of ``describe --effective``
(``{"name","value","source","synonyms":[{"name","value","source"}]}``), so what configctl computes
and what the broker reports are compared as equal documents. Quotas come back as doubles
(DescribeClientQuotas): :func:`quota_text` writes them back as the text configctl stores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
