"""Drift classes: one module per kind of finding, and the one registry the job runs.

Each module defines ``DRIFT``, a :class:`~configctl.audit.drift.base.DriftClass`. The
registry's order is the order findings are computed and appear in the audit document.
Adding a drift class: see "Adding a drift class" in docs/audit.md.
"""

from __future__ import annotations

from configctl.audit.drift import divergent, missed, overrides, stale, static_skew
from configctl.audit.drift.base import DriftClass, Frames, Heat

REGISTRY: tuple[DriftClass, ...] = (
    stale.DRIFT,
    divergent.DRIFT,
    overrides.DRIFT,
    static_skew.DRIFT,
    missed.DRIFT,
)

__all__ = ["REGISTRY", "DriftClass", "Frames", "Heat"]
