"""Compact storage for the configs a listener keeps in force: one small tuple per entity, not a dict.

A broker follows every topic of the cluster. With 100,000 topics overriding a key or two, a dict
per topic (184 bytes empty of content, before its strings) is most of the listener's memory.
:class:`CompactConfig` is a read-only mapping stored as one flat tuple ``(k1, v1, k2, v2, ...)``:
56 bytes for one key. Lookups scan the pairs, which for the handful of keys a topic overrides is
as fast as hashing. Key strings are shared (interned) by the manager, so 100,000 topics
overriding ``retention.ms`` hold one copy of the name, and values repeated across topics (a
week of retention, ``compact``) are shared too.
"""

from __future__ import annotations

import sys
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

COMPACT_MAX_KEYS = 8
"""Configs with more keys stay dicts (broker configs can hold hundreds: lookups must hash)."""
_SHARED_VALUE = 64
"""Values up to this long are shared between entities (interned); longer ones are rarely equal."""


class CompactConfig(tuple, Mapping[str, str]):  # type: ignore[misc]
    """An immutable ``name -> value`` mapping stored as a flat tuple of alternating names and values."""

    __slots__ = ()

    @classmethod
    def of(cls, config: Mapping[str, str]) -> CompactConfig:
        intern = sys.intern
        if len(config) == 1:  # most topics override one key: skip the list
            ((name, value),) = config.items()
            return cls((intern(name), intern(value) if len(value) <= _SHARED_VALUE else value))
        flat: list[str] = []
        for name, value in config.items():
            flat.append(intern(name))
            flat.append(intern(value) if len(value) <= _SHARED_VALUE else value)
        return cls(flat)

    def __getitem__(self, key: Any) -> str:  # type: ignore[override]
        items = tuple.__getitem__
        for index in range(0, tuple.__len__(self), 2):
            if items(self, index) == key:
                return items(self, index + 1)  # type: ignore[no-any-return]
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in tuple.__getitem__(self, slice(0, None, 2))

    def __iter__(self) -> Iterator[str]:
        return iter(tuple.__getitem__(self, slice(0, None, 2)))

    def __len__(self) -> int:
        return tuple.__len__(self) // 2

    def keys(self) -> KeysView[str]:
        return KeysView(self)

    def items(self) -> ItemsView[str, str]:
        return ItemsView(self)

    def values(self) -> ValuesView[str]:
        return ValuesView(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CompactConfig) and tuple.__eq__(self, other):
            return True
        if not isinstance(other, dict) and not isinstance(other, Mapping):  # dict: no ABC check
            return NotImplemented
        return len(self) == len(other) and all(
            name in other and other[name] == value for name, value in self.items()
        )

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return f"CompactConfig({dict(self.items())!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (CompactConfig, (tuple(tuple.__iter__(self)),))


def compact(config: Mapping[str, str]) -> Mapping[str, str]:
    """``config`` in the smallest form that still answers lookups fast.

    Asked with ``type() is``, not ``isinstance``: CompactConfig is a Mapping, so an isinstance
    test of the dict a full load hands over (100,000 of them) goes through the ABC machinery."""
    if type(config) is CompactConfig or len(config) > COMPACT_MAX_KEYS:
        return config
    return CompactConfig.of(config)


__all__ = ["COMPACT_MAX_KEYS", "CompactConfig", "compact"]
