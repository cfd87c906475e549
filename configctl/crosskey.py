"""Kafka's rules between keys, checked on the effective config a change leaves behind.

A key can be valid alone and wrong beside another: a broker refuses ``max.connections.per.ip=0``
unless per-IP overrides are set (``KafkaConfig.validateValues``), a topic refuses a minimum
compaction lag above its maximum (``LogConfig.validateValues``). Kafka checks these on the
config a broker would run with, every layer merged, and so does configctl: the caller hands in
the entity's effective values (from :mod:`configctl.handlers`, the listener's own resolution),
not just the keys being written. Which rules an entity's family answers to is its handler's to say
(``effective_rules``, ``own_rules`` in :mod:`configctl.handlers`). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from configctl import values

_VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")  # Kafka's Utils.validHostPattern
_LIST_SPLIT = re.compile(r"\s*,\s*")

Effective = Mapping[str, "str | None"]


def _number(config: Effective, name: str, kafka_type: str) -> float | None:
    raw = config.get(name)
    if raw is None:
        return None
    parsed, reason = values.parse(kafka_type, raw, shown="")
    return parsed if reason is None and isinstance(parsed, (int, float)) else None


def _flag(config: Effective, name: str) -> bool | None:
    raw = config.get(name)
    if raw is None:
        return None
    parsed, reason = values.parse("boolean", raw, shown="")
    return parsed if reason is None else None


def parse_csv_map(text: str) -> dict[str, str]:
    """Kafka's ``Csv.parseCsvMap``: ``host:value, host2:value`` split at the last ``:`` of each pair
    (so IPv6 hosts work); an entry without ``:`` is an error (Kafka fails on it too)."""
    result: dict[str, str] = {}
    if not text:
        return result
    for entry in _LIST_SPLIT.split(text):
        if ":" not in entry:
            raise ValueError(f"entry {entry!r} is not host:count")
        key, _, value = entry.rpartition(":")
        result[key.strip()] = value.strip()
    return result


def broker_problems(config: Effective) -> list[str]:
    """``KafkaConfig.validateValues``' rules that dynamic broker keys can break."""
    problems = []
    overrides_text = config.get("max.connections.per.ip.overrides") or ""
    try:
        overrides = parse_csv_map(values.java_trim(overrides_text))
    except ValueError as exc:
        problems.append(f"max.connections.per.ip.overrides: {exc}")
        overrides = {}
    bad_hosts = sorted(host for host in overrides if not _VALID_HOST.fullmatch(host))
    if bad_hosts:
        problems.append(
            f"max.connections.per.ip.overrides contains invalid addresses: {', '.join(bad_hosts)}"
        )
    bad_counts = sorted(host for host, count in overrides.items() if values.parse("int", count, shown="")[1])
    if bad_counts:
        problems.append(
            f"max.connections.per.ip.overrides: the count for {', '.join(bad_counts)} is not a whole number"
        )
    if _number(config, "max.connections.per.ip", "int") == 0 and not overrides:
        problems.append(
            "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides is set"
        )
    queued = _number(config, "queued.max.request.bytes", "long")
    request = _number(config, "socket.request.max.bytes", "int")
    if queued is not None and request is not None and queued > 0 and queued < request:
        problems.append("queued.max.request.bytes must be larger or equal to socket.request.max.bytes")
    idle = _number(config, "connections.max.idle.ms", "long")
    delay = _number(config, "connection.failed.authentication.delay.ms", "int")
    if idle is not None and delay is not None and idle >= 0 and delay >= idle:
        problems.append("connection.failed.authentication.delay.ms must be less than connections.max.idle.ms")
    return problems


def topic_problems(config: Effective, broker: Effective | None = None) -> list[str]:
    """``LogConfig.validateValues`` and the tiered-storage rules, on a topic's effective config.

    ``broker`` (the broker's effective config, when known) adds the rule that remote storage
    needs ``remote.log.storage.system.enable=true`` on the broker.
    """
    problems = []
    low = _number(config, "min.compaction.lag.ms", "long")
    high = _number(config, "max.compaction.lag.ms", "long")
    if low is not None and high is not None and low > high:
        problems.append(
            f"min.compaction.lag.ms ({int(low)}) must not be greater than max.compaction.lag.ms ({int(high)})"
        )
    if _flag(config, "remote.storage.enable") is not True:
        return problems
    policy = config.get("cleanup.policy")
    if policy is not None and "compact" in [p for p in _LIST_SPLIT.split(values.java_trim(policy)) if p]:
        problems.append(
            f"remote.storage.enable=true needs a cleanup.policy without compact (cleanup.policy is {policy.strip()!r})"
        )
    if broker is not None and _flag(broker, "remote.log.storage.system.enable") is False:
        problems.append(
            "remote.storage.enable=true needs remote.log.storage.system.enable=true on the broker"
        )
    unlimited: dict[str, Callable[[float], bool]] = {
        "retention.ms": lambda v: v == -1,
        "retention.bytes": lambda v: v <= -1,
    }
    for local_name, total_name in (
        ("local.retention.ms", "retention.ms"),
        ("local.retention.bytes", "retention.bytes"),
    ):
        local = _number(config, local_name, "long")
        total = _number(config, total_name, "long")
        if local is None or total is None or unlimited[total_name](total) or local == -2:
            continue
        if local < 0:
            problems.append(
                f"{local_name} must be -2 or between 0 and {total_name} ({int(total)}) when "
                f"remote.storage.enable=true, not {int(local)}"
            )
        elif local > total:
            problems.append(
                f"{local_name} ({int(local)}) must not be greater than {total_name} ({int(total)}) "
                "when remote.storage.enable=true"
            )
    return problems
