"""The store every feature talks to: one interface, its vocabulary, and what a store can do.

A feature (the write path, its impact check, ``describe --effective``, ``status`` and ``--wait``,
history and rollback, desired state, canaries and waves) is written against :class:`ConfigStore`
and nothing below it. Which implementation it gets is decided once, where the command opens its
store (:func:`configctl.cli.context.new_store`, the way httpx picks a transport); no command and
no feature branches on it. Today the one implementation is ZooKeeper's
(:class:`configctl.zk.configstore.ConfigStore`, with :mod:`configctl.zk.rollouts` for rollout
records); the Admin API's (:mod:`configctl.adminapi`) will sit beside it.

A store says what it can do as data (:class:`Capabilities`): a feature that needs more than
reads and writes asks ``store.capabilities`` (or :meth:`Capabilities.require`, which refuses
with one line) instead of looking at the implementation's class.

The vocabulary is shared by every implementation: :class:`Stored` (a config as read, with its
version), :class:`Change` (a config to write if the entity is still at the version read),
:class:`Committed`, :class:`NodeOp` (another node in the same transaction),
:class:`Notification`, :class:`VersionConflict` and :class:`CommitInterrupted`; and the one
version rule (:func:`version_after`). This module does no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput, ZooKeeperUnavailable
from configctl.znodes import HistoryRecord, encode_entity_config

if TYPE_CHECKING:
    from pathlib import Path

    from configctl.migration import MetadataOwner
    from configctl.rollout.record import CanaryPlan, Listed, Loaded, Options, Planned, Record, Undo, UndoChunk

ABSENT = -1
"""The version of an entity whose node does not exist (:attr:`Stored.version`, :attr:`Change.expected_version`)."""


def version_after(expected_version: int) -> int:
    """The version an entity's node has after a write that found it at ``expected_version``:
    created at 0 when it was absent (:data:`ABSENT`), else one on.

    The one home of this rule (the store's commit, what landed after a lost connection, a
    rollout's undo record). A write that removes an emptied quota node leaves it absent instead
    (Kafka 3.5+'s rule, :data:`configctl.zk.configstore.CLEANED_TYPES`); only the store knows that
    for sure, once it has read the node's children.
    """
    return 0 if expected_version < 0 else expected_version + 1


# -- the vocabulary -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stored:
    """An entity's config as it is in the store; ``version`` is -1 when the node does not exist.

    ``problem`` says why a node that exists could not be read as a Kafka config (``config`` is
    then empty): such a node is reported, and only replaced on an explicit request.
    """

    entity: Entity
    config: dict[str, str]
    version: int
    problem: str | None = None

    @property
    def exists(self) -> bool:
        return self.version >= 0


@dataclass(frozen=True)
class Change:
    """One entity's new config, to be written only if the node still has ``expected_version``.

    A rollout that undoes its own writes restores a node's exact previous bytes, which Kafka or
    another tool may have encoded differently: ``exact`` is then written as is (``config`` is
    what it decodes to, for the history record), and ``remove_node`` deletes a node that did not
    exist before.
    """

    entity: Entity
    config: dict[str, str]
    expected_version: int
    previous: dict[str, str] = field(default_factory=dict)
    exact: bytes | None = None
    remove_node: bool = False

    @cached_property
    def data(self) -> bytes:
        """The bytes the config node gets (encoded once: the size check and the write both need them)."""
        return self.exact if self.exact is not None else encode_entity_config(self.config)


@dataclass(frozen=True)
class NodeOp:
    """A node outside ``/config`` written in the same multi as configs, so both land or neither does
    (a rollout's record, its claims on entities, the owner of a running rollout).

    ``action`` is ``create`` (``ephemeral`` for a node that lives with this session), ``set`` and
    ``delete`` (checked against ``version``; -1 is any) or ``check`` (the node is at ``version``).
    """

    action: str
    path: str
    data: bytes = b""
    version: int = -1
    ephemeral: bool = False


@dataclass(frozen=True)
class Committed:
    entity: Entity
    version: int
    change_number: int | None


@dataclass(frozen=True)
class Notification:
    """A change notification node: its name and change number."""

    name: str
    number: int


class VersionConflict(Exception):
    """A version-checked write found the node moved (someone else wrote first); nothing was written."""


class CommitInterrupted(Exception):
    """The connection went away with transactions in flight: ``unknown`` may or may not have landed.

    ``committed`` were confirmed before that; ``not_sent`` were never sent. The write path turns
    this into :class:`configctl.errors.PartiallyWritten` or, after re-reading, a plain answer.
    """

    def __init__(
        self, committed: list[Committed], unknown: list[Change], not_sent: list[Change], cause: str
    ) -> None:
        super().__init__(cause)
        self.committed, self.unknown, self.not_sent, self.cause = committed, unknown, not_sent, cause
        self.error = ZooKeeperUnavailable(f"lost the connection to ZooKeeper while writing configs ({cause})")


# -- what a store can do ----------------------------------------------------------------------------


class Unsupported(InvalidInput):
    """The store the command opened cannot do what the feature needs; nothing was written."""


@dataclass(frozen=True)
class Capabilities:
    """What a store can do beyond reading and writing entity configs, declared as data.

    Each field is one capability a feature may need; :meth:`require` refuses a feature that
    needs one the store lacks, in one line, before anything is written.
    """

    versioned_writes: bool
    """A write names the version it read and fails with :class:`VersionConflict` when the entity
    moved since (``--if-version``, plans checked against what they read, rollback, rollouts)."""
    extra_nodes: bool
    """:meth:`ConfigStore.commit` writes other nodes (:class:`NodeOp`) in the same transaction as
    configs (a rollout's record, undo chunks and claims)."""
    watches: bool
    """The store calls back when a broker's published state or a rollout's record changes
    (``--wait``, a rollout's wait and soak): no polling."""
    history: bool
    """Every write is recorded with who, when and why (``history``, ``rollback``)."""
    notifications: bool
    """Every write gets a change number that brokers report having applied (``--wait``, ``status``)."""
    fleet_state: bool
    """What each broker's listener published is readable (``status``, ``describe --effective``,
    a canary's live brokers)."""
    rollout_records: bool
    """Rollout records (:attr:`ConfigStore.rollouts`): canaries and waves survive their process."""
    brokers_validate: bool = False
    """A running broker's config goes through that broker, which validates it (and encrypts its
    passwords with its own secret): Kafka's refusal of ZooKeeper writes while brokers run does not
    apply, passwords are sent in clear (over the client's TLS), and :meth:`ConfigStore.validate`
    asks the broker."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def require(self, *names: str, what: str) -> None:
        """Refuse ``what`` (a feature, as the operator names it) unless every capability in
        ``names`` is there (:class:`Unsupported`, exit 1)."""
        for name in names:
            if name not in self.names():
                raise ValueError(f"unknown store capability {name!r}")
            if not getattr(self, name):
                raise Unsupported(
                    f"{what} needs {name.replace('_', ' ')}, which the store in use does not offer; "
                    "nothing was written"
                )


# -- the interfaces ---------------------------------------------------------------------------------


class ConfigStore(Protocol):
    """Entity configs and everything the features read or write beside them.

    Reads and writes are version-checked where :attr:`capabilities` says so; every error is a
    :mod:`configctl.errors` class (each with its exit status), plus :class:`VersionConflict` and
    :class:`CommitInterrupted`, which the write path handles itself.
    """

    identity: str
    """Who writes (recorded in history and rollout records)."""
    history_limit: int
    history_archive: Path | None
    """The history archive read beside the store's own records (:class:`configctl.archive.ArchivedHistory`), if any."""

    @property
    def kind(self) -> str:
        """The implementation's name as the operator knows it (``zookeeper``)."""
        ...

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def location(self) -> str:
        """Where the store is (ZooKeeper's connect string), as a health check is told it."""
        ...

    @property
    def timeout(self) -> float:
        """Seconds one request may take (also how long a lost connection is waited for)."""
        ...

    def open(self) -> ConfigStore: ...

    def close(self) -> None: ...

    def __enter__(self) -> ConfigStore: ...

    def __exit__(self, *exc: object) -> None: ...

    # -- entity configs ----------------------------------------------------------------------------

    def read(self, entity: Entity, *, strict: bool = True) -> Stored: ...

    def read_many(self, entities: Iterable[Entity], *, strict: bool = True) -> list[Stored]: ...

    def read_type(self, entity_type: EntityType, *, strict: bool = True) -> list[Stored]: ...

    def read_all(self, *, strict: bool = True) -> list[Stored]: ...

    def entities(self, entity_type: EntityType) -> list[Entity]:
        """Every entity of a type with a config (users include their nested clients)."""
        ...

    def entity_names(self, entity_type: EntityType, *, user: str | None = None) -> list[str]:
        """The names of one type as stored (sanitized where the type is), or ``user``'s clients
        (``user`` as stored): a cheap listing for shell completion."""
        ...

    def last_written(self, entity: Entity) -> Stored | None: ...

    # -- what Kafka registered ---------------------------------------------------------------------

    def running_brokers(self) -> set[int] | None: ...

    def existing_topics(self, names: Iterable[str]) -> set[str] | None: ...

    def metadata_owner(self) -> MetadataOwner:
        """Who owns the cluster's metadata now (ZooKeeper, a KRaft controller, a migration)."""
        ...

    # -- writes ------------------------------------------------------------------------------------

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]: ...

    def commit_batches(
        self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2
    ) -> Iterator[list[Committed]]: ...

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]: ...

    def validate(self, changes: Sequence[Change]) -> None:
        """Ask whoever else validates these writes (a running broker) without writing (``--dry-run``)."""
        ...

    # -- history and notifications -----------------------------------------------------------------

    def history(self, entity: Entity) -> list[HistoryRecord]: ...

    def history_entities(self) -> list[Entity]:
        """Every entity with recorded history, deleted ones included (``history --since``, ``--at``)."""
        ...

    def histories(self, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
        """:meth:`history` of many entities at once (by entity path), read in few round trips."""
        ...

    def notification_times(self) -> list[tuple[int, str, int]]:
        """``(change number, entity path, creation time in ms)`` of each notification still in the
        store, oldest first (what ``change:N`` and a history record's change number are read from)."""
        ...

    def record_history(self, change: Change, version: int, *, reason: str = "") -> None:
        """Record ``change``, committed at ``version`` by someone else (a broker), in the history."""
        ...

    def notifications(self) -> list[Notification]: ...

    def latest_change_number(self) -> int | None: ...

    def notified_paths(self, notifications: Sequence[Notification]) -> list[str]:
        """The entity path each of ``notifications`` names (gone, unreadable or malformed ones left out)."""
        ...

    # -- the fleet ---------------------------------------------------------------------------------

    def broker_state(self, broker_id: int | str) -> dict[str, Any] | None:
        """What broker ``broker_id``'s listener published, None when none runs (or it is unreadable)."""
        ...

    def broker_states(self) -> dict[int, dict[str, Any]]:
        """The published state of every running listener, by broker id."""
        ...

    def fleet_records(self) -> dict[int, dict[str, Any]]:
        """Every broker's persistent record (kept when its listener dies), by broker id."""
        ...

    def watch_broker_state(self, broker_id: int, on_state: Callable[[bytes | None], bool]) -> None:
        """Call ``on_state`` with the state document's bytes (None: no listener) now and at every
        change, until it returns False; the caller does not wait for the first call."""
        ...

    def retire_broker(self, broker_id: int) -> bool:
        """Forget a decommissioned broker's persistent record; False when there was none."""
        ...

    # -- rollouts ----------------------------------------------------------------------------------

    @property
    def rollouts(self) -> Rollouts: ...


class Rollouts(Protocol):
    """A store's rollout records: created with their claims, read back, and moved on one write at a time."""

    def record(self, rollout_id: str) -> tuple[Record, int] | None:
        """The record and its version (None when there is none)."""
        ...

    def load(self, rollout_id: str) -> Loaded: ...

    def salvage(self, rollout_id: str) -> Loaded:
        """What can be read of a rollout whose record is damaged (``rollout abort --force``):
        unreadable fields take defaults that keep it open; what could not be read is in ``problems``."""
        ...

    def listing(self) -> list[Listed]: ...

    def settled(self, rollout_id: str, current: Record | None, timeout: float = 15.0) -> Record | None: ...

    def open(
        self,
        planned: Sequence[Planned],
        *,
        kind: str,
        reason: str,
        options: Options,
        waves: int,
        step: dict[str, Any],
        summary: str,
        entities: tuple[str, ...] = (),
        canary: CanaryPlan | None = None,
    ) -> ActiveRollout: ...

    def resume(self, loaded: Loaded) -> ActiveRollout:
        """The rollout ``loaded`` as one this process works on (taken over with :meth:`ActiveRollout.take_over`)."""
        ...

    def watch(self, rollout_id: str, on_version: Callable[[int | None], bool]) -> None:
        """Call ``on_version`` with the record's version (None: removed) now and at every change,
        until it returns False; the caller does not wait for the first call."""
        ...


class ActiveRollout(Protocol):
    """A rollout this process works on: every change to it is checked against the record's version."""

    store: ConfigStore
    record: Record
    version: int
    planned: list[Planned]
    undo: dict[int, UndoChunk]
    owner: dict[str, Any] | None

    @property
    def id(self) -> str: ...

    def current(self, entity: Entity) -> Stored:
        """``entity`` as it is now (a node that is not a Kafka config comes back with its ``problem``)."""
        ...

    def entity_paths(self) -> list[str]: ...

    def written(self) -> dict[Entity, Undo]: ...

    def note(self, text: str, **changes: Any) -> None: ...

    def take_over(self, text: str) -> None: ...

    def write(
        self, items: Sequence[Planned], *, reason: str, text: str, step: dict[str, Any]
    ) -> list[Committed]: ...

    def write_batches(self, items: Sequence[Planned]) -> list[list[Planned]]:
        """The writes ``items`` go out in, in order, each within one transaction's size."""
        ...

    def restore(
        self,
        chunks: Sequence[UndoChunk],
        *,
        reason: str,
        text: str,
        changes: dict[str, Any],
        before: Sequence[Change] = (),
        force: bool = False,
        finish: bool = False,
    ) -> list[Committed]: ...

    def restore_groups(self, chunks: Sequence[UndoChunk]) -> list[list[UndoChunk]]:
        """The restores ``chunks`` (newest first) go back in, each within one transaction's size."""
        ...

    def finish(self, text: str, changes: dict[str, Any]) -> None: ...

    def release(self, text: str, changes: dict[str, Any]) -> None: ...
