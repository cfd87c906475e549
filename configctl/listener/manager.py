"""What a config change means to one broker: Kafka's DynamicConfigManager, without the ZooKeeper.

The manager holds the configs in force for one broker (every entity a broker follows: all
topics, users, clients and IPs, plus ``brokers/<id>`` and ``brokers/<default>``), and the
bookkeeping a fleet operator needs: what the broker could not apply (its problems, docs/reference/state-and-fleet-nodes.md),
counters, the snapshot. It keeps the loop and the books; what a change *means* is asked of the
entity family's handler (:mod:`configctl.handlers`), the same handlers ``describe --effective``
answers with. It is fed raw node bytes by :mod:`configctl.listener.runtime` and never touches
ZooKeeper itself, so every rule here is unit-tested without a server.

One entity change goes through, in order:

1. decode (Kafka's strict JSON shape): a node that is not a Kafka config is ``poison``; a node
   the listener may not read is ``unreadable``; either way the previous config stays in force.
2. admit (the handler): a topic, quota or IP config that fails its schema is refused whole
   (``poison``); a broker layer is screened per key (``ignored`` keys are dropped, the rest applies).
   How the books keep an entity follows its family's shape, asked of the handler too
   (``independent``, ``layered``, ``known_by_node``, ``interdependent``): the manager names no
   entity type.
3. ask the handler which entities' effective configs move, and let every interested plugin
   validate each of them; one rejection (``rejected``) keeps the old config for everyone.
4. commit under the lock (queries from other threads see either the old or the new config, never
   a mix), then tell the plugins.

Nothing stalls the loop: every problem is recorded (logged once, counted, published) and the
next change is applied. A problem clears when its entity next applies cleanly (or is gone).
Queries are thread-safe. The mutating methods are meant to be called from one thread.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from configctl import catalogue, snapshot
from configctl.digests import published_digest
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import ConfigctlError, InvalidInput, one_line, printable
from configctl.handlers import BROKER, IP, QUOTA, TOPIC, BrokerView, FamilyHandler, handler_for, handlers
from configctl.handlers.base import (
    DEFAULT_BROKER_PATH,
    IGNORED,
    KINDS,
    POISON,
    REJECTED,
    UNREADABLE,
    Moved,
    Problem,
    handler_at,
)
from configctl.listener.compact import compact
from configctl.listener.logformat import MORE_FOLLOW
from configctl.listener.plugins import ConfigUpdate, LoadedPlugin, PluginContext
from configctl.precedence import EffectiveValue
from configctl.secrets import MASK, PasswordEncoder, digest, mask_config
from configctl.znodes import decode_entity_config, decode_notification

log = logging.getLogger("configctl.listener")

NO_CHANGE = -1
IN_FORCE_LIMIT = 200
"""At most this many entities' configs in force are published beside their problems."""
"""``last_applied_change`` before any notification was seen (Kafka's lastExecutedChange starts here)."""

MAX_REPORTED = 1000
"""At most this many problems are published (the newest), with ``problems_omitted`` saying how many
more there are. Every problem is kept until its cause clears (one per entity, key and kind, so
they are bounded by what exists), so an older one is published again as newer ones clear."""

_PASSWORD_SECRET = "password.encoder.secret"
_OLD_PASSWORD_SECRET = "password.encoder.old.secret"


# --------------------------------------------------------------------------------------------
# Inputs and records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RawNotification:
    """A notification node as read: its change number, node name and bytes, or why it is unreadable."""

    number: int
    name: str
    data: bytes | None
    error: str | None = None
    ctime_ms: int | None = None  # when ZooKeeper created it: the start of its apply latency


@dataclass(frozen=True, init=False)
class EntityRead:
    """An entity config node as read: raw bytes (None: absent), or why it could not be read."""

    entity: Entity
    data: bytes | None
    change_number: int | None = None
    error: str | None = None

    def __init__(
        self, entity: Entity, data: bytes | None, change_number: int | None = None, error: str | None = None
    ) -> None:
        """Fills the instance dict at once: a full load builds one read per topic (100,000s), and
        the dataclass's frozen ``__init__`` (an ``object.__setattr__`` per field) took twice as long."""
        fields = self.__dict__
        fields["entity"] = entity
        fields["data"] = data
        fields["change_number"] = change_number
        fields["error"] = error


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
        return printable(f"{label}: {self.entity_path} {body}")


@dataclass
class BatchResult:
    """What one batch did. With ``summary_only`` (an initial load: 100,000s of entities, logged as
    one summary line) applied changes are only counted, not described one by one."""

    applied: list[AppliedChange] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    summary_only: bool = False
    applied_count: int = 0

    @property
    def changed(self) -> bool:
        return self.applied_count > 0

    def count(self, kind: str) -> int:
        return sum(1 for p in self.problems if p.kind == kind)


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
        digest_key: bytes | None = None,
    ) -> None:
        self.broker_id = int(broker_id)
        self.digest_key = digest_key  # the fleet's key for secrets' digests (secrets.digest)
        self.static_config: dict[str, str] = {str(k): str(v) for k, v in static_config.items()}
        self.plugins = list(plugins)
        self._wanted = frozenset().union(*(p.configs for p in self.plugins))
        self._clock = clock
        self._lock = threading.RLock()
        # stored entity path -> config in force (non-empty only; own broker: decrypted)
        self._configs: dict[str, dict[str, str]] = {}
        # known_by_node types (topics) -> every name with a config node, overrides or not
        self._known: dict[EntityType, set[str]] = {}
        # interdependent families (quotas, IPs) -> the paths of their members with a config
        self._families: dict[str, set[str]] = {}
        self._view = BrokerView(
            self.broker_id, self.static_config, self._configs, known=self._known, families=self._families
        )
        self._layer_changes: dict[str, int | None] = {}  # layer path -> change that last wrote it
        self._encoders = self._password_encoders()
        self._static_cache: tuple[dict[str, str], dict[str, str], dict[str, str], bytes | None] | None = None
        self.last_applied_change = NO_CHANGE
        self.applied_at_ms: int | None = None
        self.counters: dict[str, int] = {
            "applied_changes": 0,
            "plugin_errors": 0,
            "full_loads": 0,
            **{f"{kind}_problems": 0 for kind in KINDS},
        }
        self._problems: dict[tuple[str, str | None, str | None], Problem] = {}
        self._problem_index: frozenset[str | None] | None = None  # their entity paths; None: stale
        self._logged: set[tuple[str, str | None, str | None, str]] = set()
        # snapshot fragments: rendered JSON bodies, cached because topics can be 100,000s
        # topic path -> its bodies, None until a snapshot needs them (a load without a state
        # directory never renders them; with one, the first snapshot does, then only changed ones)
        # Snapshot bodies of every member of an independent family (topics) with overrides, by
        # path: one string (one key) or a tuple of them. Nothing is rendered (or tracked) before
        # the first snapshot: a listener without a state directory never pays for them; after it,
        # only members that changed are rendered again.
        self._member_lines: dict[str, str | tuple[str, ...]] = {}
        self._stale: set[str] | None = None  # None: never rendered, all of them are stale
        self._member_order: list[str] | None = None  # sorted keys of _member_lines, rebuilt on add/remove
        self._broker_lines: tuple[str, ...] | None = None
        self._other_lines: tuple[str, ...] | None = None

    # ------------------------------------------------------------------------------ plugins

    def configure_plugins(self) -> None:
        """Hand every plugin its context (before the initial load)."""
        for plugin in self.plugins:
            try:
                plugin.configure(PluginContext(self.broker_id, self))
            except Exception as exc:
                raise InvalidInput(f"plugin {plugin.name} failed to configure: {one_line(exc)}") from None

    def close_plugins(self) -> None:
        for plugin in self.plugins:
            try:
                plugin.close()
            except Exception:
                log.exception("plugin %s failed to close", plugin.name)

    # ------------------------------------------------------------------------------ queries

    def view(self) -> BrokerView:
        """What this broker runs now (a consistent view: take it under no lock, read it freely)."""
        with self._lock:
            return BrokerView(
                self.broker_id,
                self.static_config,
                dict(self._configs),
                known={k: set(v) for k, v in self._known.items()},
                families={k: set(v) for k, v in self._families.items()},
                resolution=self._view.resolution,
            )

    def broker_config(self) -> Mapping[str, EffectiveValue]:
        """Every effective config of this broker (catalogue keys plus custom ones set anywhere)."""
        with self._lock:
            return self._view.resolution.values

    # The plugin API's queries by family (ConfigView), answered by that family's handler.

    def topic_config(self, topic: str) -> dict[str, EffectiveValue]:
        return self.effective(TOPIC.entity(topic))

    def quota_config(self, user: str | None = None, client: str | None = None) -> dict[str, EffectiveValue]:
        """The quotas of a connection from ``user`` with ``client`` (plain names; None: not known)."""
        with self._lock:
            return QUOTA.connection(user, client, self._configs)

    def ip_config(self, ip: str) -> dict[str, EffectiveValue]:
        """The connection-rate quota of a connection from address ``ip``."""
        with self._lock:
            return IP.connection(ip, self._configs)

    def entity_config(self, entity: Entity) -> dict[str, str]:
        """The stored config in force for ``entity`` (own broker: decrypted)."""
        with self._lock:
            return dict(self._configs.get(entity.path, {}))

    def effective(self, entity: Entity) -> dict[str, EffectiveValue]:
        """The effective config of any entity as this broker sees it (its family's handler answers)."""
        handler = handler_for(entity)
        if not handler.follows(entity, self.broker_id):
            raise InvalidInput(f"this listener is broker {self.broker_id}, not {entity.path}")
        with self._lock:
            return handler.effective(entity, self._view)

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._view.topics)

    def configs(self) -> dict[str, dict[str, str]]:
        """Every non-empty config in force, by stored entity path (own broker: decrypted)."""
        with self._lock:
            return {path: dict(config) for path, config in self._configs.items()}

    def problems(self) -> list[Problem]:
        """What this broker could not apply, oldest first."""
        with self._lock:
            return list(self._problems.values())

    def known_paths(self, prefix: str) -> list[str]:
        """Entity paths below ``prefix`` (``users/``) in force or with a problem: what a full load
        must still read one by one when it cannot list their directory."""
        with self._lock:
            paths = {p for p in self._configs if p.startswith(prefix)}
            paths.update(
                p.entity_path
                for p in self._problems.values()
                if p.entity_path and p.entity_path.startswith(prefix)
            )
        return sorted(paths)

    def is_relevant(self, entity: Entity) -> bool:
        """A broker follows every entity except other brokers' own configs."""
        return handler_for(entity).follows(entity, self.broker_id)

    # ------------------------------------------------------------------------------ notifications

    def plan(self, notifications: Sequence[RawNotification]) -> list[tuple[Entity, int]]:
        """Decode a batch, record the malformed ones, coalesce: ``[(entity, latest change number)]``.

        Entities come out in the order of their latest notification, so later changes are
        applied after earlier ones; several notifications for one entity need one read.
        """
        latest: dict[Entity, int] = {}
        for item in notifications:
            if item.error is not None:
                self._report(Problem(UNREADABLE, None, item.number, item.error, notification=item.name))
                continue
            if item.data is None:
                continue
            try:
                entity = decode_notification(item.data)
            except InvalidInput as exc:
                self._report(Problem(POISON, None, item.number, str(exc), notification=item.name))
                continue
            if not self.is_relevant(entity):
                continue
            latest.pop(entity, None)
            latest[entity] = item.number
        return list(latest.items())

    def bad_notification_name(self, name: str) -> None:
        """A node under /config/changes that is not ``config_change_NNNNNNNNNN``."""
        self._report(
            Problem(POISON, None, None, "not a config change notification node name", notification=name)
        )

    def notifications_present(self, names: Iterable[str]) -> None:
        """Forget problems of notification nodes that are gone (purged): they can never apply."""
        present = set(names)
        with self._lock:
            for key in [
                k for k, p in self._problems.items() if p.notification and p.notification not in present
            ]:
                del self._problems[key]
                self._problem_index = None

    # ------------------------------------------------------------------------------ applying

    def apply(self, reads: Sequence[EntityRead], up_to: int | None) -> BatchResult:
        """Apply entity changes in order and move ``last_applied_change`` to ``up_to``."""
        result = BatchResult()
        for read in reads:
            self._apply_one(read, result)
        _log_applied(result.applied)
        self._finish(result, up_to)
        return result

    def reconcile(
        self,
        reads: Iterable[EntityRead],
        up_to: int | None,
        *,
        initial: bool = False,
        invalid: Mapping[str, str] | None = None,
        unreadable: Mapping[str, str] | None = None,
    ) -> BatchResult:
        """A full load: make the configs in force equal ``reads`` (everything in ZooKeeper).

        Entities in force but absent from ``reads`` are gone from ZooKeeper and are dropped.
        ``invalid`` maps nodes under /config that name no valid entity (``users/%2E%2E``) to why;
        they are reported as poison until they are gone. ``unreadable`` maps directories the
        listener may not list (``users``, ``users/alice/clients``) to why: they are reported as
        unreadable, and what is in force below them stays in force (absent from ``reads`` only
        because they could not be listed, not because they are gone). Only differences are
        applied (and logged, except on the initial load, which logs a summary).
        """
        result = BatchResult(summary_only=initial)
        for path, reason in (invalid or {}).items():
            self._report(Problem(POISON, path, None, reason), result)
        hidden = tuple(f"{path}/" for path in (unreadable or {}))
        for path, reason in (unreadable or {}).items():
            self._report(Problem(UNREADABLE, path, None, reason), result)
        seen: set[str] = set()
        present: dict[EntityType, set[str]] = {}  # known_by_node names whose node is (still) there
        # Nothing in force yet (a first load): nothing can have gone, so the 100,000 paths and
        # names need not be collected to find out.
        fresh = not self._configs and not any(self._known.values()) and not self._problems
        count = 0
        for read in reads:
            if not self._apply_one(read, result):
                continue  # another broker's own config
            count += 1
            if not fresh:
                entity = read.entity
                seen.add(entity.path)
                if (read.data is not None or read.error is not None) and handler_for(entity).known_by_node:
                    present.setdefault(entity.type, set()).add(entity.name)
        if fresh:
            self._finish_load(result, up_to, count, initial)
            return result
        for path in [p for p in self._configs if p not in seen]:
            if hidden and path.startswith(hidden):
                seen.add(path)  # below a directory we could not list: not known to be gone
                continue
            try:
                entity = Entity.from_path(path)
            except InvalidInput:
                continue
            self._apply_one(EntityRead(entity, None), result)
        keep = seen | set(invalid or ()) | set(unreadable or ())
        if hidden:
            keep |= {
                p.entity_path
                for p in self._problems.values()
                if p.entity_path and p.entity_path.startswith(hidden)
            }
        with self._lock:
            for etype in [*self._known, *(t for t in present if t not in self._known)]:
                names = self._known.setdefault(etype, set())
                prefix = f"{etype.value}/"
                found = present.get(etype, set())
                names.intersection_update(
                    found | {p[len(prefix) :] for p in self._configs if p.startswith(prefix)}
                )
                names.update(found)
            for key in [k for k, p in self._problems.items() if p.entity_path and p.entity_path not in keep]:
                del self._problems[key]  # the node is gone from ZooKeeper
                self._problem_index = None
        self._finish_load(result, up_to, count, initial)
        return result

    def _finish_load(self, result: BatchResult, up_to: int | None, count: int, initial: bool) -> None:
        self.counters["full_loads"] += 1
        if initial:
            log.info(
                "loaded %d entity configs (%d with overrides) up to change %s",
                count,
                len(self._configs),
                up_to if up_to is not None else "none",
            )
        else:
            _log_applied(result.applied, more_follow=True)
            log.info(
                "reloaded %d entity configs up to change %s: %d changed", count, up_to, result.applied_count
            )
        self._finish(result, up_to)

    def _finish(self, result: BatchResult, up_to: int | None) -> None:
        with self._lock:
            if up_to is not None:
                self.last_applied_change = up_to
            self.applied_at_ms = self._now_ms()
            self.counters["applied_changes"] += result.applied_count

    def _apply_one(self, read: EntityRead, result: BatchResult) -> bool:
        """Apply one entity read (or record why not); False when this broker does not follow it."""
        entity, number = read.entity, read.change_number
        handler = handler_for(entity)
        if not handler.follows(entity, self.broker_id):
            return False
        path = entity.path
        independent = handler.independent
        if read.error is not None:
            self._report(Problem(UNREADABLE, path, number, read.error), result)
            return True
        try:
            stored = decode_entity_config(read.data) if read.data is not None else {}
        except InvalidInput as exc:
            self._know(handler, entity, read)
            self._report(Problem(POISON, path, number, str(exc)), result)
            return True
        admission = handler.admit(entity, stored, change_number=number, decrypt=self._decrypt)
        if admission.config is None:
            self._know(handler, entity, read)
            for problem in admission.problems:
                self._report(problem, result)
            return True
        config = compact(admission.config) if independent else _interned(admission.config)
        old = self._configs.get(path, _EMPTY)
        # emptiness asked of the admitted dict: a CompactConfig answers len() in Python
        if (not admission.config) if old is _EMPTY else config == old:
            if handler.known_by_node:
                if read.data is None:
                    with self._lock:
                        self._known.get(entity.type, set()).discard(entity.name)
                else:
                    self._know(handler, entity, read)
            self._settle_problems(handler, entity, number, admission.problems, self._view, result)
            return True
        if independent and not self.plugins:
            # The hot path of a full load: a topic moves nothing but itself, and no plugin needs
            # to see the proposal, so no overlay view is built and only the changed keys resolve.
            after = self._view
            moved: list[Moved] = []
        else:
            after = self._view.with_config(path, config)
            moved = handler.moved(entity, self._view, after, self._wanted) if self.plugins else []
            rejection = self._validate(moved, number)
            if rejection is not None:
                self._know(handler, entity, read)
                plugin, reason = rejection
                self._report(Problem(REJECTED, path, number, reason, plugin=plugin), result)
                return True
        if not result.summary_only:
            diffs = sorted(
                (n for n in old.keys() | config.keys() if old.get(n) != config.get(n)),
                key=lambda n: (n not in config, n),
            )
            if after is self._view:
                values = handler.effective_of(entity, self._view, config, diffs)
            else:
                values = handler.effective(entity, after)
            keys = tuple(KeyChange(n, config.get(n), values.get(n)) for n in diffs)
            result.applied.append(AppliedChange(number, path, keys))
        result.applied_count += 1
        self._commit(handler, entity, config, after, removed=read.data is None)
        if admission.problems or handler.layered or self._problems:
            self._settle_problems(handler, entity, number, admission.problems, after, result)
        for update in moved:
            self._reconfigure(update, number)
        return True

    def _know(self, handler: FamilyHandler, entity: Entity, read: EntityRead) -> None:
        """A topic (a member of a known_by_node family) whose node exists is known, whatever its
        config: plugins hear about it when a broker fallback moves."""
        if handler.known_by_node and read.data is not None:
            names = self._known.get(entity.type)
            if names is None or entity.name not in names:
                with self._lock:
                    self._known.setdefault(entity.type, set()).add(entity.name)

    def _settle_problems(
        self,
        handler: FamilyHandler,
        entity: Entity,
        number: int | None,
        admitted: Sequence[Problem],
        view: BrokerView,
        result: BatchResult,
    ) -> None:
        """The entity applied: drop its old problems, keep what still does not take effect."""
        path = entity.path
        with self._lock:
            if path in self._problem_paths():
                for key in [k for k in self._problems if k[1] == path]:
                    del self._problems[key]
                self._problem_index = None
            if handler.layered:
                self._layer_changes[path] = number
        for problem in admitted:
            self._report(problem, result)
        if handler.layered:
            for problem in handler.ignored(view, self._layer_changes):
                if problem.entity_path == path:
                    self._report(problem, result)

    def _problem_paths(self) -> frozenset[str | None]:
        """The entity paths that have problems (under the lock): applying 100,000 entities asks
        this for each, and must not scan up to 1,000 problems every time."""
        if self._problem_index is None:
            self._problem_index = frozenset(k[1] for k in self._problems)
        return self._problem_index

    # ------------------------------------------------------------------------------ plugins

    def _validate(self, moved: list[Moved], number: int | None) -> tuple[str, str] | None:
        for item in moved:
            update = ConfigUpdate(item.entity, item.values, item.changed, number)
            for plugin in self.plugins:
                if plugin.configs.isdisjoint(item.changed):
                    continue
                try:
                    plugin.validate(update)
                except Exception as exc:
                    return plugin.name, f"{item.entity.path}: {one_line(exc)}"
        return None

    def _reconfigure(self, item: Moved, number: int | None) -> None:
        update = ConfigUpdate(item.entity, item.values, item.changed, number)
        for plugin in self.plugins:
            if plugin.configs.isdisjoint(item.changed):
                continue
            try:
                plugin.reconfigure(update)
            except Exception as exc:
                self.counters["plugin_errors"] += 1
                log.error("plugin %s failed to apply %s: %s", plugin.name, item.entity.path, one_line(exc))

    # ------------------------------------------------------------------------------ passwords

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

    def _decrypt(self, name: str, value: str) -> str | None:
        for encoder in self._encoders:
            try:
                return encoder.decode(value, name=name)
            except InvalidInput:
                continue
        return None

    # ------------------------------------------------------------------------------ commit

    def _commit(
        self,
        handler: FamilyHandler,
        entity: Entity,
        config: dict[str, str],
        after: BrokerView,
        *,
        removed: bool,
    ) -> None:
        path = entity.path
        independent = handler.independent
        family = handler.family if handler.interdependent else None
        with self._lock:
            if config:
                self._configs[path] = config
                if family is not None:
                    self._families.setdefault(family, set()).add(path)
            else:
                self._configs.pop(path, None)
                if family is not None:
                    self._families.setdefault(family, set()).discard(path)
            if handler.layered:  # the broker's own config is resolved again
                self._view = BrokerView(
                    self.broker_id,
                    self.static_config,
                    self._configs,
                    known=self._known,
                    families=self._families,
                    resolution=after.resolution,
                )
                self._broker_lines = None
            if handler.known_by_node:
                names = self._known.get(entity.type)
                if removed:
                    if names is not None:
                        names.discard(entity.name)
                elif names is not None:  # not setdefault: no empty set built per topic
                    names.add(entity.name)
                else:
                    self._known[entity.type] = {entity.name}
            if independent:
                if self._stale is not None:
                    if config:
                        self._stale.add(path)
                    else:
                        self._stale.discard(path)
                        if self._member_lines.pop(path, None) is not None:
                            self._member_order = None
            elif family is not None:
                self._other_lines = None

    # ------------------------------------------------------------------------------ problems

    def _report(self, problem: Problem, result: BatchResult | None = None) -> None:
        """Record a problem: published at once, logged (one line, escaped) and counted once."""
        stamped = Problem(
            problem.kind,
            problem.entity_path,
            problem.change_number,
            problem.reason,
            problem.name,
            problem.plugin,
            problem.notification,
            self._now_ms(),
        )
        seen = (problem.kind, problem.entity_path or problem.notification, problem.name, problem.reason)
        if seen not in self._logged:
            if len(self._logged) >= 100_000:  # bound the memory of "already logged"
                self._logged.clear()
            self._logged.add(seen)
            self.counters[f"{problem.kind}_problems"] += 1
            where = problem.entity_path or problem.notification or "?"
            if problem.name:
                where += f" {problem.name}"
            by = f" (plugin {problem.plugin})" if problem.plugin else ""
            log.warning(
                "%s",
                printable(
                    f"{problem.kind}: {where} (change {problem.change_number}){by}: {one_line(problem.reason)}; "
                    "the previous config stays in force"
                ),
            )
        with self._lock:
            key = (problem.kind, problem.entity_path or problem.notification, problem.name)
            self._problems.pop(key, None)
            self._problems[key] = stamped
            self._problem_index = None
        if result is not None:
            result.problems.append(stamped)

    # ------------------------------------------------------------------------------ state & snapshot

    def masked_static_config(self) -> dict[str, str]:
        return dict(self._static_published()[0])

    def static_config_digests(self) -> dict[str, str]:
        """Keyed digests (``hmac-sha256:``) of the sensitive static values, so drift in them is
        visible without the values; none without the fleet's digest key: the state node is
        world-readable, and a plain SHA-256 of ``password.encoder.secret`` can be guessed offline."""
        return dict(self._static_published()[1])

    def _static_published(self) -> tuple[dict[str, str], dict[str, str]]:
        """The static config masked, and its secrets' digests: worked out once, as server.properties
        does not change while the listener runs, rather than at every state node write (sorting,
        masking and an HMAC per secret, at every change)."""
        cached = self._static_cache
        if cached is None or cached[0] is not self.static_config or cached[3] != self.digest_key:
            masked = mask_config(dict(sorted(self.static_config.items())), self._static_sensitive)
            pairs = (
                (k, published_digest(v, self.digest_key))
                for k, v in sorted(self.static_config.items())
                if self._static_sensitive(k)
            )
            cached = self.static_config, masked, {k: d for k, d in pairs if d is not None}, self.digest_key
            self._static_cache = cached
        return cached[1], cached[2]

    @staticmethod
    def _static_sensitive(name: str) -> bool:
        return BROKER.is_password(name)

    def _in_force(self) -> dict[str, dict[str, str]]:
        """What this broker runs for each entity it has a problem with (the config it kept when it
        refused a change; {} when it holds none), secrets masked: ``describe --effective`` shows
        it in place of the stored config, which the broker does not run. The newest
        :data:`IN_FORCE_LIMIT` entities, so the state node stays bounded."""
        paths = list(dict.fromkeys(p.entity_path for p in self._problems.values() if p.entity_path))
        found = {}
        for path in paths[-IN_FORCE_LIMIT:]:
            try:
                entity_type = Entity.from_path(path).type
            except ConfigctlError:
                continue
            config = self._configs.get(path, _EMPTY)
            found[path] = mask_config(
                dict(config), lambda name, t=entity_type: catalogue.is_sensitive(t, name)
            )
        return found

    def state_document(self) -> dict[str, Any]:
        """The broker state node's document (docs/reference/state-and-fleet-nodes.md): what it applied,
        its problems, and what an operator needs to trust it."""
        with self._lock:
            return {
                "broker_id": self.broker_id,
                "last_applied_change": self.last_applied_change,
                "applied_at_ms": self.applied_at_ms,
                "static_config": self.masked_static_config(),
                "static_config_digests": self.static_config_digests(),
                "problems": [p.to_json() for p in list(self._problems.values())[-MAX_REPORTED:]],
                "problems_omitted": max(0, len(self._problems) - MAX_REPORTED),
                "in_force": self._in_force(),
                "counters": dict(self.counters),
                "plugins": [p.name for p in self.plugins],
                "entities": len(self._configs),
            }

    def snapshot_lines(self, captured_at_ms: int | None = None) -> Iterator[str]:
        """The snapshot's JSON Lines (docs/reference/snapshots.md): every broker key, then every overridden key of other entities.

        Each line is ``head + body + tail`` (:mod:`configctl.snapshot`) where only the body depends
        on the entity, and bodies are cached: writing 100,000 topic overrides is a join, not
        100,000 precedence resolutions.
        """
        with self._lock:
            captured = self._now_ms() if captured_at_ms is None else captured_at_ms
            head = snapshot.head(self.broker_id, self.last_applied_change)
            tail = snapshot.tail(captured)
            if self._broker_lines is None:
                self._broker_lines = _bodies(
                    self._view.own_path,
                    self._view.resolution.values,
                    sorted(self._view.resolution.values),
                    self.digest_key,
                )
            if self._other_lines is None:
                self._other_lines = self._render_others()
            stale = self._stale
            if stale is None:
                independent = tuple(f"{t.value}/" for h in handlers() if h.independent for t in h.types)
                stale = {p for p in self._configs if p.startswith(independent)}
            handler: FamilyHandler | None = None
            type_prefix: str | None = None
            for path in stale:
                if type_prefix is None or not path.startswith(type_prefix):  # one type: one handler
                    type_prefix = path.split("/", 1)[0] + "/"
                    handler = handler_at(path)
                if handler is None:  # a family no longer registered
                    continue
                bodies = self._render(handler.entity_at(path), handler)
                if path not in self._member_lines:
                    self._member_order = None
                self._member_lines[path] = bodies[0] if len(bodies) == 1 else bodies
            self._stale = set()
            if self._member_order is None:
                self._member_order = sorted(self._member_lines)
            member_groups = [self._member_lines[p] for p in self._member_order]
            groups = [self._broker_lines, *member_groups, self._other_lines]
        for lines in groups:
            if isinstance(lines, str):
                yield head + lines + tail
                continue
            for body in lines:
                yield head + body + tail

    def _render(self, entity: Entity, handler: FamilyHandler | None = None) -> tuple[str, ...]:
        values = (handler or handler_for(entity)).snapshot_values(entity, self._view)
        return _bodies(entity.path, {v.name: v for v in values}, [v.name for v in values], self.digest_key)

    def _render_others(self) -> tuple[str, ...]:
        """The snapshot lines of every member of the interdependent families (quotas, IPs)."""
        lines: list[str] = []
        for path in sorted(set().union(*self._families.values())):
            try:
                entity = Entity.from_path(path)
            except InvalidInput:
                continue
            lines.extend(self._render(entity))
        return tuple(lines)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


def _bodies(
    path: str, values: Mapping[str, EffectiveValue], names: Iterable[str], key: bytes | None
) -> tuple[str, ...]:
    result = []
    for name in names:
        value = values.get(name)
        if value is None:
            continue
        shown = digest(value.value, key) if value.sensitive and value.value is not None else value.value
        result.append(snapshot.body(path, value.name, shown, value.source))
    return tuple(result)


_EMPTY: Mapping[str, str] = {}


def _log_applied(applied: Sequence[AppliedChange], *, more_follow: bool = False) -> None:
    last = len(applied) - 1
    for index, change in enumerate(applied):
        log.info("%s", change.describe(), extra={MORE_FOLLOW: more_follow or index < last})


def _interned(config: dict[str, str]) -> dict[str, str]:
    """Share key strings: 100,000 topics overriding ``retention.ms`` hold one copy of the name."""
    return {sys.intern(key): value for key, value in config.items()}


__all__ = [
    "DEFAULT",
    "DEFAULT_BROKER_PATH",
    "IGNORED",
    "NO_CHANGE",
    "AppliedChange",
    "BatchResult",
    "DynamicConfigManager",
    "EntityRead",
    "KeyChange",
    "Problem",
    "RawNotification",
]
