"""Which of a timeline's changes were written outside configctl (``audit --timeline``).

The timeline itself is folded from the listeners' applied logs, which know change numbers but
not who wrote them. A store does: configctl's history, the config nodes' versions and the change
notifications still kept (:mod:`configctl.travel.writers`). This module asks it about the
entities a timeline names and marks each interval's opening and closing change: written outside
configctl (``true``), configctl's own (``false``), or unknown (``null``: its notification is gone,
so nothing ties the number to a version). The intervals themselves are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from configctl.store import ConfigStore
from configctl.travel.writers import Writers, writers


def mark(doc: Mapping[str, Any], found: Writers) -> dict[str, Any]:
    """The timeline document with each interval's ``opened_outside_configctl`` and
    ``closed_outside_configctl`` (true, false or null), and ``outside_writes``: what is known of
    each outside change the intervals name, by change number."""
    marked = dict(doc)
    intervals = []
    named: dict[str, dict[str, Any]] = {}
    for interval in doc.get("intervals", []):
        shown = dict(interval)
        for side in ("opened", "closed"):
            number = interval.get(f"{side}_by_change")
            shown[f"{side}_outside_configctl"] = found.of(number)
            if found.of(number):
                named[str(number)] = found.outside[number]
        intervals.append(shown)
    marked["intervals"] = intervals
    marked["outside_writes"] = dict(sorted(named.items(), key=lambda kv: int(kv[0])))
    return marked


def mark_from_store(doc: Mapping[str, Any], store: ConfigStore) -> dict[str, Any]:
    """:func:`mark` with what ``store`` knows of the entities ``doc``'s intervals name."""
    paths = [i["entity_path"] for i in doc.get("intervals", [])]
    return mark(doc, writers(store, paths))
