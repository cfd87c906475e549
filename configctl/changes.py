"""A requested config change, applied to a config and compared with it. Pure.

Kept apart from ZooKeeper so the retry loop of a conflicting write can re-apply the same
change to whatever it re-reads, and so ``--dry-run`` and ``plan`` show exactly the diff a
real write would make.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from configctl.errors import InvalidInput


@dataclass(frozen=True)
class ConfigChange:
    """Keys to set (already in stored string form) and keys to remove; or, with ``replace``, the
    whole config to write whatever is stored (the way to repair a node that is not a Kafka config)."""

    add: Mapping[str, str] = field(default_factory=dict)
    delete: tuple[str, ...] = ()
    replace: bool = False

    def __post_init__(self) -> None:
        both = sorted(set(self.add) & set(self.delete))
        if both:
            raise InvalidInput(f"{', '.join(both)} cannot be both added and deleted in one change")
        if self.replace and self.delete:
            raise InvalidInput(
                "--replace writes the whole config: give it with --add-config, not --delete-config"
            )
        if not self.add and not self.delete and not self.replace:
            raise InvalidInput("nothing to change: give --add-config, --add-config-file or --delete-config")


@dataclass(frozen=True)
class KeyDiff:
    """One key's difference between two configs; ``old``/``new`` None means absent."""

    name: str
    old: str | None
    new: str | None

    @property
    def kind(self) -> str:
        if self.old is None:
            return "add"
        if self.new is None:
            return "delete"
        return "change"


def apply_change(
    current: Mapping[str, str], change: ConfigChange, *, what: str = "the entity"
) -> dict[str, str]:
    """The config after ``change``; deleting a key that is not set is an error, as in Kafka."""
    if change.replace:
        return dict(change.add)
    missing = [key for key in change.delete if key not in current]
    if missing:
        listed = ", ".join(repr(k) for k in missing)
        raise InvalidInput(f"cannot delete {listed}: not set on {what}")
    result = {k: v for k, v in current.items() if k not in change.delete}
    result.update(change.add)
    return result


def diff(old: Mapping[str, str], new: Mapping[str, str]) -> list[KeyDiff]:
    """Per-key differences, sorted by key name."""
    names = sorted(set(old) | set(new))
    return [KeyDiff(n, old.get(n), new.get(n)) for n in names if old.get(n) != new.get(n)]
