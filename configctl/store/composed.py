"""One store made of the implementations chosen for each role, delegated to by name.

The choice point (:func:`configctl.cli.context.new_store`) composes a :class:`Store` explicitly:
ZooKeeper alone; ZooKeeper with running brokers' configs written through the Admin API (another
:class:`~configctl.store.roles.ConfigWrites`); with the history archive (another
:class:`~configctl.store.roles.History`). Every method below names the role it belongs to, so a
reader (and the type checker) sees which implementation answers, and no attribute is forwarded
by name at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from configctl.entities import Entity, EntityType
from configctl.store.capabilities import Capabilities
from configctl.store.roles import (
    BrokerReports,
    ConfigReads,
    ConfigStore,
    ConfigWrites,
    FleetWatch,
    History,
    HoldsBrokerReports,
    Rollouts,
)
from configctl.store.vocabulary import Change, Committed, NodeOp, Notification, Stored
from configctl.znodes import HistoryRecord

if TYPE_CHECKING:
    from pathlib import Path

    from configctl import applied
    from configctl.migration import MetadataOwner


class Store:
    """Every role of :class:`~configctl.store.roles.ConfigStore`, each played by the part chosen for it.

    ``base`` plays every role not given otherwise (it is a whole store: ZooKeeper's). ``writes``
    and ``history`` replace its writes and its history; ``rollouts`` builds the rollout records'
    role on this store, so their writes go through ``writes`` too; ``kind`` names the whole.
    ``close`` closes what was given, then ``base``.
    """

    def __init__(
        self,
        base: ConfigStore,
        *,
        reads: ConfigReads | None = None,
        writes: ConfigWrites | None = None,
        history: History | None = None,
        rollouts: Callable[[ConfigStore], Rollouts] | None = None,
        kind: str | None = None,
        closing: Sequence[Callable[[], None]] = (),
    ) -> None:
        self.base = base
        self.reads: ConfigReads = reads if reads is not None else base
        self.writes: ConfigWrites = writes if writes is not None else base
        self.recorded: History = history if history is not None else base
        self._rollouts = rollouts
        self._kind = kind
        self._closing = tuple(closing)

    # -- Connection -------------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self.base.identity

    @property
    def history_limit(self) -> int:
        return self.base.history_limit

    @property
    def kind(self) -> str:
        return self._kind if self._kind is not None else self.base.kind

    @property
    def location(self) -> str:
        return self.base.location

    @property
    def timeout(self) -> float:
        return self.base.timeout

    def open(self) -> Store:
        self.base.open()
        return self

    def close(self) -> None:
        try:
            for close in self._closing:
                close()
        finally:
            self.base.close()

    def __enter__(self) -> Store:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ConfigReads -------------------------------------------------------------------------------

    def read(self, entity: Entity, *, strict: bool = True) -> Stored:
        return self.reads.read(entity, strict=strict)

    def read_many(self, entities: Iterable[Entity], *, strict: bool = True) -> list[Stored]:
        return self.reads.read_many(entities, strict=strict)

    def read_type(self, entity_type: EntityType, *, strict: bool = True) -> list[Stored]:
        return self.reads.read_type(entity_type, strict=strict)

    def read_all(self, *, strict: bool = True) -> list[Stored]:
        return self.reads.read_all(strict=strict)

    def entities(self, entity_type: EntityType) -> list[Entity]:
        return self.reads.entities(entity_type)

    def entity_names(self, entity_type: EntityType, *, user: str | None = None) -> list[str]:
        return self.reads.entity_names(entity_type, user=user)

    def last_written(self, entity: Entity) -> Stored | None:
        return self.reads.last_written(entity)

    # -- Registrations -----------------------------------------------------------------------------

    def cluster_id(self) -> str | None:
        return self.base.cluster_id()

    def running_brokers(self) -> set[int] | None:
        return self.base.running_brokers()

    def existing_topics(self, names: Iterable[str]) -> set[str] | None:
        return self.base.existing_topics(names)

    def metadata_owner(self) -> MetadataOwner:
        return self.base.metadata_owner()

    def kafka_release(self) -> str:
        return self.base.kafka_release()

    # -- ConfigWrites ------------------------------------------------------------------------------

    @property
    def capabilities(self) -> Capabilities:
        return self.writes.capabilities

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]:
        return self.writes.commit(changes, reason=reason, extra=extra)

    def commit_batches(
        self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2
    ) -> Generator[list[Committed], None, None]:
        return self.writes.commit_batches(changes, reason=reason, in_flight=in_flight)

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        return self.writes.landed(changes)

    def validate(self, changes: Sequence[Change]) -> None:
        self.writes.validate(changes)

    # -- History -----------------------------------------------------------------------------------

    @property
    def history_archive(self) -> Path | None:
        return self.recorded.history_archive

    def history(self, entity: Entity) -> list[HistoryRecord]:
        return self.recorded.history(entity)

    def history_entities(self) -> list[Entity]:
        return self.recorded.history_entities()

    def histories(self, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
        return self.recorded.histories(entities)

    def record_history(self, change: Change, version: int, *, reason: str = "") -> None:
        self.recorded.record_history(change, version, reason=reason)

    def carried_applied_log(self, broker_id: int) -> list[applied.Record] | None:
        return self.recorded.carried_applied_log(broker_id)

    # -- Notifications -----------------------------------------------------------------------------

    def notifications(self) -> list[Notification]:
        return self.base.notifications()

    def notification_times(self) -> list[tuple[int, str, int]]:
        return self.base.notification_times()

    def notified_changes(self) -> list[applied.Record]:
        return self.base.notified_changes()

    def latest_change_number(self) -> int | None:
        return self.base.latest_change_number()

    def notified_paths(self, notifications: Sequence[Notification]) -> list[str]:
        return self.base.notified_paths(notifications)

    # -- FleetState and Watches --------------------------------------------------------------------

    def broker_state(self, broker_id: int | str) -> dict[str, Any] | None:
        return self.base.broker_state(broker_id)

    def broker_states(self) -> dict[int, dict[str, Any]]:
        return self.base.broker_states()

    def fleet_records(self) -> dict[int, dict[str, Any]]:
        return self.base.fleet_records()

    def retire_broker(self, broker_id: int) -> bool:
        return self.base.retire_broker(broker_id)

    def watch_broker_state(self, broker_id: int, on_state: Callable[[bytes | None], bool]) -> None:
        self.base.watch_broker_state(broker_id, on_state)

    def watch_fleet(self, tell: Callable[..., None], on_lost: Callable[[], None]) -> FleetWatch:
        return self.base.watch_fleet(tell, on_lost)

    # -- BrokerReports -----------------------------------------------------------------------------

    def broker_reports(self) -> BrokerReports:
        """What each broker reports, asked of it: ``base``'s, which only a store whose capabilities
        say ``broker_reports`` has (:func:`configctl.store.roles.broker_reports` checks that first)."""
        self.capabilities.require("broker_reports", what="asking each broker what it reports")
        return cast(HoldsBrokerReports, self.base).broker_reports()

    # -- Rollouts ----------------------------------------------------------------------------------

    @property
    def rollouts(self) -> Rollouts:
        """Rollout records on this store: their writes go through :attr:`writes`."""
        if self._rollouts is None:
            return self.base.rollouts
        return self._rollouts(self)
