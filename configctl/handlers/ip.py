"""IP entities: ``ips/<address or host>`` and ``ips/<default>``, Kafka's ``IpConfigHandler``.

Brokers match connections by address, not by the stored spelling: ``ips/0:0:0:0:0:0:0:1``
governs ``::1``, and a host name is resolved when its config is applied (one that does not
resolve is refused, as Kafka refuses it, and reported as ``ignored``).
"""

from __future__ import annotations

from collections.abc import Mapping

from configctl import ips
from configctl.entities import Entity, EntityType
from configctl.entitylevels import resolve_ip
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
from configctl.precedence import EffectiveValue


class IpHandler(FamilyHandler):
    types = (EntityType.IPS,)
    family = "ips"

    def connection(self, ip: str, configs: Mapping[str, Mapping[str, str]]) -> dict[str, EffectiveValue]:
        """The connection-rate quota of a connection from address ``ip``."""
        return resolve_ip(ip, configs, ips.resolve)

    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        if self.unresolved(entity):
            reason = f"{entity.name} does not resolve to an address; Kafka refuses this IP entity"
            return Admission(None, (Problem(IGNORED, entity.path, change_number, reason),))
        return admit_whole(entity, stored, change_number, memo=True)

    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        return resolve_ip(entity.name, view.configs, ips.resolve)

    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        return self.moved_in_family(self.family, entity, before, after, wanted)

    def reads(self, entity: Entity, broker_id: int) -> Reads:
        return Reads(types=(EntityType.IPS,))

    def label(self, entity: Entity) -> str:
        return "IP"

    def unresolved(self, entity: Entity) -> bool:
        """An IP entity naming neither an address nor a host that resolves (Kafka refuses it)."""
        return not entity.is_default and ips.resolve(entity.name) is None
