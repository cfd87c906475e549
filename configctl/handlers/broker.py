"""Broker entities: ``brokers/<id>`` and ``brokers/<default>``, Kafka's ``BrokerConfigHandler``.

A broker follows its own ``brokers/<id>`` and the cluster-wide ``brokers/<default>``, never other
brokers' own configs. Keys are screened one by one, as Kafka's ``DynamicBrokerConfig`` does: a
misplaced or invalid key is dropped (reported as ``ignored``) and the rest of the layer applies.
The broker's own password configs are decrypted with its ``password.encoder.secret`` (when the
reader has it: the listener does, ``describe --effective`` shows them masked anyway).
"""

from __future__ import annotations

from collections.abc import Mapping

from configctl import catalogue
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput
from configctl.handlers.base import (
    IGNORED,
    Admission,
    BrokerView,
    Decrypt,
    FamilyHandler,
    Moved,
    Problem,
    Reads,
    changed_names,
    differs,
)
from configctl.precedence import EffectiveValue, resolve_topic


class BrokerHandler(FamilyHandler):
    types = (EntityType.BROKERS,)

    def follows(self, entity: Entity, broker_id: int) -> bool:
        return entity.name in (str(broker_id), DEFAULT)

    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        """Every key, with this broker's passwords decrypted; undecryptable ones are dropped.

        Misplaced keys and invalid values are left to the resolution (:mod:`configctl.precedence`
        drops them with the write side's reasons), so they are reported once, from there.
        """
        if decrypt is None or entity.user_is_default:
            return Admission(dict(stored))
        kept: dict[str, str] = {}
        problems: list[Problem] = []
        for name, value in stored.items():
            if catalogue.is_sensitive(EntityType.BROKERS, name):
                plain = decrypt(name, value)
                if plain is None:
                    reason = f"cannot decrypt {name}: wrong password.encoder.secret, none in server.properties, or corrupt value"
                    problems.append(Problem(IGNORED, entity.path, change_number, reason, name=name))
                    continue
                value = plain
            kept[name] = value
        return Admission(kept, tuple(problems))

    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        if not self.follows(entity, view.broker_id):
            raise InvalidInput(f"broker {view.broker_id} does not follow {entity.path}")
        return dict(view.resolution.values)

    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        """The broker's own update, and one per known topic whose fallback value of a wanted key moved."""
        old, new = before.resolution.values, after.resolution.values
        result = []
        changed = changed_names(old, new)
        if changed & wanted:
            result.append(Moved(Entity(EntityType.BROKERS, str(after.broker_id)), new, changed))
        old_fb, new_fb = old.topic_fallbacks(), new.topic_fallbacks()
        moved = frozenset(n for n in new_fb if n in wanted and differs(old_fb.get(n), new_fb.get(n)))
        if moved:
            for topic in sorted(after.topics):
                overrides = after.configs.get(f"topics/{topic}", {})
                affected = moved.difference(overrides)
                if affected:
                    values = resolve_topic(topic, overrides, new)
                    result.append(Moved(Entity(EntityType.TOPICS, topic), values, affected))
        return result

    def reads(self, entity: Entity, broker_id: int) -> Reads:
        return Reads()

    def ignored(self, view: BrokerView, change_numbers: Mapping[str, int | None]) -> list[Problem]:
        """Every key of the two broker layers that does not take effect, and why."""
        return [
            Problem(
                IGNORED, item.entity_path, change_numbers.get(item.entity_path), item.reason, name=item.name
            )
            for item in view.resolution.ignored
        ]
