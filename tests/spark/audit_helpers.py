"""Helpers for the audit tests: hand-written snapshot files and the simulator's ground truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from configctl.audit.simulate import GROUND_TRUTH_FILE
from configctl.audit.simulation_truth import GROUND_TRUTH_FIELDS as TRUTH_FIELDS


def ground_truth(directory: Path) -> dict[str, Any]:
    return json.loads((directory / GROUND_TRUTH_FILE).read_text(encoding="utf-8"))


def write_lines(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    """A snapshot file from dicts (serialized as the listener does) and raw strings (kept as they are)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(r if isinstance(r, str) else json.dumps(r, separators=(",", ":")) for r in rows)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def line(broker: int, path: str, name: str, value: str | None, source: str, cn: int = 10) -> dict[str, Any]:
    return {
        "broker_id": broker,
        "change_number": cn,
        "entity_path": path,
        "name": name,
        "value": value,
        "source": source,
        "captured_at_ms": 1_763_780_000_000 + broker,
    }


def findings(doc: dict[str, Any]) -> dict[str, Any]:
    """The part of an audit document a ground truth pins down."""
    picked = {name: doc[name] for name in TRUTH_FIELDS}
    picked["malformed"] = {k: doc["malformed"][k] for k in ("unparseable", "missing_fields")}
    return picked


def expected(truth: dict[str, Any]) -> dict[str, Any]:
    picked = {name: truth[name] for name in TRUTH_FIELDS}
    picked["malformed"] = truth["malformed"]
    return picked
