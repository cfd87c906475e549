"""Does the broker run what configctl computed? One comparison per family, pure.

The listener (beside a real broker), ``describe --effective`` and the snapshot all compare what
configctl computes for an entity with what the broker reports through the Admin API
(:mod:`configctl.adminapi`); the rules of that comparison live here:

- topic and broker configs: every key's value, as DescribeConfigs reports it (configctl's
  computation already speaks Kafka's report: see :mod:`configctl.precedence`). Secrets are not
  compared: Kafka never sends their value.
- quotas and IP connection rates: the stored keys of the entity, as numbers (Kafka parses a quota
  to a double: ``1e3`` and ``1000`` are one value).
- SCRAM credentials: the mechanisms and their iteration counts (the broker reports nothing more).

A difference is a :class:`Mismatch`: the key, what configctl expected, what the broker reports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from configctl import secrets
from configctl.errors import InvalidInput
from configctl.reported import ReportedConfig


class Computed(Protocol):
    """What configctl computes for one key (:class:`configctl.precedence.EffectiveValue`)."""

    @property
    def value(self) -> str | None: ...

    @property
    def sensitive(self) -> bool: ...


@dataclass(frozen=True)
class Mismatch:
    """One key the broker reports otherwise than configctl computes."""

    entity_path: str
    key: str
    expected: str | None
    reported: str | None

    @property
    def reason(self) -> str:
        return f"{self.key}: configctl computes {_shown(self.expected)}, the broker reports {_shown(self.reported)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "entity_path": self.entity_path,
            "key": self.key,
            "expected": self.expected,
            "reported": self.reported,
            "reason": self.reason,
        }


PROBE_KEY = "broker.id"
"""Asked of a broker when a check names no key: does the broker answer at all?"""


def only(values: Mapping[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """``values`` restricted to ``keys`` (what a change touched is what is compared)."""
    return {k: v for k, v in values.items() if k in keys}


def _shown(value: str | None) -> str:
    return "no value" if value is None else repr(value)


def configs(
    entity_path: str, computed: Mapping[str, Computed], reported: Mapping[str, ReportedConfig]
) -> list[Mismatch]:
    """Topic or broker configs: each key either side has, compared by value (secrets skipped)."""
    found = []
    for key in sorted(set(computed) | set(reported)):
        ours, theirs = computed.get(key), reported.get(key)
        if (ours is not None and ours.sensitive) or (theirs is not None and theirs.sensitive):
            continue
        expected = ours.value if ours is not None else None
        actual = theirs.value if theirs is not None else None
        if ours is None or theirs is None or expected != actual:
            found.append(Mismatch(entity_path, key, expected, actual))
    return found


def quotas(entity_path: str, stored: Mapping[str, str], reported: Mapping[str, str]) -> list[Mismatch]:
    """A quota or IP entity: the stored keys against what the broker reports, as numbers."""
    found = []
    for key in sorted(set(stored) | set(reported)):
        if secrets.is_scram_mechanism(key):
            continue
        ours, theirs = stored.get(key), reported.get(key)
        if not _same_number(ours, theirs):
            found.append(Mismatch(entity_path, key, ours, theirs))
    return found


def scram(entity_path: str, stored: Mapping[str, str], reported: Mapping[str, int]) -> list[Mismatch]:
    """A user's SCRAM credentials: the mechanisms and iteration counts the broker knows."""
    expected: dict[str, int] = {}
    for key, value in stored.items():
        if secrets.is_scram_mechanism(key):
            try:
                expected[key] = secrets.parse_scram_credential(value).iterations
            except InvalidInput:  # a malformed credential: validation reports it; here it differs
                expected[key] = -1
    found = []
    for mechanism in sorted(set(expected) | set(reported)):
        ours, theirs = expected.get(mechanism), reported.get(mechanism)
        if ours != theirs:
            found.append(
                Mismatch(
                    entity_path,
                    mechanism,
                    None if ours is None else secrets.shown_iterations(ours),
                    None if theirs is None else secrets.shown_iterations(theirs),
                )
            )
    return found


def same_quota(ours: str | None, theirs: str | None) -> bool:
    """Whether two quota values are one to Kafka (it parses a quota to a double: ``50`` and
    ``50.0``, ``1e3`` and ``1000``); a value that is no number is compared as text."""
    return _same_number(ours, theirs)


def _same_number(ours: str | None, theirs: str | None) -> bool:
    if ours is None or theirs is None:
        return ours is theirs
    try:
        left, right = float(ours), float(theirs)
    except ValueError:
        return ours == theirs
    return left == right or math.isclose(left, right, rel_tol=1e-12)
