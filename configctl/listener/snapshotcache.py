"""The snapshot's lines, rendered once: writing 100,000 topic overrides is a join, not 100,000
precedence resolutions.

Each snapshot line (docs/reference/snapshots.md) is ``head + body + tail`` (:mod:`configctl.snapshot`),
and only the body depends on the entity. The bodies are kept per group: the broker's own keys,
each member of an independent family (topics) with overrides, and every member of the
interdependent families (quotas, IPs) together. Nothing is rendered, or tracked, before the first
snapshot: a listener without a state directory never pays for them. After it, the manager says
what changed (:attr:`SnapshotCache.stale`, :meth:`~SnapshotCache.member_removed`,
:meth:`~SnapshotCache.broker_changed`, :meth:`~SnapshotCache.others_changed`) and only that is
rendered again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from configctl import snapshot
from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.handlers import BrokerView, FamilyHandler, handler_for, handlers
from configctl.handlers.base import handler_at
from configctl.precedence import EffectiveValue
from configctl.secrets import digest

Group = str | tuple[str, ...]
"""The bodies of one entity, or of several: one string when there is one key (most topics)."""


class SnapshotCache:
    """The rendered bodies of one broker's snapshot; the manager calls it under its lock."""

    def __init__(self) -> None:
        self.stale: set[str] | None = None
        """The members of independent families (topics) to render again: the manager adds each
        one whose config changes. None until the first render, as all of them are stale then."""
        self._members: dict[str, Group] = {}  # member path -> its bodies (overridden members only)
        self._member_order: list[str] | None = None  # sorted keys of _members, rebuilt on add/remove
        self._broker: tuple[str, ...] | None = None
        self._others: tuple[str, ...] | None = None

    def broker_changed(self) -> None:
        """The broker's own config was resolved again."""
        self._broker = None

    def others_changed(self) -> None:
        """A member of an interdependent family (a quota, an IP) changed."""
        self._others = None

    def member_removed(self, path: str) -> None:
        """A member of an independent family holds no config any more."""
        if self.stale is not None:
            self.stale.discard(path)
        if self._members.pop(path, None) is not None:
            self._member_order = None

    def groups(
        self,
        view: BrokerView,
        configs: Mapping[str, Mapping[str, str]],
        families: Mapping[str, set[str]],
        key: bytes | None,
    ) -> list[Group]:
        """Every group of bodies in snapshot order (the broker's keys, then the members of each
        family), rendering what is stale; ``view``, ``configs`` and ``families`` are the manager's
        in force, ``key`` the fleet's digest key for secrets."""
        if self._broker is None:
            self._broker = _bodies(view.own_path, view.resolution.values, sorted(view.resolution.values), key)
        if self._others is None:
            self._others = self._render_others(view, families, key)
        stale = self.stale
        if stale is None:
            independent = tuple(f"{t.value}/" for h in handlers() if h.independent for t in h.types)
            stale = {p for p in configs if p.startswith(independent)}
        handler: FamilyHandler | None = None
        type_prefix: str | None = None
        for path in stale:
            if type_prefix is None or not path.startswith(type_prefix):  # one type: one handler
                type_prefix = path.split("/", 1)[0] + "/"
                handler = handler_at(path)
            if handler is None:  # a family no longer registered
                continue
            rendered = self._render(handler.entity_at(path), view, key, handler)
            if path not in self._members:
                self._member_order = None
            self._members[path] = rendered[0] if len(rendered) == 1 else rendered
        self.stale = set()
        if self._member_order is None:
            self._member_order = sorted(self._members)
        member_groups = [self._members[p] for p in self._member_order]
        return [self._broker, *member_groups, self._others]

    @staticmethod
    def _render(
        entity: Entity, view: BrokerView, key: bytes | None, handler: FamilyHandler | None = None
    ) -> tuple[str, ...]:
        values = (handler or handler_for(entity)).snapshot_values(entity, view)
        return _bodies(entity.path, {v.name: v for v in values}, [v.name for v in values], key)

    @classmethod
    def _render_others(
        cls, view: BrokerView, families: Mapping[str, set[str]], key: bytes | None
    ) -> tuple[str, ...]:
        """The snapshot lines of every member of the interdependent families (quotas, IPs)."""
        lines: list[str] = []
        for path in sorted(set().union(*families.values())):
            try:
                entity = Entity.from_path(path)
            except InvalidInput:
                continue
            lines.extend(cls._render(entity, view, key))
        return tuple(lines)


def _bodies(
    path: str, values: Mapping[str, EffectiveValue], names: Iterable[str], key: bytes | None
) -> tuple[str, ...]:
    """The snapshot bodies of ``path``'s ``names`` (in that order), secrets as their digests."""
    result = []
    for name in names:
        value = values.get(name)
        if value is None:
            continue
        shown = digest(value.value, key) if value.sensitive and value.value is not None else value.value
        result.append(snapshot.body(path, value.name, shown, value.source))
    return tuple(result)
