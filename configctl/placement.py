"""Where Kafka takes a dynamic broker key: its update mode and ``<default>`` placement rules.

Kafka's ``DynamicBrokerConfig`` refuses (on write) and drops (on load) a dynamic broker key that:

* is read-only: only server.properties and a restart change it;
* is a security config that may change only per listener (``listener.name.<l>.<config>``);
* is per-broker and set at ``brokers/<default>`` (a listener-prefixed key is per-broker unless
  its base is one of the few cluster-wide listener configs);
* is a password config (or a custom key named like one) set at ``brokers/<default>``: passwords
  are encrypted per broker.

One function answers for the write side (:mod:`configctl.validation` refuses the change) and
for every reader (the listener and ``describe --effective`` drop the key, through validation),
so a key configctl writes is never one a broker ignores. Pure.
"""

from __future__ import annotations

from functools import cache, lru_cache

from configctl import catalogue
from configctl.entities import DEFAULT, EntityType


@cache
def _rules() -> tuple[frozenset[str], frozenset[str], tuple[str, ...]]:
    suffixes = tuple(catalogue.schema(EntityType.BROKERS).get("x-password-config-suffixes", ()))
    return catalogue.listener_prefixed_cluster_wide(), catalogue.listener_prefix_required(), suffixes


@lru_cache(maxsize=16384)
def problem(name: str, *, at_default: bool) -> str | None:
    """Why Kafka does not take broker key ``name`` at this level (one sentence), None when it does.

    ``at_default``: the key is set at ``brokers/<default>`` rather than ``brokers/<id>``. Keys the
    catalogue does not know (a plugin's custom config) are only checked for password placement.
    """
    cluster_wide_listener, prefix_required, password_suffixes = _rules()
    listener, base = catalogue.split_listener_prefix(name)
    prefixed = listener is not None
    key = catalogue.lookup(EntityType.BROKERS, name)
    if key is not None and not prefixed and key.read_only:
        return f"{name} is read-only: set it in server.properties and restart the broker"
    if key is not None and not prefixed and key.name in prefix_required:
        return f"{name} can only be updated per listener: use listener.name.<listener>.{name}"
    if not at_default:
        return None
    if (key is not None and not prefixed and key.per_broker) or (
        prefixed and base not in cluster_wide_listener
    ):
        return f"{name} can only be set per broker (brokers/<id>), not at brokers/{DEFAULT}"
    if (key is not None and key.sensitive) or any(name.endswith(s) for s in password_suffixes):
        return (
            f"{name} is a password config: it can only be set per broker (brokers/<id>), "
            f"not at brokers/{DEFAULT}"
        )
    return None
