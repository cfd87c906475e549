"""``configctl describe -o json``: one element per entity, its stored config with secrets masked.

The console's entity document holds one of these elements as its ``stored``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from configctl.documents.masking import masked
from configctl.entities import Entity, EntityType
from configctl.store import Stored


def entity_json(entity: Entity, config: Mapping[str, str], version: int | None) -> dict[str, Any]:
    """A ``describe -o json`` element (docs/reference/json-output.md)."""
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


@dataclass(frozen=True)
class DescribeDocument:
    """The entities read (of ``entity_type``), each with a ``problem`` when its node is not a Kafka config."""

    entity_type: EntityType
    stored: list[Stored]

    def to_json(self) -> list[dict[str, Any]]:
        documents = []
        for item in self.stored:
            document = entity_json(item.entity, item.config, item.version if item.exists else None)
            if item.problem is not None:
                document["problem"] = item.problem
            documents.append(document)
        return documents
