"""What a config change means to one broker: Kafka's DynamicConfigManager, without the ZooKeeper.

The manager holds the configs in force for one broker (every entity a broker follows: all
topics, users, clients and IPs, plus ``brokers/<id>`` and ``brokers/<default>``), the broker's
resolved effective config, and the bookkeeping a fleet operator needs (poison input, plugin
rejections, counters). It is fed raw node bytes by :mod:`configctl.listener.runtime` and never
touches ZooKeeper itself, so every rule here is unit-tested without a server.

One entity change goes through, in order:

1. decode (Kafka's strict JSON shape) and validate (the schemas). A config that fails is *poison*:
   logged once, counted, listed in the broker state, and the previous good config of that entity
   stays in force. Broker entities are screened per key instead, as Kafka's DynamicBrokerConfig
   does: an invalid or undecryptable key is dropped and the rest applies.
2. work out what changes in effect (precedence): for a broker entity the new effective broker
   config and every topic whose fallback moved; for a quota entity every quota entity whose
   resolution moved; and so on.
3. let every interested plugin validate every resulting :class:`ConfigUpdate`; one rejection keeps
   the old config for that entity everywhere.
4. commit under the lock (queries from other threads see either the old or the new config, never
   a mix), then tell the plugins.

Queries (:meth:`broker_config`, :meth:`topic_config`, ...) are thread-safe. The mutating methods
are meant to be called from one thread (the listener's worker).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from configctl import catalogue
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput
from configctl.listener.plugins import ConfigUpdate, LoadedPlugin, PluginContext
from configctl.precedence import (
    DYNAMIC_TOPIC_CONFIG,
    BrokerResolution,
    EffectiveValue,
    resolve_broker,
    resolve_ip,
    resolve_quotas,
    resolve_topic,
)
from configctl.secrets import MASK, PasswordEncoder, digest
from configctl.validation import validate_config
from configctl.znodes import decode_entity_config, decode_notification

log = logging.getLogger("configctl.listener")

NO_CHANGE = -1
"""``last_applied_change`` before any notification was seen (Kafka's lastExecutedChange starts here)."""

MAX_REPORTED = 100
"""At most this many poison / rejection records are kept in the broker state (newest win)."""

_PASSWORD_SECRET = "password.encoder.secret"
_OLD_PASSWORD_SECRET = "password.encoder.old.secret"


# --------------------------------------------------------------------------------------------
# Inputs and records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RawNotification:
    """A notification node as read: its change number, node name and bytes (None: vanished)."""

    number: int
    name: str
    data: bytes | None


@dataclass(frozen=True)
class EntityRead:
    """An entity config node as read: raw bytes, or None when the node does not exist."""

    entity: Entity
    data: bytes | None
    change_number: int | None = None


@dataclass
class Problem:
    """Poison input or a rejected update, as reported in the broker state."""

    kind: str  # notification | config | key | entity | rejected
    subject: str  # notification node name or entity path
    reason: str
    change_number: int | None
    at_ms: int
    name: str | None = None  # the config key, for key-level problems
    plugin: str | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"kind": self.kind, "subject": self.subject}
        if self.name is not None:
            document["name"] = self.name
        if self.plugin is not None:
            document["plugin"] = self.plugin
        document.update({"reason": self.reason, "change_number": self.change_number, "at_ms": self.at_ms})
        return document


@dataclass(frozen=True)
class KeyChange:
    """One stored key that changed, with the effective value it now gives this broker."""

    name: str
    stored: str | None  # None: deleted
    effective: EffectiveValue | None

    def describe(self) -> str:
        eff = self.effective
        sensitive = eff.sensitive if eff is not None else False
        shown_stored = MASK if sensitive and self.stored is not None else self.stored
        if eff is None:
            return f"{self.name}={shown_stored}" if self.stored is not None else f"{self.name} deleted"
        shown_eff = MASK if eff.sensitive and eff.value is not None else eff.value
        if self.stored is None:
            return f"{self.name} deleted (now {shown_eff} from {eff.source})"
        if eff.value == self.stored:
            return f"{self.name}={shown_stored} ({eff.source})"
        return f"{self.name}={shown_stored} (in effect: {shown_eff} from {eff.source})"


@dataclass(frozen=True)
class AppliedChange:
    """An entity change that took effect; ``change_number`` None means a full load found it."""

    change_number: int | None
    entity_path: str
    keys: tuple[KeyChange, ...]

    def describe(self) -> str:
        label = (
            f"applied change {self.change_number}" if self.change_number is not None else "applied on reload"
        )
        body = ", ".join(k.describe() for k in self.keys) if self.keys else "no key changed"
        return f"{label}: {self.entity_path} {body}"


@dataclass
class BatchResult:
    applied: list[AppliedChange] = field(default_factory=list)
    poisoned: int = 0
    rejected: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.applied)


@dataclass
class _Proposal:
    """What committing one entity change would do."""

    path: str
    new_config: dict[str, str]
    resolution: BrokerResolution | None
    updates: list[tuple[ConfigUpdate, list[LoadedPlugin]]]
    keys: tuple[KeyChange, ...]


# --------------------------------------------------------------------------------------------
# The manager
# --------------------------------------------------------------------------------------------


class DynamicConfigManager:
    """The dynamic config one broker runs with, and how it got there."""

    def __init__(
        self,
        broker_id: int,
        static_config: Mapping[str, str],
        plugins: Sequence[LoadedPlugin] = (),
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.broker_id = int(broker_id)
        self.static_config: dict[str, str] = {str(k): str(v) for k, v in static_config.items()}
        self.plugins = list(plugins)
        self._clock = clock
        self._lock = threading.RLock()
        self._own_path = f"brokers/{self.broker_id}"
        self._default_path = f"brokers/{DEFAULT}"
        # stored entity path -> config in force (non-empty only; own broker: decrypted, screened)
        self._configs: dict[str, dict[str, str]] = {}
        self._topics: set[str] = set()  # every topic with a config node, overrides or not
        # stored paths with a config, per family (quotas, ips): they resolve against each other
        self._families: dict[str, set[str]] = {"quotas": set(), "ips": set()}
        self._resolution = resolve_broker(self.broker_id, {}, {}, self.static_config)
        self._encoders = self._password_encoders()
        self.last_applied_change = NO_CHANGE
        self.applied_at_ms: int | None = None
        self.counters: dict[str, int] = {
            "applied_changes": 0,
            "poison_notifications": 0,
            "poison_configs": 0,
            "rejected_updates": 0,
            "plugin_errors": 0,
            "full_loads": 0,
        }
        self._poison: dict[tuple[str, str, str | None], Problem] = {}  # active, by (kind, subject, name)
        self._poison_seen: set[tuple[str, str, str | None, str]] = set()  # logged once
        self._rejected: dict[str, Problem] = {}  # entity path -> latest rejection
        self._rejections_seen: set[tuple[str, str, str]] = set()
        # snapshot fragments: rendered JSON middles, cached because topics can be 100,000s
        self._topic_lines: dict[str, tuple[str, ...]] = {}
        self._topic_order: list[str] | None = None  # sorted keys of _topic_lines, rebuilt on add/remove
        self._broker_lines: tuple[str, ...] | None = None
        self._other_lines: tuple[str, ...] | None = None

    # ------------------------------------------------------------------------------ plugins

    def configure_plugins(self) -> None:
        """Hand every plugin its context (before the initial load)."""
        for plugin in self.plugins:
            try:
                plugin.configure(PluginContext(self.broker_id, self))
            except Exception as exc:
                raise InvalidInput(f"plugin {plugin.name} failed to configure: {_one_line(exc)}") from None

    def close_plugins(self) -> None:
        for plugin in self.plugins:
            try:
                plugin.close()
            except Exception:
                log.exception("plugin %s failed to close", plugin.name)

    # ------------------------------------------------------------------------------ queries

    def broker_config(self) -> Mapping[str, EffectiveValue]:
        """Every effective config of this broker (catalogue keys plus custom ones set anywhere)."""
        with self._lock:
            return self._resolution.values

    def topic_config(self, topic: str) -> dict[str, EffectiveValue]:
        with self._lock:
            overrides = self._configs.get(f"topics/{topic}", {})
            broker = self._resolution.values
        return resolve_topic(topic, overrides, broker)

    def quota_config(self, user: str | None = None, client: str | None = None) -> dict[str, EffectiveValue]:
        """The quotas of a connection from ``user`` with ``client`` (plain names; None: not known)."""
        with self._lock:
            return resolve_quotas(user, client, self._configs)

    def ip_config(self, ip: str) -> dict[str, EffectiveValue]:
        with self._lock:
            return resolve_ip(ip, self._configs)

    def entity_config(self, entity: Entity) -> dict[str, str]:
        """The stored config in force for ``entity`` (own broker: decrypted)."""
        with self._lock:
            return dict(self._configs.get(entity.path, {}))

    def effective(self, entity: Entity) -> dict[str, EffectiveValue]:
        """The effective config of any entity as this broker sees it."""
        if entity.type is EntityType.TOPICS:
            return self.topic_config(entity.name)
        if entity.type is EntityType.BROKERS:
            if entity.name not in (str(self.broker_id), DEFAULT):
                raise InvalidInput(f"this listener is broker {self.broker_id}, not {entity.path}")
            return dict(self.broker_config())
        if entity.type is EntityType.IPS:
            return self.ip_config(entity.name)
        with self._lock:
            return self._entity_values(entity, self._configs)

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._topics)

    def configs(self) -> dict[str, dict[str, str]]:
        """Every non-empty config in force, by stored entity path (own broker: decrypted)."""
        with self._lock:
            return {path: dict(config) for path, config in self._configs.items()}

    def ignored(self) -> list[dict[str, str]]:
        with self._lock:
            return [
                {"entity_path": i.entity_path, "name": i.name, "reason": i.reason}
                for i in self._resolution.ignored
            ]

    def poison(self) -> list[Problem]:
        with self._lock:
            return list(self._poison.values())

    def rejected(self) -> list[Problem]:
        with self._lock:
            return list(self._rejected.values())

    def is_relevant(self, entity: Entity) -> bool:
        """A broker follows every entity except other brokers' own configs."""
        if entity.type is EntityType.BROKERS:
            return entity.name in (str(self.broker_id), DEFAULT)
        return True

    # ------------------------------------------------------------------------------ notifications

    def plan(self, notifications: Sequence[RawNotification]) -> list[tuple[Entity, int]]:
        """Decode a batch, record the malformed ones, coalesce: ``[(entity, latest change number)]``.

        Entities come out in the order of their latest notification, so later changes are
        applied after earlier ones; several notifications for one entity need one read.
        """
        latest: dict[Entity, int] = {}
        for item in notifications:
            if item.data is None:
                continue
            try:
                entity = decode_notification(item.data)
            except InvalidInput as exc:
                self._add_poison("notification", item.name, str(exc), item.number)
                continue
            if not self.is_relevant(entity):
                continue
            latest.pop(entity, None)
            latest[entity] = item.number
        return list(latest.items())

    def bad_notification_name(self, name: str) -> None:
        """A node under /config/changes that is not ``config_change_NNNNNNNNNN``."""
        self._add_poison("notification", name, "not a config change notification node name", None)

    def bad_entity_name(self, path: str, reason: str) -> None:
        self._add_poison("entity", path, reason, None)

    # ------------------------------------------------------------------------------ applying

    def apply(self, reads: Sequence[EntityRead], up_to: int | None) -> BatchResult:
        """Apply entity changes in order and move ``last_applied_change`` to ``up_to``."""
        result = BatchResult()
        for read in reads:
            self._apply_one(read, result)
        for change in result.applied:
            log.info("%s", change.describe())
        self._finish(result, up_to)
        return result

    def reconcile(
        self, reads: Iterable[EntityRead], up_to: int | None, *, initial: bool = False
    ) -> BatchResult:
        """A full load: make the configs in force equal ``reads`` (everything in ZooKeeper).

        Entities in force but absent from ``reads`` are gone from ZooKeeper and are dropped.
        Only differences are applied (and logged, except on the initial load, which logs a summary).
        """
        result = BatchResult()
        seen: set[str] = set()
        topics: set[str] = set()
        count = 0
        for read in reads:
            if not self.is_relevant(read.entity):
                continue
            count += 1
            seen.add(read.entity.path)
            if read.entity.type is EntityType.TOPICS and read.data is not None:
                topics.add(read.entity.name)
            self._apply_one(read, result)
        for path in [p for p in self._configs if p not in seen]:
            try:
                entity = Entity.from_path(path)
            except InvalidInput:
                continue
            self._apply_one(EntityRead(entity, None), result)
        with self._lock:
            self._topics = topics | {p.partition("/")[2] for p in self._configs if p.startswith("topics/")}
            for key in [k for k in self._poison if k[0] in ("config", "key") and k[1] not in seen]:
                del self._poison[key]  # the bad node is gone from ZooKeeper
        self.counters["full_loads"] += 1
        if initial:
            log.info(
                "loaded %d entity configs (%d with overrides) up to change %s",
                count,
                len(self._configs),
                up_to if up_to is not None else "none",
            )
        else:
            for change in result.applied:
                log.info("%s", change.describe())
            log.info(
                "reloaded %d entity configs up to change %s: %d changed", count, up_to, len(result.applied)
            )
        self._finish(result, up_to)
        return result

    def _finish(self, result: BatchResult, up_to: int | None) -> None:
        with self._lock:
            if up_to is not None:
                self.last_applied_change = up_to
            self.applied_at_ms = self._now_ms()
            self.counters["applied_changes"] += len(result.applied)

    def _apply_one(self, read: EntityRead, result: BatchResult) -> None:
        entity = read.entity
        path = entity.path
        if not self.is_relevant(entity):
            return
        if entity.type is EntityType.TOPICS and read.data is not None and entity.name not in self._topics:
            with self._lock:
                self._topics.add(entity.name)
        try:
            stored = _interned(decode_entity_config(read.data)) if read.data is not None else {}
        except InvalidInput as exc:
            self._add_poison("config", path, str(exc), read.change_number)
            result.poisoned += 1
            return
        if entity.type is EntityType.BROKERS:
            config = self._screen_broker(entity, stored, read.change_number)
        else:
            problems = validate_config(entity, stored)
            if problems:
                self._add_poison("config", path, "; ".join(problems), read.change_number)
                result.poisoned += 1
                return
            config = stored
        self._clear_poison("config", path)
        old = self._configs.get(path, {})
        if config == old:
            if read.data is None and entity.type is EntityType.TOPICS:
                with self._lock:
                    self._topics.discard(entity.name)
            self._clear_rejection(path)
            return
        proposal = self._propose(entity, path, old, config, read.change_number)
        rejection = self._validate(proposal)
        if rejection is not None:
            plugin, reason = rejection
            self._reject(path, plugin, reason, read.change_number)
            result.rejected += 1
            return
        self._commit(entity, proposal, removed=read.data is None)
        self._clear_rejection(path)
        result.applied.append(AppliedChange(read.change_number, path, proposal.keys))
        for update, plugins in proposal.updates:
            for plugin in plugins:
                try:
                    plugin.reconfigure(update)
                except Exception as exc:
                    self.counters["plugin_errors"] += 1
                    log.error(
                        "plugin %s failed to apply %s: %s", plugin.name, update.entity_path, _one_line(exc)
                    )

    # ------------------------------------------------------------------------------ broker screening

    def _password_encoders(self) -> list[PasswordEncoder]:
        encoders = []
        for key in (_PASSWORD_SECRET, _OLD_PASSWORD_SECRET):
            secret = self.static_config.get(key)
            if secret:
                try:
                    encoders.append(PasswordEncoder(secret))
                except InvalidInput as exc:
                    log.error("server.properties %s is unusable: %s", key, exc)
        return encoders

    def _screen_broker(
        self, entity: Entity, stored: Mapping[str, str], change_number: int | None
    ) -> dict[str, str]:
        """Kafka's per-key screening of a dynamic broker config: invalid keys are dropped, not the entity.

        Password configs of this broker are decrypted with server.properties'
        ``password.encoder.secret`` (or the old secret), so plugins see real values.
        """
        path = entity.path
        self._clear_poison("key", path, None)
        kept: dict[str, str] = {}
        own = path == self._own_path
        for name, value in stored.items():
            problems = validate_config(entity, {name: value}, allow_custom=True)
            if problems:
                self._add_poison("key", path, "; ".join(problems), change_number, name=name)
                continue
            if own and catalogue.is_sensitive(EntityType.BROKERS, name):
                plain = self._decrypt(name, value)
                if plain is None:
                    reason = (
                        f"cannot decrypt {name}: server.properties has no {_PASSWORD_SECRET}"
                        if not self._encoders
                        else f"cannot decrypt {name}: wrong {_PASSWORD_SECRET} or corrupt value"
                    )
                    self._add_poison("key", path, reason, change_number, name=name)
                    continue
                value = plain
            kept[name] = value
        return kept

    def _decrypt(self, name: str, value: str) -> str | None:
        for encoder in self._encoders:
            try:
                return encoder.decode(value, name=name)
            except InvalidInput:
                continue
        return None

    # ------------------------------------------------------------------------------ proposals

    def _propose(
        self, entity: Entity, path: str, old: dict[str, str], new: dict[str, str], number: int | None
    ) -> _Proposal:
        configs = self._configs
        changed_names = sorted(set(old) | set(new), key=lambda n: (n not in new, n))
        diffs = [n for n in changed_names if old.get(n) != new.get(n)]
        resolution = None
        updates: list[tuple[ConfigUpdate, list[LoadedPlugin]]] = []
        etype = entity.type
        if etype is EntityType.BROKERS:
            per = new if path == self._own_path else configs.get(self._own_path, {})
            shared = new if path == self._default_path else configs.get(self._default_path, {})
            resolution = resolve_broker(self.broker_id, per, shared, self.static_config)
            values = resolution.values
            keys = tuple(KeyChange(n, new.get(n), values.get(n)) for n in diffs)
            if self.plugins:
                updates = self._broker_updates(resolution, number)
        elif etype is EntityType.TOPICS:
            after = resolve_topic(entity.name, new, self._resolution.values)
            keys = tuple(KeyChange(n, new.get(n), after.get(n)) for n in diffs)
            if self.plugins:
                before = resolve_topic(entity.name, old, self._resolution.values)
                changed = frozenset(n for n in set(old) | set(new) if _differs(before.get(n), after.get(n)))
                updates = self._dispatch([(ConfigUpdate(entity, after, changed, number))])
        else:
            proposed = _Overlay(configs, path, new)
            after = self._entity_values(entity, proposed)
            keys = tuple(KeyChange(n, new.get(n), after.get(n)) for n in diffs)
            if self.plugins:
                updates = self._neighbour_updates(entity, path, proposed, number)
        return _Proposal(path, new, resolution, updates, keys)

    def _entity_values(
        self, entity: Entity, configs: Mapping[str, Mapping[str, str]]
    ) -> dict[str, EffectiveValue]:
        """Effective values of a quota or IP entity for its own (user, client) / address."""
        if entity.type is EntityType.IPS:
            return resolve_ip(entity.name, configs)
        if entity.type is EntityType.USERS:
            values = resolve_quotas(entity.name, entity.client, configs)
        else:
            values = resolve_quotas(None, entity.name, configs)
        # Non-quota keys (SCRAM credentials) are in force exactly as stored on the entity itself.
        for name, raw in configs.get(entity.path, {}).items():
            if name not in values:
                sensitive = catalogue.is_sensitive(entity.type, name)
                values[name] = EffectiveValue(name, raw, entity.path, (), sensitive)
        return values

    def _broker_updates(
        self, resolution: BrokerResolution, number: int | None
    ) -> list[tuple[ConfigUpdate, list[LoadedPlugin]]]:
        """The broker's own update, and one per known topic whose fallback value moved."""
        before, after = self._resolution.values, resolution.values
        changed = frozenset(n for n in set(before) | set(after) if _differs(before.get(n), after.get(n)))
        own = Entity(EntityType.BROKERS, str(self.broker_id))
        candidates = [ConfigUpdate(own, after, changed, number)] if changed else []
        wanted = frozenset().union(*(p.configs for p in self.plugins))
        old_fb, new_fb = before.topic_fallbacks(), after.topic_fallbacks()
        moved = frozenset(n for n in new_fb if n in wanted and _differs(old_fb.get(n), new_fb.get(n)))
        if moved:
            for topic in sorted(self._topics):
                overrides = self._configs.get(f"topics/{topic}", {})
                affected = moved.difference(overrides)
                if affected:
                    values = resolve_topic(topic, overrides, after)
                    candidates.append(
                        ConfigUpdate(Entity(EntityType.TOPICS, topic), values, affected, number)
                    )
        return self._dispatch(candidates)

    def _neighbour_updates(
        self, entity: Entity, path: str, proposed: Mapping[str, Mapping[str, str]], number: int | None
    ) -> list[tuple[ConfigUpdate, list[LoadedPlugin]]]:
        """Updates for the changed quota/IP entity and every known entity of its kind it shadows."""
        paths = {path} | self._families[_family(path) or "quotas"]
        candidates = []
        for other_path in sorted(paths):
            try:
                other = entity if other_path == path else Entity.from_path(other_path)
            except InvalidInput:
                continue
            before = self._entity_values(other, self._configs)
            after = self._entity_values(other, proposed)
            changed = frozenset(n for n in set(before) | set(after) if _differs(before.get(n), after.get(n)))
            if changed:
                candidates.append(ConfigUpdate(other, after, changed, number))
        return self._dispatch(candidates)

    def _dispatch(self, candidates: Iterable[ConfigUpdate]) -> list[tuple[ConfigUpdate, list[LoadedPlugin]]]:
        routed = []
        for update in candidates:
            interested = [p for p in self.plugins if not p.configs.isdisjoint(update.changed)]
            if interested:
                routed.append((update, interested))
        return routed

    def _validate(self, proposal: _Proposal) -> tuple[str, str] | None:
        for update, plugins in proposal.updates:
            for plugin in plugins:
                try:
                    plugin.validate(update)
                except Exception as exc:
                    return plugin.name, f"{update.entity_path}: {_one_line(exc)}"
        return None

    # ------------------------------------------------------------------------------ commit

    def _commit(self, entity: Entity, proposal: _Proposal, *, removed: bool) -> None:
        path = proposal.path
        with self._lock:
            family = _family(path)
            if proposal.new_config:
                self._configs[path] = proposal.new_config
                if family is not None:
                    self._families[family].add(path)
            else:
                self._configs.pop(path, None)
                if family is not None:
                    self._families[family].discard(path)
            if proposal.resolution is not None:
                self._resolution = proposal.resolution
                self._broker_lines = None
            if entity.type is EntityType.TOPICS:
                if removed:
                    self._topics.discard(entity.name)
                else:
                    self._topics.add(entity.name)
                if proposal.new_config:
                    if path not in self._topic_lines:
                        self._topic_order = None
                    self._topic_lines[path] = self._render_topic(entity.name, proposal.new_config)
                elif self._topic_lines.pop(path, None) is not None:
                    self._topic_order = None
            elif entity.type is not EntityType.BROKERS:
                self._other_lines = None

    # ------------------------------------------------------------------------------ problems

    def _add_poison(
        self, kind: str, subject: str, reason: str, number: int | None, *, name: str | None = None
    ) -> None:
        seen_key = (kind, subject, name, reason)
        first = seen_key not in self._poison_seen
        if first:
            if len(self._poison_seen) >= 100_000:  # bound the memory of "already logged"
                self._poison_seen.clear()
            self._poison_seen.add(seen_key)
            self.counters["poison_notifications" if kind == "notification" else "poison_configs"] += 1
            where = f"{subject} {name}" if name else subject
            tail = "" if kind in ("notification", "entity") else "; the previous config stays in force"
            log.warning("ignoring malformed %s %s (change %s): %s%s", kind, where, number, reason, tail)
        with self._lock:
            key = (kind, subject, name)
            self._poison.pop(key, None)
            self._poison[key] = Problem(kind, subject, reason, number, self._now_ms(), name=name)
            while len(self._poison) > MAX_REPORTED:
                self._poison.pop(next(iter(self._poison)))

    def _clear_poison(self, kind: str, subject: str, name: str | None = None) -> None:
        with self._lock:
            if kind == "key":
                for key in [k for k in self._poison if k[0] == "key" and k[1] == subject]:
                    del self._poison[key]
            else:
                self._poison.pop((kind, subject, name), None)

    def _reject(self, path: str, plugin: str, reason: str, number: int | None) -> None:
        seen_key = (path, plugin, reason)
        if seen_key not in self._rejections_seen:
            self._rejections_seen.add(seen_key)
            self.counters["rejected_updates"] += 1
            log.warning(
                "plugin %s rejected change %s to %s: %s; the previous config stays in force",
                plugin,
                number,
                path,
                reason,
            )
        with self._lock:
            self._rejected.pop(path, None)
            self._rejected[path] = Problem("rejected", path, reason, number, self._now_ms(), plugin=plugin)
            while len(self._rejected) > MAX_REPORTED:
                self._rejected.pop(next(iter(self._rejected)))

    def _clear_rejection(self, path: str) -> None:
        if path in self._rejected:
            with self._lock:
                self._rejected.pop(path, None)

    # ------------------------------------------------------------------------------ state & snapshot

    def masked_static_config(self) -> dict[str, str]:
        return {
            k: (MASK if catalogue.is_sensitive(EntityType.BROKERS, k) else v)
            for k, v in sorted(self.static_config.items())
        }

    def static_config_digests(self) -> dict[str, str]:
        """Digests of the sensitive static values, so drift in them is visible without the values."""
        return {
            k: digest(v)
            for k, v in sorted(self.static_config.items())
            if catalogue.is_sensitive(EntityType.BROKERS, k)
        }

    def state_document(self) -> dict[str, Any]:
        """Contract 4's broker state, plus what an operator needs to trust it."""
        with self._lock:
            return {
                "broker_id": self.broker_id,
                "last_applied_change": self.last_applied_change,
                "applied_at_ms": self.applied_at_ms,
                "static_config": self.masked_static_config(),
                "static_config_digests": self.static_config_digests(),
                "counters": dict(self.counters),
                "poison": [p.to_json() for p in self._poison.values()],
                "rejected": [p.to_json() for p in self._rejected.values()],
                "ignored": [
                    {"entity_path": i.entity_path, "name": i.name, "reason": i.reason}
                    for i in self._resolution.ignored
                ],
                "plugins": [p.name for p in self.plugins],
                "entities": len(self._configs),
            }

    def snapshot_lines(self, captured_at_ms: int | None = None) -> Iterator[str]:
        """Contract 4's JSON Lines: every broker key, then every overridden key of other entities.

        Each line is rendered as ``prefix + middle + suffix`` where only the middle depends on
        the entity, and the middles are cached: writing 100,000 topic overrides is a join, not
        100,000 precedence resolutions.
        """
        with self._lock:
            captured = self._now_ms() if captured_at_ms is None else captured_at_ms
            prefix = f'{{"broker_id":{self.broker_id},"change_number":{self.last_applied_change},'
            suffix = f',"captured_at_ms":{captured}}}\n'
            if self._broker_lines is None:
                self._broker_lines = self._render_broker()
            if self._other_lines is None:
                self._other_lines = self._render_others()
            groups: list[Iterable[str]] = [self._broker_lines]
            if self._topic_order is None:
                self._topic_order = sorted(self._topic_lines)
            topic_groups = [self._topic_lines[p] for p in self._topic_order]
            others = self._other_lines
        for middle in groups[0]:
            yield prefix + middle + suffix
        for lines in topic_groups:
            for middle in lines:
                yield prefix + middle + suffix
        for middle in others:
            yield prefix + middle + suffix

    def _render_broker(self) -> tuple[str, ...]:
        path = self._own_path
        return tuple(_middle(path, ev) for _, ev in sorted(self._resolution.values.items()))

    def _render_topic(self, topic: str, overrides: Mapping[str, str]) -> tuple[str, ...]:
        values = resolve_topic(topic, overrides, self._resolution.values)
        path = f"topics/{topic}"
        return tuple(_middle(path, values[name]) for name in sorted(overrides))

    def _render_others(self) -> tuple[str, ...]:
        lines = []
        for path in sorted(self._families["quotas"] | self._families["ips"]):
            try:
                entity = Entity.from_path(path)
            except InvalidInput:
                continue
            values = self._entity_values(entity, self._configs)
            lines.extend(_middle(path, values[name]) for name in sorted(self._configs[path]))
        return tuple(lines)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


class _Overlay(Mapping[str, Mapping[str, str]]):
    """``base`` with one entity's config replaced: a proposal without copying 100,000 topics."""

    __slots__ = ("_base", "_config", "_path")

    def __init__(self, base: Mapping[str, Mapping[str, str]], path: str, config: Mapping[str, str]) -> None:
        self._base, self._path, self._config = base, path, config

    def __getitem__(self, key: str) -> Mapping[str, str]:
        if key == self._path:
            if not self._config:
                raise KeyError(key)
            return self._config
        return self._base[key]

    def __iter__(self) -> Iterator[str]:
        yield from (k for k in self._base if k != self._path)
        if self._config:
            yield self._path

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _family(path: str) -> str | None:
    """Which index a stored path belongs to: quota entities and IPs shadow each other."""
    head = path.split("/", 1)[0]
    if head in ("users", "clients"):
        return "quotas"
    if head == "ips":
        return "ips"
    return None


def _middle(entity_path: str, ev: EffectiveValue) -> str:
    value = ev.value
    if value is not None and ev.sensitive:
        value = digest(value)
    return (
        f'"entity_path":{json.dumps(entity_path, ensure_ascii=False)},"name":{json.dumps(ev.name, ensure_ascii=False)},'
        f'"value":{json.dumps(value, ensure_ascii=False)},"source":{json.dumps(ev.source, ensure_ascii=False)}'
    )


def _interned(config: dict[str, str]) -> dict[str, str]:
    """Share key strings: 100,000 topics overriding ``retention.ms`` hold one copy of the name."""
    return {sys.intern(key): value for key, value in config.items()}


def _differs(a: EffectiveValue | None, b: EffectiveValue | None) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    return a.value != b.value or a.source != b.source


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


__all__ = [
    "DYNAMIC_TOPIC_CONFIG",
    "NO_CHANGE",
    "AppliedChange",
    "BatchResult",
    "DynamicConfigManager",
    "EntityRead",
    "KeyChange",
    "Problem",
    "RawNotification",
]
