"""What the listener's manager is fed, and what it says a batch did: one home for the records the
runtime, the notification listener, the manager and the applied log pass between them.

In: a notification or a config node as read (:class:`RawNotification`, :class:`EntityRead`): its
bytes, or why they could not be read. Out: a :class:`BatchResult`, the :class:`AppliedChange` of
each entity that took effect (its :class:`KeyChange` records) and the problems recorded
(:class:`configctl.handlers.base.Problem`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from configctl.entities import Entity
from configctl.errors import printable
from configctl.handlers.base import Problem
from configctl.precedence import EffectiveValue
from configctl.secrets import MASK


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
