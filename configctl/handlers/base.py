"""What every entity-family handler shares: the broker's view, problems, and the handler contract.

Kafka's ``DynamicConfigManager`` hands each change to one ``ConfigHandler`` per entity type. Here a
handler is pure: given what a broker runs (:class:`BrokerView`) it says what of a stored config
takes effect (:meth:`FamilyHandler.admit`), what an entity's effective config is
(:meth:`FamilyHandler.effective`) and which entities' effective configs a change moves
(:meth:`FamilyHandler.moved`). The listener applies changes through the handlers and
``describe --effective`` answers through the very same ones, so the two cannot disagree.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput
from configctl.precedence import BrokerResolution, EffectiveValue, resolve_broker

# Contract 7's problem kinds.
POISON = "poison"
"""A node that is not a Kafka notification or config, or a config that fails its schema."""
REJECTED = "rejected"
"""A plugin refused the change."""
IGNORED = "ignored"
"""A key (or an entity) Kafka would drop: misplaced, an invalid value, a password it cannot decrypt."""
UNREADABLE = "unreadable"
"""A node the listener may not read (ACL), or cannot (too large)."""
KINDS = (POISON, REJECTED, IGNORED, UNREADABLE)


@dataclass(frozen=True)
class Problem:
    """Something a broker could not apply (Contract 7), as its state node lists it."""

    kind: str
    entity_path: str | None
    change_number: int | None
    reason: str
    name: str | None = None
    plugin: str | None = None
    notification: str | None = None
    at_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "kind": self.kind,
            "entity_path": self.entity_path,
            "change_number": self.change_number,
            "reason": self.reason,
        }
        for key in ("name", "plugin", "notification", "at_ms"):
            value = getattr(self, key)
            if value is not None:
                document[key] = value
        return document

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Problem:
        return cls(
            kind=str(data.get("kind", "")),
            entity_path=data.get("entity_path"),
            change_number=data.get("change_number"),
            reason=str(data.get("reason", "")),
            name=data.get("name"),
            plugin=data.get("plugin"),
            notification=data.get("notification"),
            at_ms=data.get("at_ms"),
        )


@dataclass(frozen=True)
class Admission:
    """What of a stored config takes effect: ``config`` (None: refused as a whole) and why not all."""

    config: dict[str, str] | None
    problems: tuple[Problem, ...] = ()


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

    __slots__ = ("_families", "broker_id", "configs", "resolution", "static", "topics")

    def __init__(
        self,
        broker_id: int,
        static: Mapping[str, str],
        configs: Mapping[str, Mapping[str, str]],
        *,
        topics: frozenset[str] | set[str] | None = None,
        families: Mapping[str, set[str] | frozenset[str]] | None = None,
        resolution: BrokerResolution | None = None,
    ) -> None:
        self.broker_id = int(broker_id)
        self.static = static
        self.configs = configs
        self.topics = topics if topics is not None else {p[7:] for p in configs if p.startswith("topics/")}
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

    def family(self, name: str) -> Iterable[str]:
        """Stored paths with a config in force, of one family (``quotas`` or ``ips``)."""
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
            self.broker_id, self.static, configs, topics=self.topics, families=families, resolution=resolution
        )


DEFAULT_BROKER_PATH = f"brokers/{DEFAULT}"


def family_of(path: str) -> str | None:
    """Quota entities (users, clients) resolve against each other, and so do IPs."""
    head = path.split("/", 1)[0]
    if head in ("users", "clients"):
        return "quotas"
    if head == "ips":
        return "ips"
    return None


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


class FamilyHandler(ABC):
    """One entity family's rules. Stateless; every method is pure."""

    types: ClassVar[tuple[EntityType, ...]]

    def follows(self, entity: Entity, broker_id: int) -> bool:
        """Does a broker apply this entity at all? (Only other brokers' own configs are not.)"""
        return True

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
