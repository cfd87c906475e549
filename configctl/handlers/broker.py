"""Broker entities: ``brokers/<id>`` and ``brokers/<default>``, Kafka's ``BrokerConfigHandler``.

A broker follows its own ``brokers/<id>`` and the cluster-wide ``brokers/<default>``, never other
brokers' own configs. Keys are screened one by one, as Kafka's ``DynamicBrokerConfig`` does: a
misplaced or invalid key is dropped (reported as ``ignored``) and the rest of the layer applies.
The broker's own password configs are decrypted with its ``password.encoder.secret`` (when the
reader has it: the listener does, ``describe --effective`` shows them masked anyway).

On the write side a broker key is checked as Kafka's ``DynamicBrokerConfig.validateConfigs`` checks
it (listener prefixes, update mode, ``<default>`` placement), its passwords are stored encrypted,
and Kafka's ZooKeeper admin path refuses the write while the brokers it concerns run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from configctl import agreement, brokerkeys, catalogue, crosskey
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

if TYPE_CHECKING:
    from configctl.handlers.sidecar import Asker, Model


class BrokerHandler(FamilyHandler):
    types = (EntityType.BROKERS,)
    family = "brokers"
    layered = True
    encrypts_passwords = True
    refused_while_brokers_run = True
    rule_keys = frozenset({"max.connections.per.ip", "max.connections.per.ip.overrides"})

    def layer(self, broker_id: int | None) -> Entity:
        """One of a broker's two dynamic layers: ``brokers/<id>``, or ``brokers/<default>`` for None."""
        return Entity(EntityType.BROKERS, DEFAULT if broker_id is None else str(broker_id))

    def follows(self, entity: Entity, broker_id: int) -> bool:
        return entity.name in (str(broker_id), DEFAULT)

    def disagreements(
        self, entity: Entity, keys: frozenset[str], broker_id: int, model: Model, broker: Asker
    ) -> list[agreement.Mismatch]:
        """Either layer is compared as the broker's whole config; a change naming no key still asks
        (:data:`agreement.PROBE_KEY`): does the broker answer at all?"""
        reported = broker.describe_broker(broker_id, sorted(keys) or [agreement.PROBE_KEY])
        return agreement.configs(
            entity.path, agreement.only(model.broker_config(), keys), agreement.only(reported, keys)
        )

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
            if self.is_password(name):
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
            result.append(Moved(self.layer(after.broker_id), new, changed))
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

    # ---------------------------------------------------------------------------- validation

    def check_key(self, entity: Entity, name: str, raw: Any, allow_custom: bool, problems: list[str]) -> None:
        """Kafka's DynamicBrokerConfig.validateConfigs, then the value checks of the (base) key."""
        brokerkeys.check_key(
            name, raw, at_default=entity.name == DEFAULT, allow_custom=allow_custom, problems=problems
        )

    # ---------------------------------------------------------------------------- the write path

    def is_password(self, name: str) -> bool:
        return catalogue.is_sensitive(EntityType.BROKERS, name)

    def effective_rules(
        self, config: Mapping[str, str | None], broker: Mapping[str, str | None]
    ) -> list[str]:
        return crosskey.broker_problems(config)

    def judged_on(self, entity: Entity, running: Sequence[int]) -> list[int]:
        """``brokers/<id>`` on that broker alone, ``brokers/<default>`` on every running one."""
        if not entity.user_is_default:
            return [int(entity.name)]
        return list(running)
