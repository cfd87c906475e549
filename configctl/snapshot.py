"""The snapshot line (docs/reference/snapshots.md): one broker's effective value of one key, as JSON Lines.

``{"broker_id":1,"change_number":42,"entity_path":"topics/orders","name":"retention.ms",
"value":"86400000","source":"DYNAMIC_TOPIC_CONFIG","captured_at_ms":1763780000000}``

The listener writes these lines, the fleet simulator writes them, and the Spark audit reads
them: the field list, the file name and the encoding live here and nowhere else. A line is
built as ``head + body + tail`` because only the body depends on the entity: a listener with
100,000 topic overrides caches the bodies and rewrites its snapshot with a join. Standard
library only, so the audit job ships this module to a cluster as it is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

FIELDS: tuple[tuple[str, str], ...] = (
    ("broker_id", "int"),
    ("change_number", "long"),
    ("entity_path", "string"),
    ("name", "string"),
    ("value", "string"),
    ("source", "string"),
    ("captured_at_ms", "long"),
)
"""Every field of a line, in order, with the Spark type the audit reads it as."""

FIELD_NAMES: tuple[str, ...] = tuple(name for name, _ in FIELDS)
REQUIRED_FIELDS: tuple[str, ...] = tuple(name for name in FIELD_NAMES if name != "value")
"""A value may be null (a key with no default); every other field must be there."""

FILE_PATTERN = "{*.jsonl,*.jsonl.gz}"
"""Snapshot files in a state directory (``.gz`` copies too); temporary files never match."""

_FILE_RE = re.compile(r"broker-([0-9]+)\.jsonl")


def file_name(broker_id: int) -> str:
    """``broker-<id>.jsonl``: the snapshot file of one broker inside a state directory."""
    return f"broker-{int(broker_id)}.jsonl"


def broker_of_file(name: str) -> int | None:
    """The broker id a snapshot file name belongs to (None for any other file)."""
    match = _FILE_RE.fullmatch(name)
    return int(match.group(1)) if match else None


def _text(value: str | None) -> str:
    return json.dumps(value, ensure_ascii=False)


def head(broker_id: int, change_number: int) -> str:
    return f'{{"broker_id":{int(broker_id)},"change_number":{int(change_number)},'


def body(entity_path: str, name: str, value: str | None, source: str) -> str:
    return f'"entity_path":{_text(entity_path)},"name":{_text(name)},"value":{_text(value)},"source":{_text(source)}'


def tail(captured_at_ms: int) -> str:
    """The end of a line, newline included."""
    return f',"captured_at_ms":{int(captured_at_ms)}}}\n'


@dataclass(frozen=True)
class SnapshotLine:
    """One decoded line."""

    broker_id: int
    change_number: int
    entity_path: str
    name: str
    value: str | None
    source: str
    captured_at_ms: int

    def encode(self) -> str:
        return (
            head(self.broker_id, self.change_number)
            + body(self.entity_path, self.name, self.value, self.source)
            + tail(self.captured_at_ms)
        )


def decode(text: str) -> SnapshotLine:
    """Read one line strictly; ``ValueError`` with a one-line reason when it is not a snapshot line."""
    try:
        raw: Any = json.loads(text)
    except ValueError:
        raise ValueError("not a JSON line") from None
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    missing = [name for name in REQUIRED_FIELDS if raw.get(name) is None]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    for name in ("broker_id", "change_number", "captured_at_ms"):
        if not isinstance(raw[name], int) or isinstance(raw[name], bool):
            raise ValueError(f"{name} is not an integer")
    for name in ("entity_path", "name", "source"):
        if not isinstance(raw[name], str):
            raise ValueError(f"{name} is not a string")
    value = raw.get("value")
    if value is not None and not isinstance(value, str):
        raise ValueError("value is not a string")
    return SnapshotLine(
        raw["broker_id"],
        raw["change_number"],
        raw["entity_path"],
        raw["name"],
        value,
        raw["source"],
        raw["captured_at_ms"],
    )
