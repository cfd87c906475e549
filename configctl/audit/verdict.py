"""What counts as drift, in one place for the job's exit status, the CLI and the reports.

Per-broker overrides are listed but are not drift: they are deliberate settings in ZooKeeper.
Malformed lines are reported but are not drift either: they say the snapshots are damaged.
"""

from __future__ import annotations

from typing import Any

DRIFT_FINDINGS = ("stale_brokers", "divergent", "static_skew", "missed_changes")

# Exit status of ``configctl audit --fail-on-drift`` when drift is found (as ``plan`` uses 2 for "changes").
DRIFT_EXIT_CODE = 2


def has_drift(doc: dict[str, Any]) -> bool:
    """Stale brokers, divergence, static skew or missed changes."""
    return any(doc["counts"].get(name, 0) for name in DRIFT_FINDINGS)
