"""What every entity-family handler shares: the broker's view, problems, and the handler contract.

Kafka's ``DynamicConfigManager`` hands each change to one ``ConfigHandler`` per entity type. Here a
handler is pure: given what a broker runs (:class:`BrokerView`) it says what of a stored config
takes effect (:meth:`FamilyHandler.admit`), what an entity's effective config is
(:meth:`FamilyHandler.effective`) and which entities' effective configs a change moves
(:meth:`FamilyHandler.moved`). The listener applies changes through the handlers and
``describe --effective`` answers through the very same ones, so the two cannot disagree.

Everything else that differs between families is asked of the handler too, so the listener's
manager, validation, the write path and the write-side checks keep no per-type branch:

* the family's shape, for the listener's books: :attr:`~FamilyHandler.independent` (a member
  moves nothing but itself: topics), :attr:`~FamilyHandler.layered` (its configs are layers of
  the broker's own config: brokers), :attr:`~FamilyHandler.known_by_node` (a member exists while
  its node does: topics); members of the other families resolve through each other (quotas, IPs:
  :attr:`~FamilyHandler.interdependent`) and are kept by :attr:`~FamilyHandler.family`;
* validation: :meth:`~FamilyHandler.check_key`, :meth:`~FamilyHandler.own_rules`,
  :meth:`~FamilyHandler.label`, :meth:`~FamilyHandler.unknown_hint`;
* the write path: :attr:`~FamilyHandler.encrypts_passwords`, :meth:`~FamilyHandler.is_password`,
  :attr:`~FamilyHandler.created_by_kafka`, :attr:`~FamilyHandler.refused_while_brokers_run`,
  :meth:`~FamilyHandler.unresolved`;
* the write-side checks: :meth:`~FamilyHandler.may_break_rules`,
  :meth:`~FamilyHandler.effective_rules`, :meth:`~FamilyHandler.judged_on`;
* beside a real broker: :meth:`~FamilyHandler.disagreements` (which Admin API answer to compare
  with what configctl computes).

The registry (:func:`register`, :func:`handler_for`) maps each entity type to its handler.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from configctl import agreement, validation
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput
from configctl.precedence import BrokerResolution, EffectiveValue, resolve_broker
from configctl.znodes import is_json_int

if TYPE_CHECKING:
    from configctl.handlers.sidecar import Asker, Model

# The problem kinds a listener publishes (docs/reference/state-and-fleet-nodes.md#problems).
POISON = "poison"
"""A node that is not a Kafka notification or config, or a config that fails its schema."""
REJECTED = "rejected"
"""A plugin refused the change."""
IGNORED = "ignored"
"""A key (or an entity) Kafka would drop: misplaced, an invalid value, a password it cannot decrypt."""
UNREADABLE = "unreadable"
"""A node the listener may not read (ACL), or cannot (too large)."""
MISMATCH = "mismatch"
"""Beside a real broker: a key the broker reports otherwise than configctl computes."""
UNREACHABLE = "unreachable"
"""Beside a real broker: the broker does not answer (so nothing it runs is known)."""
KINDS = (POISON, REJECTED, IGNORED, UNREADABLE, MISMATCH, UNREACHABLE)


@dataclass(frozen=True)
class Problem:
    """Something a broker could not apply, as its state node lists it (docs/reference/state-and-fleet-nodes.md)."""

    kind: str
    entity_path: str | None
    change_number: int | None
    reason: str
    name: str | None = None
    plugin: str | None = None
    notification: str | None = None
    at_ms: int | None = None
    # a ``mismatch`` (beside a real broker): the key, what configctl computes, what the broker reports
    key: str | None = None
    expected: str | None = None
    reported: str | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "kind": self.kind,
            "entity_path": self.entity_path,
            "change_number": self.change_number,
            "reason": self.reason,
        }
        for key in ("name", "plugin", "notification", "at_ms", "key", "expected", "reported"):
            value = getattr(self, key)
            if value is not None:
                document[key] = value
        return document

    @property
    def vetoed_by_plugin(self) -> bool:
        """configctl's own plugin refused it: not the broker's refusal."""
        return self.kind == REJECTED and self.plugin is not None

    def refusal(self, broker_id: int, *, beside_kafka: bool) -> str:
        """This problem as broker ``broker_id``'s answer to a change (``--wait``, its exit error):
        the one home of that wording. A plugin's veto is configctl's, not the broker's: beside a
        Kafka broker (a sidecar) the broker runs the value all the same; as the broker's own
        config manager the broker keeps what it ran."""
        what = f"{self.name or self.key}: " if (self.name or self.key) else ""
        if self.vetoed_by_plugin:
            runs = "the broker runs it" if beside_kafka else "the broker keeps its previous value"
            return f"configctl's plugin {self.plugin} rejected it on broker {broker_id} ({runs}): {what}{self.reason}"
        return f"broker {broker_id} refused it ({self.kind}: {what}{self.reason})"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Problem:
        """A published problem read back; a field of the wrong type (a forged or damaged state
        node) becomes None rather than reaching a reader's table or JSON as something else."""
        return cls(
            kind=_text(data.get("kind")) or "",
            entity_path=_text(data.get("entity_path")),
            change_number=_number(data.get("change_number")),
            reason=_text(data.get("reason")) or "",
            name=_text(data.get("name")),
            plugin=_text(data.get("plugin")),
            notification=_text(data.get("notification")),
            at_ms=_number(data.get("at_ms")),
            key=_text(data.get("key")),
            expected=_text(data.get("expected")),
            reported=_text(data.get("reported")),
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> int | None:
    return value if is_json_int(value) else None


@dataclass(frozen=True, init=False)
class Admission:
    """What of a stored config takes effect: ``config`` (None: refused as a whole) and why not all."""

    config: dict[str, str] | None
    problems: tuple[Problem, ...] = ()

    def __init__(self, config: dict[str, str] | None, problems: tuple[Problem, ...] = ()) -> None:
        """Fills the instance dict at once, as :class:`~configctl.entities.Entity` does: a full load
        admits one config per topic (100,000s), and the frozen ``__init__`` sets each field
        through ``object.__setattr__``."""
        fields = self.__dict__
        fields["config"] = config
        fields["problems"] = problems


@dataclass(frozen=True)
class Moved:
    """One entity whose effective config changed: its new values and the names that moved."""

    entity: Entity
    values: Mapping[str, EffectiveValue]
    changed: frozenset[str]


Decrypt = Callable[[str, str], "str | None"]
"""(config key, stored encrypted value) -> plain value, None when it cannot be decrypted."""


class BrokerView:
    """What one broker runs: every config in force (by stored path) and its resolved broker config.

    Cheap to derive: :meth:`with_config` overlays one entity's proposed config without copying the
    rest (a broker follows every topic of the cluster, possibly 100,000s), and recomputes the
    broker resolution only when a broker layer changes.
    """

    __slots__ = ("_families", "broker_id", "configs", "known", "resolution", "static")

    def __init__(
        self,
        broker_id: int,
        static: Mapping[str, str],
        configs: Mapping[str, Mapping[str, str]],
        *,
        known: Mapping[EntityType, set[str] | frozenset[str]] | None = None,
        families: Mapping[str, set[str] | frozenset[str]] | None = None,
        resolution: BrokerResolution | None = None,
    ) -> None:
        self.broker_id = int(broker_id)
        self.static = static
        self.configs = configs
        # Per known_by_node type (topics), every name whose node exists, overrides or not (a view
        # built from configs alone knows the members with a config).
        self.known = known if known is not None else _known_from(configs)
        self._families = families
        self.resolution = resolution or resolve_broker(
            self.broker_id,
            configs.get(self.own_path, {}),
            configs.get(DEFAULT_BROKER_PATH, {}),
            static,
        )

    @property
    def own_path(self) -> str:
        return f"brokers/{self.broker_id}"

    @property
    def topics(self) -> set[str] | frozenset[str]:
        """Every topic whose node exists (the broker's fallbacks reach each of them)."""
        return self.known.get(EntityType.TOPICS, frozenset())

    def family(self, name: str) -> Iterable[str]:
        """Stored paths with a config in force, of one interdependent family (``quotas``, ``ips``)."""
        if self._families is not None:
            return self._families.get(name, ())
        return [p for p in self.configs if family_of(p) == name]

    def with_config(self, path: str, config: Mapping[str, str]) -> BrokerView:
        """This view with ``path``'s config replaced (an empty config removes it)."""
        return self.with_configs({path: config})

    def with_configs(self, replaced: Mapping[str, Mapping[str, str]]) -> BrokerView:
        """This view with several entities' configs replaced at once (one overlay, however many)."""
        configs = _Overlay(self.configs, dict(replaced))
        layers = (self.own_path, DEFAULT_BROKER_PATH)
        resolution = None if any(path in replaced for path in layers) else self.resolution
        families = None
        if self._families is not None:
            families = {name: set(members) for name, members in self._families.items()}
            for path, config in replaced.items():
                family = family_of(path)
                if family is None:
                    continue
                members = families.setdefault(family, set())
                if config:
                    members.add(path)
                else:
                    members.discard(path)
        return BrokerView(
            self.broker_id, self.static, configs, known=self.known, families=families, resolution=resolution
        )


DEFAULT_BROKER_PATH = f"brokers/{DEFAULT}"


def family_of(path: str) -> str | None:
    """The :attr:`~FamilyHandler.family` of a stored path whose members resolve through each
    other (quota entities: users and clients; IPs); None for the rest (topics, broker layers)."""
    handler = handler_at(path)
    return handler.family if handler is not None and handler.interdependent else None


def handler_at(path: str) -> FamilyHandler | None:
    """The handler of a stored entity path (``topics/orders``), by its type; None if none is registered."""
    return _BY_HEAD.get(path.split("/", 1)[0])


def _known_from(configs: Mapping[str, Mapping[str, str]]) -> dict[EntityType, set[str]]:
    """The known members of a view built from configs alone: those with a config."""
    known: dict[EntityType, set[str]] = {}
    for path in configs:
        head, _, name = path.partition("/")
        handler = _BY_HEAD.get(head)
        if handler is not None and handler.known_by_node:
            known.setdefault(EntityType(head), set()).add(name)
    return known


class _Overlay(Mapping[str, Mapping[str, str]]):
    """``base`` with some entities' configs replaced: a proposal without copying 100,000 topics.

    An empty replacement removes the entity. Overlays of overlays are flattened, so deriving a
    view again and again never builds a deep chain.
    """

    __slots__ = ("_base", "_replaced")

    def __init__(self, base: Mapping[str, Mapping[str, str]], replaced: dict[str, Mapping[str, str]]) -> None:
        if isinstance(base, _Overlay):
            replaced = {**base._replaced, **replaced}
            base = base._base
        self._base, self._replaced = base, replaced

    def __getitem__(self, key: str) -> Mapping[str, str]:
        if key in self._replaced:
            config = self._replaced[key]
            if not config:
                raise KeyError(key)
            return config
        return self._base[key]

    def __iter__(self) -> Iterator[str]:
        yield from (k for k in self._base if k not in self._replaced)
        yield from (k for k, config in self._replaced.items() if config)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(frozen=True)
class Reads:
    """What ``describe --effective`` must read from ZooKeeper to answer for one entity."""

    paths: tuple[str, ...] = ()
    types: tuple[EntityType, ...] = ()


def differs(a: EffectiveValue | None, b: EffectiveValue | None) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    return a.value != b.value or a.source != b.source


def changed_names(
    before: Mapping[str, EffectiveValue], after: Mapping[str, EffectiveValue]
) -> frozenset[str]:
    return frozenset(n for n in set(before) | set(after) if differs(before.get(n), after.get(n)))


def touches(before: Mapping[str, str], after: Mapping[str, str], keys: frozenset[str]) -> bool:
    """Does a write from ``before`` to ``after`` change one of ``keys``?"""
    return any(before.get(n) != after.get(n) for n in (set(before) | set(after)) & keys)


class FamilyHandler(ABC):
    """One entity family's rules. Stateless; every method is pure."""

    types: ClassVar[tuple[EntityType, ...]]
    family: ClassVar[str]
    """The family's name (``brokers``, ``topics``, ``quotas``, ``ips``): the members of an
    :attr:`interdependent` family are kept together under it (:meth:`BrokerView.family`)."""

    independent: ClassVar[bool] = False
    """A member's effective config depends on its own config and the broker's alone, so changing
    it moves nothing else (topics). Such families can be huge (100,000 topics): the listener keeps
    their configs compact, renders their snapshot lines one by one and, without plugins, resolves
    only the keys a change touches; the write side judges a change to one member alone."""

    layered: ClassVar[bool] = False
    """Its configs are layers of the broker's own config (``brokers/<id>``, ``brokers/<default>``),
    resolved together with server.properties and screened key by key: a change re-resolves the
    broker, and :meth:`ignored` reports the keys that do not take effect."""

    known_by_node: ClassVar[bool] = False
    """A member exists while its node does, config or not (Kafka creates topics): the listener
    knows every such name (:attr:`BrokerView.known`), and broker fallbacks reach each of them.
    Only for types stored by their plain names (not sanitized, not nested)."""

    encrypts_passwords: ClassVar[bool] = False
    """Its password configs are stored encrypted with the brokers' ``password.encoder.secret``
    (brokers): only then may a write carry ``password.encoder.*`` settings."""

    created_by_kafka: ClassVar[bool] = False
    """Kafka creates the members itself (topics): its ZooKeeper admin path refuses a config for
    one that does not exist (:mod:`configctl.guards`)."""

    refused_while_brokers_run: ClassVar[bool] = False
    """Kafka's ZooKeeper admin path refuses a write while the brokers it concerns run (broker
    configs, unless ``--allow-running-brokers``: :mod:`configctl.guards`)."""

    rule_keys: ClassVar[frozenset[str]] = frozenset()
    """Keys whose change can break one of Kafka's rules between keys (:meth:`effective_rules`)."""

    @property
    def interdependent(self) -> bool:
        """Members resolve through each other (quota levels, an IP's ``<default>``): the listener
        keeps them together (:attr:`family`), and a change is checked against every member."""
        return not self.independent and not self.layered

    def follows(self, entity: Entity, broker_id: int) -> bool:
        """Does a broker apply this entity at all? (Only other brokers' own configs are not.)"""
        return True

    def disagreements(
        self, entity: Entity, keys: frozenset[str], broker_id: int, model: Model, broker: Asker
    ) -> list[agreement.Mismatch]:
        """What the real broker (``broker``, its Admin API) reports otherwise than ``model`` computes
        for ``entity`` on broker ``broker_id``; ``keys``: the keys the change touched.

        By default the entity is a quota entity, compared whole with the broker's client quotas
        (the Admin API answers quotas per entity, not per key)."""
        return agreement.quotas(entity.path, model.entity_config(entity), broker.client_quotas(entity))

    @abstractmethod
    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        """What of ``stored`` takes effect on a broker (refused configs keep the previous one)."""

    @abstractmethod
    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        """Every effective key of ``entity`` on the broker of ``view``."""

    @abstractmethod
    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        """The entities whose effective value of a ``wanted`` key differs between the two views."""

    @abstractmethod
    def reads(self, entity: Entity, broker_id: int) -> Reads:
        """The stored configs (besides the broker's two layers) ``effective`` consults."""

    def moved_in_family(
        self, family: str, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        """``moved`` for families whose members resolve through each other (quotas, IPs): the
        changed entity and every known member of ``family`` whose resolution it moves."""
        paths = {entity.path} | set(before.family(family)) | set(after.family(family))
        result = []
        for path in sorted(paths):
            try:
                other = entity if path == entity.path else Entity.from_path(path)
            except InvalidInput:
                continue
            new = self.effective(other, after)
            changed = changed_names(self.effective(other, before), new)
            if changed & wanted:
                result.append(Moved(other, new, changed))
        return result

    def snapshot_names(self, entity: Entity, view: BrokerView) -> list[str]:
        """The keys a snapshot lists for this entity: the ones it overrides itself."""
        return sorted(view.configs.get(entity.path, {}))

    def effective_of(
        self, entity: Entity, view: BrokerView, config: Mapping[str, str], names: Iterable[str]
    ) -> dict[str, EffectiveValue]:
        """The effective values of ``names`` once ``config`` is ``entity``'s config (the rest of
        ``view`` unchanged); a handler may answer without resolving every key."""
        values = self.effective(entity, view.with_config(entity.path, config))
        return {name: values[name] for name in names if name in values}

    def snapshot_values(self, entity: Entity, view: BrokerView) -> list[EffectiveValue]:
        """The effective values of :meth:`snapshot_names`, in that order (a handler may answer
        without resolving every key of the entity)."""
        values = self.effective(entity, view)
        return [values[name] for name in self.snapshot_names(entity, view) if name in values]

    def ignored(self, view: BrokerView, change_numbers: Mapping[str, int | None]) -> list[Problem]:
        """Keys in force that do not take effect, and why (only :attr:`layered` families screen keys)."""
        return []

    def entity_at(self, path: str) -> Entity:
        """The entity of one of this family's stored paths, as the listener keeps them (valid)."""
        return Entity.from_path(path)

    # ---------------------------------------------------------------------------- validation

    def label(self, entity: Entity) -> str:
        """What a config of ``entity`` is called in messages (``unknown topic config ...``)."""
        return entity.type.value[:-1]

    def unknown_hint(self, name: str) -> str | None:
        """The key an operator most likely meant by unknown ``name``, known to this family alone."""
        return None

    def check_key(self, entity: Entity, name: str, raw: Any, allow_custom: bool, problems: list[str]) -> None:
        """Append every problem of one key and its value (the schema's checks by default)."""
        validation.check_schema_key(self, entity, name, raw, problems)

    def own_rules(self, config: Mapping[str, str]) -> list[str]:
        """Kafka's rules between keys, on the keys an entity's config sets itself."""
        return []

    # ---------------------------------------------------------------------------- the write path

    def is_password(self, name: str) -> bool:
        """Is ``name`` a password config, stored encrypted (:attr:`encrypts_passwords`)?"""
        return False

    def unresolved(self, entity: Entity) -> bool:
        """Does ``entity`` name something that cannot be found (an IP host that does not resolve)?"""
        return False

    def may_break_rules(self, before: Mapping[str, str], after: Mapping[str, str]) -> bool:
        """Can a write from ``before`` to ``after`` break a rule between keys? (Most cannot: they
        are judged for free.)"""
        return bool(self.rule_keys) and touches(before, after, self.rule_keys)

    def effective_rules(
        self, config: Mapping[str, str | None], broker: Mapping[str, str | None]
    ) -> list[str]:
        """Kafka's rules between keys, on an entity's effective config (``broker``: the broker's)."""
        return []

    def judged_on(self, entity: Entity, running: Sequence[int]) -> list[int]:
        """The brokers (of the ``running`` listeners, sorted) a write to ``entity`` is judged on;
        empty: on a reference broker. The dynamic layers alone decide all but broker entities."""
        return list(running[:1])


# ------------------------------------------------------------------------------------------------
# The registry: entity type -> its family's handler
# ------------------------------------------------------------------------------------------------

_HANDLERS: dict[EntityType, FamilyHandler] = {}
_BY_HEAD: dict[str, FamilyHandler] = {}  # a stored path's first segment -> the handler


def register(handler: FamilyHandler) -> None:
    """Make ``handler`` the handler of each of its :attr:`~FamilyHandler.types`."""
    for etype in handler.types:
        _HANDLERS[etype] = handler
        _BY_HEAD[etype.value] = handler


def unregister(handler: FamilyHandler) -> None:
    """Forget ``handler`` (a family registered for a while, as tests do)."""
    for etype in handler.types:
        if _HANDLERS.get(etype) is handler:
            del _HANDLERS[etype]
            del _BY_HEAD[etype.value]


def handler_for(entity: Entity | EntityType) -> FamilyHandler:
    """The handler of an entity's family (or of an entity type's)."""
    return _HANDLERS[entity.type if isinstance(entity, Entity) else entity]


def handlers() -> list[FamilyHandler]:
    """Every registered handler, once each."""
    return list(dict.fromkeys(_HANDLERS.values()))
