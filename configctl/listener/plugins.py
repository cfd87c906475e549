"""The plugin API of the broker-side listener: :class:`Reconfigurable`, its inputs, and loading.

Modelled on Kafka's ``Reconfigurable`` (KIP-226) but entity-aware, because a broker does not
only reconfigure itself: a change to ``topics/orders`` or ``users/<default>`` is as much a
reconfiguration as one to ``brokers/1``. A plugin names the config keys it cares about
(:meth:`Reconfigurable.reconfigurable_configs`), of any entity type: ``log.retention.ms`` is a
broker key, ``retention.ms`` a topic key, ``producer_byte_rate`` a quota key. For every entity
whose *effective* value of one of those keys changes, the plugin receives a :class:`ConfigUpdate`
holding that entity's complete effective config (as :mod:`configctl.precedence` resolves it for
this broker) and the names that changed. Effective, not stored: deleting a topic override, or
changing ``brokers/<default>``, changes what every affected topic runs with, and the plugin is
told so for each known topic.

Every update of one ZooKeeper entity change is first shown to every interested plugin's
:meth:`~Reconfigurable.validate_reconfiguration`; only if all accept is the change committed and
:meth:`~Reconfigurable.reconfigure` called. One rejection keeps the previous effective config in
force for every plugin and for the listener's own answers (Kafka's rule: all or nothing).

Plugins come from ``module:Class`` specs or from the entry-point group
``configctl.reconfigurables`` (by name, or all of them with discovery switched on).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.precedence import EffectiveValue

ENTRY_POINT_GROUP = "configctl.reconfigurables"


@dataclass(frozen=True)
class ConfigUpdate:
    """One entity's new effective config, as this broker will run with it.

    ``values`` holds every effective key of the entity (broker: every broker key; topic: every
    topic key; quota entity: every quota key as resolved for the entity's own user/client, plus
    its stored SCRAM credentials; IP: the connection-rate key), with source and synonyms.
    ``changed`` names the keys whose effective value or source differs from what was in force.
    ``change_number`` is the notification that carried the change (None for a full load).
    """

    entity: Entity
    values: Mapping[str, EffectiveValue]
    changed: frozenset[str]
    change_number: int | None

    @property
    def entity_path(self) -> str:
        return self.entity.path

    @property
    def configs(self) -> dict[str, str | None]:
        """``name -> value`` (None where the key has no value at all), as KIP-226 passes them."""
        return {name: value.value for name, value in self.values.items()}

    def value(self, name: str) -> str | None:
        effective = self.values.get(name)
        return None if effective is None else effective.value


@runtime_checkable
class ConfigView(Protocol):
    """What a plugin may ask the listener at any time (thread-safe, always the config in force)."""

    @property
    def broker_id(self) -> int: ...

    def broker_config(self) -> Mapping[str, EffectiveValue]: ...

    def topic_config(self, topic: str) -> Mapping[str, EffectiveValue]: ...

    def quota_config(
        self, user: str | None = None, client: str | None = None
    ) -> Mapping[str, EffectiveValue]: ...

    def ip_config(self, ip: str) -> Mapping[str, EffectiveValue]: ...

    def topics(self) -> list[str]: ...


@dataclass(frozen=True)
class PluginContext:
    """Handed to :meth:`Reconfigurable.configure` once, before the first config is loaded."""

    broker_id: int
    view: ConfigView
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("configctl.listener.plugin"))


class Reconfigurable(ABC):
    """A component whose behaviour follows dynamic config. Subclass it, or match its shape.

    Methods are called from the listener's worker thread, one at a time; queries on the
    :class:`ConfigView` may come from any thread. A plugin that raises in
    :meth:`validate_reconfiguration` rejects the change (its message is reported in the broker
    state); one that raises in :meth:`reconfigure` is logged and counted, and the change stays
    applied (the other plugins already run with it).
    """

    #: Shown in logs and in the broker state; defaults to the class name.
    name: str = ""

    def configure(self, context: PluginContext) -> None:  # noqa: B027 - optional hook
        """Called once before the initial load; the view then shows server.properties only."""

    @abstractmethod
    def reconfigurable_configs(self) -> Set[str]:
        """The config keys (of any entity type) whose effective changes this plugin handles."""

    def validate_reconfiguration(self, update: ConfigUpdate) -> None:  # noqa: B027 - accept by default
        """Raise (any exception; its message is reported) to reject ``update``. Must not change state."""

    @abstractmethod
    def reconfigure(self, update: ConfigUpdate) -> None:
        """Start running with ``update`` (every interested plugin accepted it)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Called once when the listener stops."""


_REQUIRED = ("reconfigurable_configs", "reconfigure")


@dataclass(frozen=True)
class LoadedPlugin:
    """A plugin instance with the facts the listener needs about it, computed once."""

    instance: Any
    name: str
    configs: frozenset[str]
    origin: str

    def validate(self, update: ConfigUpdate) -> None:
        check = getattr(self.instance, "validate_reconfiguration", None)
        if check is not None:
            check(update)

    def reconfigure(self, update: ConfigUpdate) -> None:
        self.instance.reconfigure(update)

    def configure(self, context: PluginContext) -> None:
        hook = getattr(self.instance, "configure", None)
        if hook is not None:
            hook(context)

    def close(self) -> None:
        hook = getattr(self.instance, "close", None)
        if hook is not None:
            hook()


def wrap(instance: Any, origin: str = "given") -> LoadedPlugin:
    """Check an instance has the Reconfigurable shape and record its interests."""
    missing = [m for m in _REQUIRED if not callable(getattr(instance, m, None))]
    if missing:
        raise InvalidInput(
            f"plugin {origin} ({type(instance).__name__}) is not a Reconfigurable: missing {', '.join(missing)}"
        )
    try:
        names = instance.reconfigurable_configs()
    except Exception as exc:
        raise InvalidInput(f"plugin {origin}: reconfigurable_configs() failed: {_one_line(exc)}") from None
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise InvalidInput(f"plugin {origin}: reconfigurable_configs() must return a set of config names")
    configs = frozenset(names)
    if not all(isinstance(n, str) and n for n in configs):
        raise InvalidInput(f"plugin {origin}: reconfigurable_configs() must return non-empty strings")
    name = getattr(instance, "name", "") or type(instance).__name__
    return LoadedPlugin(instance, str(name), configs, origin)


def _instantiate(target: Any, origin: str) -> LoadedPlugin:
    instance = target
    if isinstance(target, type):
        try:
            instance = target()
        except Exception as exc:
            raise InvalidInput(
                f"plugin {origin}: cannot create {target.__name__}(): {_one_line(exc)}"
            ) from None
    return wrap(instance, origin)


def load_plugin(spec: str) -> LoadedPlugin:
    """Load ``module:Class`` (or ``module:factory``), or an entry point of :data:`ENTRY_POINT_GROUP` by name."""
    spec = spec.strip()
    if not spec:
        raise InvalidInput("empty plugin name: give module:Class or an entry-point name")
    if ":" not in spec:
        for entry in _entry_points():
            if entry.name == spec:
                return _load_entry_point(entry)
        known = ", ".join(sorted(e.name for e in _entry_points())) or "none installed"
        raise InvalidInput(
            f"no plugin {spec!r}: give module:Class, or an entry point of {ENTRY_POINT_GROUP} ({known})"
        )
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise InvalidInput(f"plugin {spec!r} must look like module:Class")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InvalidInput(f"cannot load plugin {spec!r}: {_one_line(exc)}") from None
    except Exception as exc:
        raise InvalidInput(
            f"cannot load plugin {spec!r}: importing {module_name} failed: {_one_line(exc)}"
        ) from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise InvalidInput(f"cannot load plugin {spec!r}: {module_name} has no {attr}")
    return _instantiate(target, spec)


def discover_plugins() -> list[LoadedPlugin]:
    """Every plugin registered in the ``configctl.reconfigurables`` entry-point group."""
    return [_load_entry_point(entry) for entry in sorted(_entry_points(), key=lambda e: e.name)]


def load_plugins(specs: Iterable[Any] = (), *, discover: bool = False) -> list[LoadedPlugin]:
    """Specs (strings) and ready instances, plus the discovered entry points; duplicates by name refused."""
    loaded: list[LoadedPlugin] = []
    for spec in specs:
        if isinstance(spec, LoadedPlugin):
            loaded.append(spec)
        elif isinstance(spec, str):
            loaded.append(load_plugin(spec))
        else:
            loaded.append(
                _instantiate(spec, type(spec).__name__ if not isinstance(spec, type) else spec.__name__)
            )
    if discover:
        present = {p.origin for p in loaded}
        loaded.extend(p for p in discover_plugins() if p.origin not in present)
    names = [p.name for p in loaded]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInput(f"plugin {duplicates[0]!r} is loaded twice")
    return loaded


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _load_entry_point(entry: importlib.metadata.EntryPoint) -> LoadedPlugin:
    origin = f"{entry.name} ({entry.value})"
    try:
        target = entry.load()
    except Exception as exc:
        raise InvalidInput(f"cannot load plugin entry point {origin}: {_one_line(exc)}") from None
    return _instantiate(target, origin)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
