"""One handler per entity family (Kafka's ``ConfigHandler`` per entity type): broker, topic, quota, ip.

:func:`handler_for` is the registry. Adding an entity type means: its name rules in
:mod:`configctl.entities`, its schema in ``schemas/``, a handler module here, and one line below.
"""

from __future__ import annotations

from configctl.entities import Entity, EntityType
from configctl.handlers.base import BrokerView, FamilyHandler
from configctl.handlers.broker import BrokerHandler
from configctl.handlers.ip import IpHandler
from configctl.handlers.quota import QuotaHandler
from configctl.handlers.topic import TopicHandler

BROKER = BrokerHandler()
_HANDLERS: dict[EntityType, FamilyHandler] = {
    EntityType.BROKERS: BROKER,
    EntityType.TOPICS: TopicHandler(),
    EntityType.USERS: QuotaHandler(),
    EntityType.CLIENTS: QuotaHandler(),
    EntityType.IPS: IpHandler(),
}


def handler_for(entity: Entity | EntityType) -> FamilyHandler:
    return _HANDLERS[entity.type if isinstance(entity, Entity) else entity]


__all__ = ["BROKER", "BrokerView", "FamilyHandler", "handler_for"]
