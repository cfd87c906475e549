"""Topic entities: ``topics/<name>``, Kafka's ``TopicConfigHandler``.

A topic's config is taken as a whole or not at all: one invalid key refuses the change (the
previous config stays in force). An unset key falls back to the broker's effective value of its
synonym server key, so a broker layer change moves every topic that does not override the key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from configctl.entities import Entity, EntityType
from configctl.handlers.base import Admission, BrokerView, Decrypt, FamilyHandler, Moved, Reads, changed_names
from configctl.handlers.whole import admit_whole
from configctl.precedence import EffectiveValue, resolve_topic, topic_overrides


class TopicHandler(FamilyHandler):
    types = (EntityType.TOPICS,)

    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        return admit_whole(entity, stored, change_number)

    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        return resolve_topic(entity.name, view.configs.get(entity.path, {}), view.resolution.values)

    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        old, new = self.effective(entity, before), self.effective(entity, after)
        changed = changed_names(old, new)
        return [Moved(entity, new, changed)] if changed & wanted else []

    def reads(self, entity: Entity, broker_id: int) -> Reads:
        return Reads(paths=(entity.path,))

    def effective_of(
        self, entity: Entity, view: BrokerView, config: Mapping[str, str], names: Iterable[str]
    ) -> dict[str, EffectiveValue]:
        """A topic's config moves only its own keys: the override where ``config`` sets one,
        else the broker's fallback (the broker resolution is the same before and after)."""
        wanted = list(names)
        values = topic_overrides({n: config[n] for n in wanted if n in config}, view.resolution.values)
        fallbacks = view.resolution.values.topic_fallbacks()
        for name in wanted:
            if name not in values and name in fallbacks:
                values[name] = fallbacks[name]
        return values

    def snapshot_values(self, entity: Entity, view: BrokerView) -> list[EffectiveValue]:
        """A topic lists its own overrides: resolved alone, not with the ~40 keys it does not set."""
        values = topic_overrides(view.configs.get(entity.path, {}), view.resolution.values)
        return [values[name] for name in sorted(values)]
