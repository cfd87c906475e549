"""The store in roles: each a small typed interface one implementation offers and a feature needs.

A feature is written against the roles it uses and nothing below them; which implementation plays
each role is decided once, where the command opens its store (:func:`configctl.cli.context.new_store`,
the way httpx picks a transport), and composed explicitly (:class:`configctl.store.composed.Store`).

- :class:`Connection`: what the store is, where, how long a request may take, opening and closing;
- :class:`ConfigReads`: entity configs as stored, with their versions;
- :class:`Registrations`: what Kafka registered (running brokers, topics) and who owns the metadata;
- :class:`ConfigWrites`: the one version-checked write, its batched form, what landed after a lost
  connection, and a dry run; each implementation gives its own account of what was in flight
  when a commit was interrupted (:class:`~configctl.store.vocabulary.CommitInterrupted`);
- :class:`History`: who changed what, when and why, per entity;
- :class:`Notifications`: the change numbers brokers report having applied;
- :class:`FleetState`: what each broker's listener published;
- :class:`Watches`: calls back when a broker's published state changes (no polling);
- :class:`BrokerReports`: what each broker itself reports when asked (a store whose capabilities
  say ``broker_reports``; reached through :func:`broker_reports`);
- :class:`Rollouts` and :class:`ActiveRollout`: rollout records that outlive their process.

:class:`ConfigStore` is all of them together: what a command holds. Every error is a
:mod:`configctl.errors` class (each with its exit status), plus
:class:`~configctl.store.vocabulary.VersionConflict` and
:class:`~configctl.store.vocabulary.CommitInterrupted`, which the write path handles itself.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from configctl.entities import Entity, EntityType
from configctl.store.capabilities import Capabilities
from configctl.store.vocabulary import Change, Committed, NodeOp, Notification, Stored
from configctl.znodes import HistoryRecord

if TYPE_CHECKING:
    from pathlib import Path

    from configctl import applied
    from configctl.migration import MetadataOwner
    from configctl.reported import ReportedConfig
    from configctl.rollout.record import CanaryPlan, Listed, Loaded, Options, Planned, Record, Undo, UndoChunk


class Connection(Protocol):
    """What the store is and where, and its lifetime: opened once per command, closed after."""

    @property
    def identity(self) -> str:
        """Who writes (recorded in history and rollout records)."""
        ...

    @property
    def history_limit(self) -> int:
        """How many history records are kept per entity."""
        ...

    @property
    def kind(self) -> str:
        """The implementation's name as the operator knows it (``zookeeper``)."""
        ...

    @property
    def location(self) -> str:
        """Where the store is (ZooKeeper's connect string), as a health check is told it."""
        ...

    @property
    def timeout(self) -> float:
        """Seconds one request may take (also how long a lost connection is waited for)."""
        ...

    def open(self) -> object: ...

    def close(self) -> None: ...


class ConfigReads(Protocol):
    """Entity configs as stored, with the version each was read at."""

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

    def last_written(self, entity: Entity) -> Stored | None:
        """What this store itself last wrote to ``entity`` (a writer starts from it, saving a read)."""
        ...


class Registrations(Protocol):
    """What Kafka registered, and who owns the cluster's metadata."""

    def cluster_id(self) -> str | None:
        """The Kafka cluster's id, None when no Kafka broker ever registered one."""
        ...

    def running_brokers(self) -> set[int] | None: ...

    def existing_topics(self, names: Iterable[str]) -> set[str] | None: ...

    def metadata_owner(self) -> MetadataOwner:
        """Who owns the cluster's metadata now (ZooKeeper, a KRaft controller, a migration)."""
        ...

    def kafka_release(self) -> str:
        """The Kafka release line the cluster runs (``3.9``, ``4.4``; ``4.x`` for a Kafka 4 newer
        than configctl knows): the one answer validation asks which Kafka's rules apply."""
        ...


class ConfigWrites(Protocol):
    """The one write: version-checked changes, all or nothing per transaction."""

    @property
    def capabilities(self) -> Capabilities:
        """What writes through this role can do (a broker write shares no transaction, ...)."""
        ...

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]: ...

    def commit_batches(
        self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2
    ) -> Generator[list[Committed], None, None]:
        """``changes`` in transactions of this store's own size, yielded as each commits. Once any
        transaction went out, every failure ends as :class:`~configctl.store.vocabulary.CommitInterrupted`,
        which says which changes were in flight (``unknown``) and which were never sent, by this
        store's own batching: a lost connection, a refusal, or the caller's own failure thrown into
        the generator (``batches.throw(exc)``) between two batches, kept as its ``failure``."""
        ...

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        """``(landed, not landed)`` of changes whose transaction's outcome is unknown, re-read."""
        ...

    def validate(self, changes: Sequence[Change]) -> None:
        """Ask whoever else validates these writes (a running broker) without writing (``--dry-run``)."""
        ...


class History(Protocol):
    """Who changed what, when and why: the records kept per entity."""

    @property
    def history_archive(self) -> Path | None:
        """The history archive read beside the store's own records, if any (named in a horizon error)."""
        ...

    def history(self, entity: Entity) -> list[HistoryRecord]: ...

    def history_entities(self) -> list[Entity]:
        """Every entity with recorded history, deleted ones included (``history --since``, ``--at``)."""
        ...

    def histories(self, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
        """:meth:`history` of many entities at once (by entity path), read in few round trips."""
        ...

    def record_history(self, change: Change, version: int, *, reason: str = "") -> None:
        """Record ``change``, committed at ``version`` by someone else (a broker), in the history."""
        ...

    def carried_applied_log(self, broker_id: int) -> list[applied.Record] | None:
        """What broker ``broker_id``'s listener logged it applied before the cluster was migrated,
        as carried into the cluster (``migration carry --applied-log``); None: nothing carried
        (a ZooKeeper-mode cluster's applied logs are read from the state directories)."""
        ...


class Notifications(Protocol):
    """The change numbers every write gets, which brokers report having applied."""

    def notifications(self) -> list[Notification]: ...

    def notification_times(self) -> list[tuple[int, str, int]]:
        """``(change number, entity path, creation time in ms)`` of each notification still in the
        store, oldest first (what ``change:N`` and a history record's change number are read from)."""
        ...

    def latest_change_number(self) -> int | None: ...

    def notified_changes(self) -> list[applied.Record]:
        """What each change of :meth:`notification_times` stored, where the store itself knows it
        (a KRaft cluster's flight recorder: every key each write moved); [] where only the
        listeners' applied logs say it."""
        ...

    def notified_paths(self, notifications: Sequence[Notification]) -> list[str]:
        """The entity path each of ``notifications`` names (gone, unreadable or malformed ones left out)."""
        ...


class FleetState(Protocol):
    """What each broker's listener published: live state, and a record kept when it dies."""

    def broker_state(self, broker_id: int | str) -> dict[str, Any] | None:
        """What broker ``broker_id``'s listener published, None when none runs (or it is unreadable)."""
        ...

    def broker_states(self) -> dict[int, dict[str, Any]]:
        """The published state of every running listener, by broker id."""
        ...

    def fleet_records(self) -> dict[int, dict[str, Any]]:
        """Every broker's persistent record (kept when its listener dies), by broker id."""
        ...

    def retire_broker(self, broker_id: int) -> bool:
        """Forget a decommissioned broker's persistent record; False when there was none."""
        ...


STATUS, CHANGES, ROLLOUTS = "status", "changes", "rollouts"
FLEET_PARTS = (STATUS, CHANGES, ROLLOUTS)
"""What a fleet watch tells of: the brokers' ``status``, the newest ``changes``, the ``rollouts``."""


class FleetWatch(Protocol):
    """One set of watches on everything the fleet shows (the console's): it only *tells* which keys
    moved, on its own thread; the holder reads on its own (:meth:`refresh`)."""

    @property
    def everything(self) -> tuple[str, ...]:
        """Every key of the watch itself (re-armed by :meth:`refresh`)."""
        ...

    @property
    def count(self) -> int:
        """How many watches it holds (what the console costs its store)."""
        ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def refresh(self, keys: set[str]) -> set[str]:
        """Re-arm what ``keys`` (told earlier) name; the :data:`FLEET_PARTS` they moved."""
        ...


class Watches(Protocol):
    """Calls back when what the fleet published changes: ``--wait``, a rollout's soak and the
    console never poll."""

    def watch_fleet(self, tell: Callable[..., None], on_lost: Callable[[], None]) -> FleetWatch:
        """A :class:`FleetWatch` calling ``tell(*keys)`` when something moved (a key of its own,
        or one of :data:`FLEET_PARTS`) and ``on_lost()`` when the store's connection went."""
        ...

    def watch_broker_state(self, broker_id: int, on_state: Callable[[bytes | None], bool]) -> None:
        """Call ``on_state`` with the state document's bytes (None: no listener) now and at every
        change, until it returns False; the caller does not wait for the first call."""
        ...


class BrokerReports(Protocol):
    """What each broker itself reports, asked through the Admin API sent to that broker alone.

    Where no configctl listener publishes a fleet state (KRaft), this is the fleet's truth:
    ``--wait`` asks every registered broker until each reports the written value, ``status`` and
    ``describe --effective --broker N`` show what the brokers say. A broker that does not answer
    raises :class:`~configctl.errors.KafkaUnavailable`; nothing is ever filled in for it.
    """

    def reported_config(self, broker_id: int, entity: Entity) -> dict[str, str]:
        """``entity``'s own stored layer as broker ``broker_id`` reports it, in the store's terms
        (what :meth:`ConfigReads.read` gives: a hidden value masked, SCRAM as ``iterations=N``)."""
        ...

    def reported_keys(self, broker_id: int, entity: Entity) -> dict[str, ReportedConfig]:
        """Every key of a broker or topic ``entity`` as broker ``broker_id`` reports it: value,
        source and synonyms (``describe --effective --broker N``)."""
        ...

    def cluster_report(self) -> dict[str, Any]:
        """The cluster as its brokers and controllers describe it: registered brokers (fenced or
        not), the controller quorum, the metadata version and release (docs/reference/json-output.md,
        "status on KRaft", gives the shape)."""
        ...


class HoldsBrokerReports(Protocol):
    """A store that hands out its :class:`BrokerReports` (one whose capabilities say ``broker_reports``)."""

    def broker_reports(self) -> BrokerReports: ...


def broker_reports(store: ConfigStore, *, what: str) -> BrokerReports:
    """``store``'s :class:`BrokerReports`, or a one-line refusal of ``what`` when its capabilities
    do not say ``broker_reports`` (the capability, not the store's class, decides)."""
    store.capabilities.require("broker_reports", what=what)
    return cast(HoldsBrokerReports, store).broker_reports()


class ConfigStore(
    Connection,
    ConfigReads,
    Registrations,
    ConfigWrites,
    History,
    Notifications,
    FleetState,
    Watches,
    Protocol,
):
    """Every role together: what a command opens (:class:`configctl.store.composed.Store`)."""

    @property
    def rollouts(self) -> Rollouts: ...

    def __enter__(self) -> ConfigStore: ...

    def __exit__(self, *exc: object) -> None: ...


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

    def after_abort(
        self, rollout_id: str, current: Record | None, timeout: float = 15.0
    ) -> Record | None: ...

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
