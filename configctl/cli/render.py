"""Rendering helpers shared by commands: JSON documents on stdout, rich tables for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from configctl import catalogue
from configctl.changes import KeyDiff
from configctl.entities import DEFAULT, Entity
from configctl.secrets import MASK


def console() -> Console:
    """Rich output for people; when piped (CI, less, a log) tables get room instead of 80 columns."""
    piped = not sys.stdout.isatty()
    return Console(soft_wrap=True, highlight=False, width=160 if piped else None)


def emit_json(document: Any) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def masked(entity: Entity, config: Mapping[str, str]) -> dict[str, str]:
    """The config with sensitive values replaced by the mask."""
    return {
        k: (MASK if catalogue.is_sensitive(entity.schema_type, k) else v) for k, v in sorted(config.items())
    }


def entity_json(entity: Entity, config: Mapping[str, str], version: int | None) -> dict[str, Any]:
    """Contract 3's describe element."""
    document: dict[str, Any] = {
        "entity_type": entity.type.value,
        "entity_name": entity.name,
        "entity_path": entity.path,
        "config": masked(entity, config),
        "version": version,
    }
    if entity.client is not None:
        document["client_id"] = entity.client
    return document


def diff_json(entity: Entity, changes: Iterable[KeyDiff]) -> list[dict[str, Any]]:
    result = []
    for change in changes:
        sensitive = catalogue.is_sensitive(entity.schema_type, change.name)
        result.append(
            {
                "name": change.name,
                "kind": change.kind,
                "old": MASK if sensitive and change.old is not None else change.old,
                "new": MASK if sensitive and change.new is not None else change.new,
            }
        )
    return result


def diff_table(entity: Entity, changes: list[KeyDiff], *, title: str) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("")
    table.add_column("key")
    table.add_column("before")
    table.add_column("after")
    marks = {"add": "[green]+[/]", "delete": "[red]-[/]", "change": "[yellow]~[/]"}
    for row in diff_json(entity, changes):
        table.add_row(marks[row["kind"]], escape(row["name"]), _cell(row["old"]), _cell(row["new"]))
    return table


def _cell(value: str | None) -> str:
    return "[dim]—[/]" if value is None else escape(value)


def entity_label(entity: Entity) -> str:
    name = "<default>" if entity.name == DEFAULT else entity.name
    label = f"{entity.type.value[:-1]} {name}"
    if entity.client is not None:
        label += f" client {entity.client}"
    return label
