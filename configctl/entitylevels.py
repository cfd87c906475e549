r"""Quotas and IP connection rates: the first stored entity, most specific first, that defines a key.

Kafka's quota callback walks the 8 levels of users and clients (``users/<user>/clients/<client>``
down to ``clients/<default>``, :func:`configctl.catalogue.quota_precedence`) and takes each key
from the first level that sets it; an IP's connection rate comes from its own ``ips/<address>``
(matched by address, not spelling), else ``ips/<default>``, else the built-in default. The
answers are :class:`~configctl.precedence.EffectiveValue`\ s like every other effective value: the
source is the path that supplied it, the synonyms every level that defines it. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache

from configctl import catalogue, ips
from configctl.entities import DEFAULT, EntityType, sanitize
from configctl.errors import InvalidInput
from configctl.precedence import EffectiveValue, Synonym
from configctl.sources import DEFAULT_CONFIG


@cache
def _quota_keys() -> tuple[catalogue.ConfigKey, ...]:
    """The quota keys (SCRAM credentials live under users too but are not quotas)."""
    seen: dict[str, catalogue.ConfigKey] = {}
    for etype in (EntityType.CLIENTS, EntityType.USERS):
        for name, facts in catalogue.keys(etype).items():
            if facts.kafka_type != "scram_credential" and name not in seen:
                seen[name] = facts
    return tuple(seen.values())


def _first_defining(
    keys: tuple[catalogue.ConfigKey, ...], paths: list[str], configs: Mapping[str, Mapping[str, str]]
) -> dict[str, EffectiveValue]:
    present = [(path, cfg) for path in paths if (cfg := configs.get(path))]
    result = {}
    for facts in keys:
        name = facts.name
        found = [Synonym(name, cfg[name], path) for path, cfg in present if name in cfg]
        default = (Synonym(name, facts.default, DEFAULT_CONFIG),) if facts.default is not None else ()
        if found:
            first = found[0]
            result[name] = EffectiveValue(
                name, first.value, first.source, (*found, *default), facts.sensitive
            )
        else:
            result[name] = EffectiveValue(name, facts.default, DEFAULT_CONFIG, default, facts.sensitive)
    return result


def stored_quota_paths(user: str | None, client: str | None) -> list[str]:
    """The stored entity paths consulted for stored names (``User%3Aalice``, ``<default>``), most
    specific first; None means "not named": levels naming a user/client are skipped."""
    paths: list[str] = []
    for template in catalogue.quota_precedence():
        if "<user>" in template:
            if user is None:
                continue
            template = template.replace("<user>", user)
        if "<client-id>" in template:
            if client is None:
                continue
            template = template.replace("<client-id>", client)
        if template not in paths:
            paths.append(template)
    return paths


def quota_paths(user: str | None, client: str | None) -> list[str]:
    """The stored entity paths consulted for a connection from ``user`` with ``client``.

    ``user``/``client`` are a connection's plain principal name and client id (always names:
    a principal called ``<default>`` is sanitized like any other); None or empty (as Kafka treats
    an empty client id) means "not known".
    """
    return stored_quota_paths(sanitize(user) if user else None, sanitize(client) if client else None)


def resolve_quotas(
    user: str | None, client: str | None, configs: Mapping[str, Mapping[str, str]]
) -> dict[str, EffectiveValue]:
    """Each quota key's value for a connection from ``user`` with ``client`` (plain names).

    ``configs`` maps stored entity paths (``users/User%3Aalice/clients/app1``, ``clients/<default>``)
    to their config dicts. The source of a value is the path that supplied it; ``synonyms`` lists
    every level that defines the key, most specific first, then the default.
    """
    return _first_defining(_quota_keys(), quota_paths(user, client), configs)


def resolve_stored_quotas(
    user: str | None, client: str | None, configs: Mapping[str, Mapping[str, str]]
) -> dict[str, EffectiveValue]:
    """:func:`resolve_quotas` for stored names (an entity's own levels, ``<default>`` included)."""
    return _first_defining(_quota_keys(), stored_quota_paths(user, client), configs)


def ip_entity_path(
    ip: str,
    configs: Mapping[str, Mapping[str, str]],
    resolve: Callable[[str], ips.Address | None] = ips.literal,
) -> str | None:
    """Which stored IP entity governs address ``ip``: the one whose name stands for the same address.

    Brokers match by address, so ``::1`` finds ``ips/0:0:0:0:0:0:0:1``; an address stored under
    two spellings is decided once: the spelling given wins, else the first in path order.
    ``resolve`` turns a stored name into its address (literals only by default; readers that
    apply host-name entities pass :func:`configctl.ips.resolve`).
    """
    target = resolve(ip)
    if target is None:
        return None
    exact = f"ips/{ip}"
    if configs.get(exact):
        return exact
    for path in sorted(p for p in configs if p.startswith("ips/") and p != f"ips/{DEFAULT}"):
        if configs.get(path) and resolve(path[4:]) == target:
            return path
    return None


def resolve_ip(
    ip: str,
    configs: Mapping[str, Mapping[str, str]],
    resolve: Callable[[str], ips.Address | None] = ips.literal,
) -> dict[str, EffectiveValue]:
    """The IP connection-rate keys for ``ip``: its ``ips/<address>`` > ``ips/<default>`` > default."""
    paths = []
    if ip != DEFAULT:
        if resolve(ip) is None:
            raise InvalidInput(f"{ip!r} is not a valid IPv4 or IPv6 address")
        own = ip_entity_path(ip, configs, resolve)
        if own is not None:
            paths.append(own)
    paths.append(f"ips/{DEFAULT}")
    return _first_defining(tuple(catalogue.keys(EntityType.IPS).values()), paths, configs)
