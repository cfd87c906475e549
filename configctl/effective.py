"""``describe --effective``: what a broker ends up with, computed as its listener computes it.

The dynamic layers come from ZooKeeper; the static layer (server.properties) is the one the
broker's listener published in ``/configctl/brokers/<id>`` (Contract 4). Both then go through the
same :mod:`configctl.precedence` functions the listener uses, so the answer is what a listener
on that broker would say (up to changes it has not applied yet: ``last_applied_change`` tells).

Only a running listener publishes its static config, so asking about a broker without one is a
:class:`NotFound` error rather than a guess that would label server.properties values as
built-in defaults. Its sensitive static values are published masked; they are masked in the
output anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from configctl import fleet
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput, NotFound
from configctl.precedence import (
    EffectiveValue,
    Ignored,
    quota_paths,
    resolve_broker,
    resolve_ip,
    resolve_quotas,
    resolve_topic,
)
from configctl.zk.configstore import ConfigStore
from configctl.znodes import BrokerStateZNode


@dataclass(frozen=True)
class EffectiveReport:
    """One entity's effective config on one broker, ready for rendering."""

    broker_id: int
    entity_path: str
    values: tuple[EffectiveValue, ...]
    ignored: tuple[Ignored, ...]
    last_applied_change: int | None

    def to_json(self) -> dict[str, Any]:
        """Contract 3: ``{"broker_id","entity_path","configs":[{"name","value","source","synonyms"}]}``."""
        return {
            "broker_id": self.broker_id,
            "entity_path": self.entity_path,
            "configs": [value.to_json(mask=True) for value in self.values],
        }


def published_static_config(store: ConfigStore, broker_id: int) -> tuple[dict[str, str], int | None]:
    """The static config broker ``broker_id``'s listener published, and its last applied change."""
    state = fleet.broker_state(store.session, broker_id)
    if state is None:
        raise NotFound(
            f"broker {broker_id} has no running listener ({BrokerStateZNode.path(broker_id)} is absent), "
            "so its server.properties is unknown; start it with: configctl listener run "
            f"--broker-id {broker_id} --server-properties FILE"
        )
    static = state.get("static_config")
    if not isinstance(static, Mapping):
        raise InvalidInput(f"{BrokerStateZNode.path(broker_id)} holds no static_config object")
    last = state.get("last_applied_change")
    return {str(k): str(v) for k, v in static.items()}, last if isinstance(last, int) else None


def effective_config(store: ConfigStore, broker_id: int, target: Entity | None = None) -> EffectiveReport:
    """Broker ``broker_id``'s effective config, or ``target``'s (topic, quota entity, IP) as it sees it."""
    static, last = published_static_config(store, broker_id)
    per_broker, cluster_default = store.read_many(
        [Entity.of(EntityType.BROKERS, str(broker_id)), Entity.of(EntityType.BROKERS, DEFAULT)]
    )
    resolution = resolve_broker(broker_id, per_broker.config, cluster_default.config, static)
    if target is None or target.type is EntityType.BROKERS:
        if target is not None and target.name != str(broker_id):
            raise InvalidInput(f"--effective shows one broker: --broker {broker_id}, not {target.path}")
        values: Mapping[str, EffectiveValue] = resolution.values
        path = f"brokers/{broker_id}"
        ignored = resolution.ignored
    elif target.type is EntityType.TOPICS:
        (stored,) = store.read_many([target])
        values = resolve_topic(target.name, stored.config, resolution.values)
        path, ignored = target.path, ()
    elif target.type is EntityType.IPS:
        values = resolve_ip(target.name, _read_paths(store, _ip_paths(target.name)))
        path, ignored = target.path, ()
    else:
        user, client = (
            (target.name, target.client) if target.type is EntityType.USERS else (None, target.name)
        )
        values = resolve_quotas(user, client, _read_paths(store, quota_paths(user, client)))
        path, ignored = target.path, ()
    ordered = tuple(values[name] for name in sorted(values))
    return EffectiveReport(broker_id, path, ordered, tuple(ignored), last)


def _ip_paths(ip: str) -> list[str]:
    import ipaddress

    paths = [f"ips/{DEFAULT}"]
    if ip != DEFAULT:
        address = ipaddress.ip_address(ip)
        for spelling in (ip, address.compressed, address.exploded):
            if f"ips/{spelling}" not in paths:
                paths.append(f"ips/{spelling}")
    return paths


def _read_paths(store: ConfigStore, paths: list[str]) -> dict[str, dict[str, str]]:
    """The configs stored at the given entity paths (absent ones left out), read pipelined."""
    entities = [Entity.from_path(path) for path in paths]
    return {stored.entity.path: stored.config for stored in store.read_many(entities) if stored.config}
