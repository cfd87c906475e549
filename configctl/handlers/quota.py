"""Quota entities: ``users/<u>``, ``users/<u>/clients/<c>``, ``clients/<c>`` and their defaults.

Kafka's ``UserConfigHandler``/``ClientIdConfigHandler``: a quota key takes its value from the
most specific of eight levels that defines it, so a change to one quota entity can move the
effective quotas of every other quota entity it shadows. SCRAM credentials live on user nodes
too; they are not quotas and are in force exactly as stored on the user itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from configctl import agreement, catalogue
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.entitylevels import resolve_quotas, resolve_stored_quotas, stored_quota_paths
from configctl.handlers.base import (
    Admission,
    BrokerView,
    Decrypt,
    FamilyHandler,
    Moved,
    Reads,
)
from configctl.handlers.whole import admit_whole
from configctl.precedence import EffectiveValue

if TYPE_CHECKING:
    from configctl.handlers.sidecar import Asker, Model


def _levels(entity: Entity) -> tuple[str | None, str | None]:
    """The stored (user, client) whose quota levels decide this entity's own effective quotas."""
    if entity.type is EntityType.USERS:
        return entity.stored_name, entity.stored_client
    return None, entity.stored_name


class QuotaHandler(FamilyHandler):
    types = (EntityType.USERS, EntityType.CLIENTS)
    family = "quotas"

    def connection(
        self, user: str | None, client: str | None, configs: Mapping[str, Mapping[str, str]]
    ) -> dict[str, EffectiveValue]:
        """The quotas of a connection from ``user`` with ``client`` (plain names; None: not known)."""
        return resolve_quotas(user, client, configs)

    def label(self, entity: Entity) -> str:
        if entity.client is not None:
            return "user/client quota"
        return entity.type.value[:-1]

    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        return admit_whole(entity, stored, change_number)

    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        user, client = _levels(entity)
        values = resolve_stored_quotas(user, client, view.configs)
        for name, raw in view.configs.get(entity.path, {}).items():
            if name not in values:  # SCRAM credentials: in force as stored on the entity itself
                sensitive = catalogue.is_sensitive(entity.type, name)
                values[name] = EffectiveValue(name, raw, entity.path, (), sensitive)
        return values

    def disagreements(
        self, entity: Entity, keys: frozenset[str], broker_id: int, model: Model, broker: Asker
    ) -> list[agreement.Mismatch]:
        """The quotas compared whole, and a user's SCRAM credentials (mechanism and iterations:
        the Admin API never returns the salted password)."""
        found = super().disagreements(entity, keys, broker_id, model, broker)
        if entity.type is EntityType.USERS and entity.client is None and entity.name != DEFAULT:
            found += agreement.scram(
                entity.path, model.entity_config(entity), broker.scram_credentials(entity.name)
            )
        return found

    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        """The changed entity and every known quota entity whose resolution it moves."""
        return self.moved_in_family(self.family, entity, before, after, wanted)

    def reads(self, entity: Entity, broker_id: int) -> Reads:
        user, client = _levels(entity)
        return Reads(paths=tuple(dict.fromkeys([entity.path, *stored_quota_paths(user, client)])))
