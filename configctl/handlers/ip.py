"""IP entities: ``ips/<address or host>`` and ``ips/<default>``, Kafka's ``IpConfigHandler``.

Brokers match connections by address, not by the stored spelling: ``ips/0:0:0:0:0:0:0:1``
governs ``::1``, and a host name is resolved when its config is applied (one that does not
resolve is refused, as Kafka refuses it, and reported as ``ignored``).
"""

from __future__ import annotations

from collections.abc import Mapping

from configctl import ips
from configctl.entities import Entity, EntityType
from configctl.handlers.base import (
    IGNORED,
    Admission,
    BrokerView,
    Decrypt,
    FamilyHandler,
    Moved,
    Problem,
    Reads,
)
from configctl.handlers.whole import admit_whole
from configctl.precedence import EffectiveValue, resolve_ip


class IpHandler(FamilyHandler):
    types = (EntityType.IPS,)

    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        if not entity.is_default and ips.resolve(entity.name) is None:
            reason = f"{entity.name} does not resolve to an address; Kafka refuses this IP entity"
            return Admission(None, (Problem(IGNORED, entity.path, change_number, reason),))
        return admit_whole(entity, stored, change_number)

    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        return resolve_ip(entity.name, view.configs, ips.resolve)

    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        return self.moved_in_family("ips", entity, before, after, wanted)

    def reads(self, entity: Entity, broker_id: int) -> Reads:
        return Reads(types=(EntityType.IPS,))
