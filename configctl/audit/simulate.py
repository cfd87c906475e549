"""A fleet simulator: snapshots with drift injected at known places, and the findings they imply.

``configctl audit simulate`` and the tests and benchmarks of the audit write a fleet here: a
:class:`~configctl.audit.simulation_model.Fleet` built for a spec
(:func:`configctl.audit.simulation_build.build_fleet`, drift injected at known places) is written
as one snapshot file per broker, each what a correct listener would write for that broker's view
(see docs/reference/snapshots.md), beside ``ground_truth.json`` (the oracle's findings,
:mod:`configctl.audit.simulation_truth`) and ``desired_state.json`` (what ZooKeeper says).

Fast enough for benchmark fleets of tens of millions of lines: lines shared by every broker are
serialized once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from configctl import snapshot
from configctl.audit.simulation_build import build_fleet
from configctl.audit.simulation_model import Fleet, SimulationSpec
from configctl.audit.simulation_truth import compute_ground_truth
from configctl.files import read_bytes
from configctl.sources import DYNAMIC_TOPIC_CONFIG

GROUND_TRUTH_FILE = "ground_truth.json"
DESIRED_STATE_FILE = "desired_state.json"
BASE_TIME_MS = 1_763_780_000_000


def _source(path: str) -> str:
    return DYNAMIC_TOPIC_CONFIG if path.startswith("topics/") else path


@dataclass(frozen=True)
class WrittenFleet:
    directory: Path
    files: int
    rows: int

    def to_json(self) -> dict[str, Any]:
        """Where the fleet was written: its directory, broker files, rows, ground truth and desired state."""
        return {
            "directory": str(self.directory),
            "brokers": self.files,
            "rows": self.rows,
            "ground_truth": str(self.directory / GROUND_TRUTH_FILE),
            "desired_state": str(self.directory / DESIRED_STATE_FILE),
        }


def write_fleet(fleet: Fleet, out_dir: str | Path, *, ground_truth: bool = True) -> WrittenFleet:
    """Write ``broker-<id>.jsonl`` per broker, plus ``ground_truth.json`` and ``desired_state.json``.

    Existing ``broker-*.jsonl`` files in ``out_dir`` are removed first.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("broker-*.jsonl"):  # a smaller fleet must not inherit a bigger one's files
        old.unlink()
    touched = fleet.touched()
    shared = [
        snapshot.body(path, name, value, _source(path))
        for path, config in sorted(fleet.base.items())
        if not path.startswith("brokers/")
        for name, value in sorted(config.items())
        if (path, name) not in touched
    ]
    touched_entities = sorted(k for k in touched if not k[0].startswith("brokers/"))
    malformed_by_broker: dict[int, list[tuple[int, str]]] = {}
    for broker, position, _kind, text in fleet.malformed:
        malformed_by_broker.setdefault(broker, []).append((position, text))
    rows = 0
    for broker in fleet.brokers:
        cn = fleet.applied[broker]
        captured = BASE_TIME_MS + broker * 17 + cn
        head = snapshot.head(broker, cn)
        tail = snapshot.tail(captured)  # ends the line
        fragments = [
            snapshot.body(f"brokers/{broker}", name, value, source)
            for name, (value, source) in fleet.broker_config(broker).items()
        ]
        fragments.extend(shared)
        for path, name in touched_entities:
            value = fleet.view(broker, path, name)
            if value is not None:
                fragments.append(snapshot.body(path, name, value, _source(path)))
        lines = [head + fragment + tail for fragment in fragments]
        for position, text in sorted(malformed_by_broker.get(broker, [])):
            lines.insert(min(position, len(lines)), text + "\n")
        rows += len(lines)
        (out / snapshot.file_name(broker)).write_text("".join(lines), encoding="utf-8")
    if ground_truth:
        truth = compute_ground_truth(fleet, rows)
        (out / GROUND_TRUTH_FILE).write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
        (out / DESIRED_STATE_FILE).write_text(
            json.dumps(fleet.expected_state().to_json(), indent=1) + "\n", encoding="utf-8"
        )
    return WrittenFleet(out, len(fleet.brokers), rows)


def simulate(spec: SimulationSpec, out_dir: str | Path, *, ground_truth: bool = True) -> WrittenFleet:
    return write_fleet(build_fleet(spec), out_dir, ground_truth=ground_truth)


def fingerprint(out_dir: str | Path) -> str:
    """A digest of the snapshot files (to check determinism)."""
    h = hashlib.sha256()
    for path in sorted(Path(out_dir).glob("broker-*.jsonl")):
        h.update(path.name.encode())
        h.update(read_bytes(path, "snapshot"))
    return h.hexdigest()
