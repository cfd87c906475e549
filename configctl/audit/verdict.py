"""What counts as drift, in one place for the job's exit status, the CLI and the reports.

Per-broker overrides are listed but are not drift: they are deliberate settings in ZooKeeper.
Malformed lines are reported but are not drift either: they say the snapshots are damaged.
Which findings are drift is each drift class's ``is_drift``; the registry is read only when a
document is judged (it imports pyspark, which ``configctl audit --help`` must not pay for).
"""

from __future__ import annotations

from typing import Any

# Exit status of ``configctl audit --fail-on-drift`` when drift is found (as ``plan`` uses 2 for "changes").
DRIFT_EXIT_CODE = 2


def drift_findings() -> tuple[str, ...]:
    """The names of the findings that are drift, in registry order."""
    from configctl.audit.drift import REGISTRY

    return tuple(d.name for d in REGISTRY if d.is_drift)


def has_drift(doc: dict[str, Any]) -> bool:
    """Stale brokers, divergence, static skew or missed changes (any finding marked as drift)."""
    return any(doc["counts"].get(name, 0) for name in drift_findings())
