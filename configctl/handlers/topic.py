"""Topic entities: ``topics/<name>``, Kafka's ``TopicConfigHandler``.

A topic's config is taken as a whole or not at all: one invalid key refuses the change (the
previous config stays in force). An unset key falls back to the broker's effective value of its
synonym server key, so a broker layer change moves every topic that does not override the key.
A topic's config moves nothing but the topic itself (an independent family, of possibly 100,000
members), and Kafka creates topics: it refuses a config for one that does not exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING

from configctl import agreement, catalogue, crosskey
from configctl.entities import Entity, EntityType
from configctl.handlers.base import Admission, BrokerView, Decrypt, FamilyHandler, Moved, Reads, changed_names
from configctl.handlers.whole import admit_whole
from configctl.precedence import EffectiveValue, resolve_topic, topic_overrides

if TYPE_CHECKING:
    from configctl.handlers.sidecar import Asker, Model

_PREFIX_LENGTH = len("topics/")


class TopicHandler(FamilyHandler):
    types = (EntityType.TOPICS,)
    family = "topics"
    independent = True
    known_by_node = True
    created_by_kafka = True
    # The retention and cleanup keys matter to a topic's rules only with remote storage on, which
    # only the topic itself can switch on (the key has no broker fallback): see may_break_rules.
    rule_keys = frozenset({"min.compaction.lag.ms", "max.compaction.lag.ms", "remote.storage.enable"})

    def entity(self, topic: str) -> Entity:
        """The entity of topic ``topic`` (as the listener's queries name it)."""
        return Entity(EntityType.TOPICS, topic)

    def entity_at(self, path: str) -> Entity:
        return Entity(EntityType.TOPICS, path[_PREFIX_LENGTH:])  # a topic's stored name is its name

    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        return admit_whole(entity, stored, change_number, memo=True)

    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        return resolve_topic(entity.name, view.configs.get(entity.path, {}), view.resolution.values)

    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        old, new = self.effective(entity, before), self.effective(entity, after)
        changed = changed_names(old, new)
        return [Moved(entity, new, changed)] if changed & wanted else []

    def disagreements(
        self, entity: Entity, keys: frozenset[str], broker_id: int, model: Model, broker: Asker
    ) -> list[agreement.Mismatch]:
        if not keys:
            return []
        reported = broker.describe_topic(entity.name, sorted(keys))
        return agreement.configs(
            entity.path, agreement.only(model.effective(entity), keys), agreement.only(reported, keys)
        )

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

    # ---------------------------------------------------------------------------- validation

    def unknown_hint(self, name: str) -> str | None:
        """``log.retention.ms`` -> ``retention.ms``: operators often type the broker name on a topic."""
        return _by_broker_synonym().get(name)

    def own_rules(self, config: Mapping[str, str]) -> list[str]:
        """Kafka's topic cross-key rules on the keys the topic sets itself (:mod:`configctl.crosskey`;
        the write side also checks them on the topic's effective config, broker fallbacks included).
        Each of them needs one of :attr:`rule_keys` set, so a config without any (nearly every one
        of a full load's 100,000) breaks none."""
        if self.rule_keys.isdisjoint(config):
            return []
        return crosskey.topic_problems(config)

    # ---------------------------------------------------------------------------- the write path

    def may_break_rules(self, before: Mapping[str, str], after: Mapping[str, str]) -> bool:
        remote = (after.get("remote.storage.enable") or "").strip().lower() == "true"
        return remote or super().may_break_rules(before, after)

    def effective_rules(
        self, config: Mapping[str, str | None], broker: Mapping[str, str | None]
    ) -> list[str]:
        return crosskey.topic_problems(config, broker)


@cache
def _by_broker_synonym() -> Mapping[str, str]:
    """Each topic key's broker synonyms (other than its own name) -> the topic key."""
    result: dict[str, str] = {}
    for key in catalogue.keys(EntityType.TOPICS).values():
        for synonym, _conversion in key.broker_synonyms:
            if synonym != key.name:
                result.setdefault(synonym, key.name)
    return result
