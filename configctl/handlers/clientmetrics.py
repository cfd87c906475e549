"""Client-metrics subscriptions: ``client-metrics/<name>``, Kafka 4's ``--entity-type client-metrics``.

A subscription (KIP-714, ConfigResource CLIENT_METRICS, KRaft clusters only) tells the clients it
``match``es which ``metrics`` to push, every ``interval.ms``. Kafka 4.4 (``ClientMetricsConfigs``)
takes a subscription whole or not at all; a key it does not set has Kafka's default and nothing
else (there is no broker key behind it and no ``<default>`` subscription). A subscription moves
nothing but itself (which clients it reaches is the brokers' to work out, per connection).

Kafka 4.4's checks beyond each key's type (``ClientMetricsConfigs.validate``): ``interval.ms``
between 100 and 3,600,000 (in the schema, from a real broker's refusal), and each ``match`` entry
``<client field>=<regular expression>`` naming one of the client fields the schema lists
(``x-match-keys``). The expression itself is Java's to compile: a dry run asks the brokers.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from configctl import catalogue
from configctl.entities import Entity, EntityType
from configctl.handlers.base import Admission, BrokerView, Decrypt, FamilyHandler, Moved, Reads, changed_names
from configctl.handlers.whole import admit_whole
from configctl.precedence import EffectiveValue, Synonym
from configctl.sources import DEFAULT_CONFIG
from configctl.values import kafka_text

DYNAMIC_CLIENT_METRICS_CONFIG = "DYNAMIC_CLIENT_METRICS_CONFIG"
"""The source Kafka 4 reports for a key a subscription sets (ConfigSource 7)."""

MATCH = "match"


class ClientMetricsHandler(FamilyHandler):
    types = (EntityType.CLIENT_METRICS,)
    family = "client-metrics"
    independent = True

    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        return admit_whole(entity, stored, change_number)

    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        """Each key as the subscription sets it, else Kafka's default: no fallback."""
        own = view.configs.get(entity.path, {})
        values = {}
        for key in catalogue.keys(EntityType.CLIENT_METRICS).values():
            raw = own.get(key.name)
            if raw is not None:  # reported parsed and written back, as a 4.4 broker does (' a , b ' -> 'a,b')
                text = kafka_text(key.kafka_type, raw) if isinstance(raw, str) else raw
                mine = Synonym(key.name, text, DYNAMIC_CLIENT_METRICS_CONFIG)
                values[key.name] = EffectiveValue(
                    key.name, text, DYNAMIC_CLIENT_METRICS_CONFIG, (mine,), False
                )
            else:
                values[key.name] = EffectiveValue(key.name, key.default, DEFAULT_CONFIG, (), False)
        return values

    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        old, new = self.effective(entity, before), self.effective(entity, after)
        changed = changed_names(old, new)
        return [Moved(entity, new, changed)] if changed & wanted else []

    def reads(self, entity: Entity, broker_id: int) -> Reads:
        return Reads(paths=(entity.path,))

    def label(self, entity: Entity) -> str:
        return "client-metrics"

    def own_rules(self, config: Mapping[str, str]) -> list[str]:
        """Each ``match`` entry is ``<client field>=<pattern>`` on a field Kafka matches on."""
        raw = config.get(MATCH)
        if raw is None or not raw.strip():
            return []
        problems = []
        fields = match_keys()
        for entry in raw.split(","):
            parts = entry.split("=")
            if len(parts) != 2:
                problems.append(
                    f"{MATCH}: {entry.strip()!r} is not <client field>=<pattern> (one '=', fields: {', '.join(fields)})"
                )
            elif parts[0].strip() not in fields:
                problems.append(
                    f"{MATCH}: {parts[0].strip()!r} is not a client field Kafka matches on ({', '.join(fields)})"
                )
        return problems


@cache
def match_keys() -> tuple[str, ...]:
    """The client fields a ``match`` entry may name, as Kafka 4.4 lists them (the schema's)."""
    return tuple(catalogue.schema(EntityType.CLIENT_METRICS).get("x-match-keys") or ())
