"""Exporting: the store's current dynamic configs as a desired-state document (``configctl export``).

Secrets are exported as stored (SCRAM credentials as salted hashes, broker passwords encrypted),
so export followed by plan shows no changes; without them the document is marked so that plan
and apply keep the stored ones (:data:`configctl.desired.document.SECRETS_MARKER`). A node that is
not a Kafka config is left out and said so (:attr:`Export.left_out`); the rest is exported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from configctl.desired import document as desired_files
from configctl.desired import syntax
from configctl.entities import EntityType
from configctl.store import ConfigStore, Stored

HEADER = "configctl desired state (configctl export). Check with: configctl plan -f FILE"
NO_SECRETS_HEADER = f"""

Sensitive keys (SCRAM credentials, broker passwords) are left out (--no-secrets), and the line
"{desired_files.SECRETS_MARKER}: {desired_files.SECRETS_OMITTED}" makes plan and apply keep the stored ones."""


@dataclass(frozen=True)
class Export:
    """What ``export`` writes, and what it is made of."""

    document: dict[str, Any]
    types: tuple[EntityType, ...]
    entities: int
    """Entities with overrides in the document."""
    secret_values: int
    """Secret values it holds (hashed or encrypted); 0 without secrets."""
    include_secrets: bool
    left_out: tuple[Stored, ...] = ()
    """Nodes that are not Kafka configs (each with its ``problem``)."""

    @property
    def header(self) -> str:
        """The comment a YAML file of it starts with."""
        return HEADER + ("" if self.include_secrets else NO_SECRETS_HEADER)

    def text(self, *, as_json: bool = False) -> str:
        """The document as a file holds it: YAML with its header, or JSON."""
        return syntax.dump(self.document, as_json=as_json, header=None if as_json else self.header)


def export(store: ConfigStore, types: Sequence[EntityType], *, include_secrets: bool = True) -> Export:
    """Read every entity of ``types`` and make the desired-state document of their configs."""
    stored = [item for etype in types for item in store.read_type(etype, strict=False)]
    left_out = tuple(item for item in stored if item.problem is not None)
    configs = [(item.entity, item.config) for item in stored if item.problem is None]
    secret_values = sum(len(desired_files.secret_keys(e, c)) for e, c in configs) if include_secrets else 0
    document = desired_files.to_document(configs, types, include_secrets=include_secrets)
    entities = sum(
        1
        for entity, config in configs
        if (config if include_secrets else desired_files.without_secrets(entity, config))
    )
    return Export(document, tuple(types), entities, secret_values, include_secrets, left_out)
