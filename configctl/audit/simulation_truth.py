"""The oracle: the findings a simulated fleet implies, for the audit to be checked against.

The ground truth is computed from the model alone (:class:`configctl.audit.simulation_model.Fleet`),
in plain Python, by rules written independently of the Spark job: that is what makes it an
oracle for the audit rather than a copy of it. :mod:`configctl.audit.simulate` writes it beside
the snapshots (``ground_truth.json``); tests and benchmarks compare an audit document's
:data:`GROUND_TRUTH_FIELDS` with it.
"""

from __future__ import annotations

from typing import Any

from configctl.audit.schema import BROKER_DEFAULT_PATH, is_per_broker_by_nature, is_sensitive
from configctl.audit.simulation_model import Fleet
from configctl.sources import (
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_BROKER_SOURCES,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    SERVER_PROPERTIES_SOURCES,
)

# The audit findings a ground truth pins down (an audit document has more: counts, heatmap, examples).
GROUND_TRUTH_FIELDS = (
    "brokers",
    "rows",
    "latest_change_number",
    "stale_brokers",
    "divergent",
    "per_broker_overrides",
    "static_skew",
    "missed_changes",
)


def _groups(values: dict[int, str | None]) -> list[dict[str, Any]]:
    by_value: dict[str | None, list[int]] = {}
    for broker, value in values.items():
        by_value.setdefault(value, []).append(broker)
    groups = [{"value": v, "count": len(b), "brokers": sorted(b)} for v, b in by_value.items()]
    groups.sort(key=lambda g: (-g["count"], g["value"] is None, g["value"] or ""))
    return groups


def compute_ground_truth(fleet: Fleet, rows: int) -> dict[str, Any]:
    """The findings the audit must report, without and with the desired state."""
    snapshot_latest = max(fleet.applied.values())
    common = _common_findings(fleet)
    malformed = {
        "unparseable": sum(1 for m in fleet.malformed if m[2] == "unparseable"),
        "missing_fields": sum(1 for m in fleet.malformed if m[2] == "missing_fields"),
    }

    def doc(latest: int, with_desired: bool) -> dict[str, Any]:
        return {
            "brokers": len(fleet.brokers),
            "rows": rows,
            "malformed": malformed,
            "latest_change_number": latest,
            "stale_brokers": [
                {"broker_id": b, "change_number": cn, "behind": latest - cn}
                for b, cn in sorted(fleet.applied.items())
                if cn < latest
            ],
            **common,
            "missed_changes": _missed_changes(fleet) if with_desired else None,
        }

    return {
        "spec": {
            "brokers": fleet.spec.brokers,
            "topics": fleet.spec.topics,
            "drift_rate": fleet.spec.drift_rate,
            "seed": fleet.spec.seed,
            "malformed": fleet.spec.malformed,
            "changes": fleet.spec.changes,
            "pending": fleet.spec.pending,
        },
        "injected": fleet.injected,
        "snapshots_only": doc(snapshot_latest, False),
        "with_desired_state": doc(fleet.latest_change_number, True),
    }


def _common_findings(fleet: Fleet) -> dict[str, Any]:
    configs = {b: fleet.broker_config(b) for b in fleet.brokers}
    divergent = []
    for path, name in sorted(k for k in fleet.touched() if not k[0].startswith("brokers/")):
        groups = _groups({b: fleet.view(b, path, name) for b in fleet.brokers})
        if len(groups) > 1:
            divergent.append(
                {"entity_path": path, "name": name, "values": groups, "majority_value": groups[0]["value"]}
            )
    names = sorted({n for config in configs.values() for n in config if not is_per_broker_by_nature(n)})
    static_skew = []
    for name in names:
        sources = {b: configs[b].get(name, (None, None)) for b in fleet.brokers}
        if any(source == DYNAMIC_DEFAULT_BROKER_CONFIG for _, source in sources.values()):
            population = {b: v for b, (v, source) in sources.items() if source != DYNAMIC_BROKER_CONFIG}
            groups = _groups(population)
            if len(groups) > 1:
                divergent.append(
                    {
                        "entity_path": BROKER_DEFAULT_PATH,
                        "name": name,
                        "values": groups,
                        "majority_value": groups[0]["value"],
                    }
                )
        else:
            population = {b: v for b, (v, source) in sources.items() if source in SERVER_PROPERTIES_SOURCES}
            groups = _groups(population)
            if len(groups) > 1:
                static_skew.append({"name": name, "values": groups, "majority_value": groups[0]["value"]})
    divergent.sort(key=lambda d: (d["entity_path"], d["name"]))
    overrides = [
        {"broker_id": b, "name": name, "value": value}
        for b in fleet.brokers
        for name, (value, source) in configs[b].items()
        if source == DYNAMIC_BROKER_CONFIG
    ]
    return {"divergent": divergent, "per_broker_overrides": overrides, "static_skew": static_skew}


def _missed_changes(fleet: Fleet) -> list[dict[str, Any]]:
    final = fleet.desired_config()
    default = final.get(BROKER_DEFAULT_PATH, {})
    missed = []
    for b in fleet.brokers:
        own = final.get(f"brokers/{b}", {})
        for name, (value, source) in fleet.broker_config(b).items():
            expected = own.get(name, default.get(name))
            if expected is not None:
                if value != expected:
                    missed.append((b, f"brokers/{b}", name, expected, value))
            elif source in DYNAMIC_BROKER_SOURCES and not is_sensitive(name):
                missed.append((b, f"brokers/{b}", name, None, value))
        # Expected broker keys the broker has no line for at all.
        for name in sorted((set(own) | set(default)) - set(fleet.broker_config(b))):
            missed.append((b, f"brokers/{b}", name, own.get(name, default.get(name)), None))
        for path, name in sorted(k for k in fleet.touched() if not k[0].startswith("brokers/")):
            expected = final.get(path, {}).get(name)
            actual = fleet.view(b, path, name)
            if expected != actual:
                missed.append((b, path, name, expected, actual))
    missed.sort(key=lambda m: (m[0], m[1], m[2]))
    return [
        {"broker_id": b, "entity_path": p, "name": n, "expected_value": e, "actual_value": a}
        for b, p, n, e, a in missed
    ]
