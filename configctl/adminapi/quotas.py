"""A quota entity and its values as the quota requests carry them (AlterClientQuotas, DescribeClientQuotas).

Kafka names a quota entity by parts (``user``, ``client-id``, ``ip``), a default part by a null
name; configctl's :class:`~configctl.entities.Entity` says the same with ``<default>``. The values
travel as doubles: configctl's text is read by its one Java-double rule
(:func:`configctl.values.parse_double`), and what a broker reports is written back by
:func:`configctl.reported.quota_text`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput, shown
from configctl.values import parse_double

QUOTA_ENTITY = {EntityType.USERS: "user", EntityType.CLIENTS: "client-id", EntityType.IPS: "ip"}
"""Kafka's ``ClientQuotaEntity`` part name for each entity type that holds quotas."""


def quota_components(entity: Entity) -> list[tuple[str, str | None]]:
    """``entity`` as AlterClientQuotas names it: each part with its name, None for a default."""
    parts = [(entity.type, entity.name, entity.user_is_default)]
    if entity.client is not None:
        parts.append((EntityType.CLIENTS, entity.client, entity.client_is_default))
    return [(QUOTA_ENTITY[etype], None if is_default else name) for etype, name, is_default in parts]


def quota_ops(set_keys: Mapping[str, str], delete_keys: Iterable[str]) -> list[tuple[str, float, bool]]:
    """The keys to set, as doubles, and to remove (``(key, value, remove)``), as the request takes them."""
    ops: list[tuple[str, float, bool]] = []
    for key, text in set_keys.items():
        value, problem = parse_double(text, f"{key}={shown(text)}")
        if problem is not None:
            raise InvalidInput(f"{problem}; nothing was written")
        ops.append((key, float(value), False))
    ops += [(key, 0.0, True) for key in delete_keys]
    return ops
