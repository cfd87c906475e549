"""A KRaft cluster reached through its controllers only (``--bootstrap-controller``): what configctl can do there.

Kafka's own kafka-configs.sh, given ``--bootstrap-controller``, writes broker, topic, group and
client-metrics configs through the controllers, and reads the broker default. configctl cannot
follow it there, for a reason of its own: every configctl write is recorded in its history topic
(:mod:`configctl.kraft.historytopic`), and every config configctl reads is given its version
from that topic. Topics are served by brokers only: a controller serves no Produce, no Fetch of
any topic but its metadata log, and no Metadata request to find the brokers by (its
DescribeCluster names controllers only). So a write over the controllers would be a write
without its record, and configctl does not send it; a read would be a config without its
version. Each is refused in one line that names why and what to use instead, before anything
is sent; what the controllers do answer about themselves (the cluster's id, its release) is asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from configctl.adminapi.controllers import OPTION, ControllerClient, Quorum
from configctl.adminapi.features import ClusterMode
from configctl.entities import Entity, EntityType
from configctl.identity import default_identity
from configctl.kraft.historytopic import TOPIC
from configctl.kraft.nofleet import NoFleetState
from configctl.migration import KRAFT, MetadataOwner
from configctl.store import (
    Capabilities,
    Change,
    Committed,
    FleetWatch,
    NodeOp,
    Rollouts,
    Stored,
)
from configctl.store.capabilities import Unsupported
from configctl.store.roles import BrokerReports
from configctl.znodes import HistoryRecord

if TYPE_CHECKING:
    from configctl import applied

CAPABILITIES = Capabilities(
    versioned_writes=False,
    extra_nodes=False,
    watches=False,
    history=False,
    notifications=False,
    fleet_state=False,
    rollout_records=False,
    brokers_validate=False,
    broker_reports=True,
)
"""``broker_reports``: each controller reports its own config (:mod:`configctl.kraft.controllerreports`)."""

_NO_QUOTA_READS = "a controller serves no DescribeClientQuotas, and refuses DescribeUserScramCredentials"
_LISTING = {
    EntityType.TOPICS: "a controller serves no Metadata request",
    EntityType.BROKERS: "a controller's DescribeCluster names the controllers only",
    EntityType.USERS: _NO_QUOTA_READS,
    EntityType.CLIENTS: _NO_QUOTA_READS,
    EntityType.IPS: _NO_QUOTA_READS,
    EntityType.GROUPS: "a controller serves no ListConfigResources",
    EntityType.CLIENT_METRICS: "a controller serves no ListConfigResources",
}
"""What a controller lacks to list each type, besides configctl's history topic."""


class ControllerStore(NoFleetState):
    """The controllers at ``bootstrap`` as configctl's store: connected, and refusing what needs a broker."""

    def __init__(
        self,
        client: ControllerClient,
        mode: ClusterMode,
        quorum: Quorum,
        *,
        identity: str | None = None,
        history_limit: int = 100,
    ) -> None:
        self.client = client
        self.mode = mode
        self.quorum = quorum
        self._identity = identity or default_identity()
        self._history_limit = history_limit

    # -- Connection ---------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def history_limit(self) -> int:
        return self._history_limit

    @property
    def kind(self) -> str:
        return f"KRaft controller quorum (Kafka Admin API, {self.client.bootstrap})"

    @property
    def location(self) -> str:
        return self.client.bootstrap

    @property
    def timeout(self) -> float:
        return self.client.timeout

    def open(self) -> ControllerStore:
        return self

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> ControllerStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    def _needs_brokers(self, what: str, detail: str | None = None) -> NoReturn:
        """Refuse ``what`` in one line: it needs the brokers (``detail``: what the controllers
        lack for it besides configctl's history topic, which brokers serve)."""
        where = f"over the controllers ({OPTION} {self.client.bootstrap}, cluster {self.quorum.cluster_id})"
        lacking = f" ({detail})" if detail else ""
        raise Unsupported(
            f"{where} configctl cannot {what}{lacking}: it reads every config's version from its history "
            f"topic {TOPIC} and records every write there first, and only brokers serve topics (a write "
            "it cannot record is not sent); use --bootstrap-server HOST:PORT (a broker); nothing was written"
        )

    # -- ConfigReads: a config's version is in the history topic ------------------------------

    def read(self, entity: Entity, *, strict: bool = True) -> Stored:
        self._needs_brokers(f"read {entity.display}")

    def read_many(self, entities: Iterable[Entity], *, strict: bool = True) -> list[Stored]:
        self._needs_brokers("read configs")

    def read_type(self, entity_type: EntityType, *, strict: bool = True) -> list[Stored]:
        self._needs_brokers(f"list the {entity_type.value}", _LISTING.get(entity_type))

    def read_all(self, *, strict: bool = True) -> list[Stored]:
        self._needs_brokers("read configs")

    def entities(self, entity_type: EntityType) -> list[Entity]:
        self._needs_brokers(f"list the {entity_type.value}", _LISTING.get(entity_type))

    def entity_names(self, entity_type: EntityType, *, user: str | None = None) -> list[str]:
        self._needs_brokers(f"list the {entity_type.value}", _LISTING.get(entity_type))

    def last_written(self, entity: Entity) -> Stored | None:
        return None

    # -- Registrations: what the controllers say of themselves ---------------------------------

    def cluster_id(self) -> str | None:
        return self.quorum.cluster_id

    def running_brokers(self) -> set[int] | None:
        self._needs_brokers(
            "list the running brokers", "a controller's DescribeCluster names the controllers only"
        )

    def existing_topics(self, names: Iterable[str]) -> set[str] | None:
        self._needs_brokers("list the topics", "a controller serves no Metadata request")

    def metadata_owner(self) -> MetadataOwner:
        return MetadataOwner(KRAFT, "a KRaft cluster: its controllers own the metadata")

    def kafka_release(self) -> str:
        return self.mode.release or self.mode.line

    # -- ConfigWrites: never sent without their history record ---------------------------------

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]:
        self._needs_brokers("write a config")

    def commit_batches(self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2) -> Any:
        self._needs_brokers("write a config")

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        self._needs_brokers("read configs")

    def validate(self, changes: Sequence[Change]) -> None:
        self._needs_brokers("check a write (--dry-run)")

    # -- History ------------------------------------------------------------------------------

    @property
    def history_archive(self) -> Path | None:
        return None

    def history(self, entity: Entity) -> list[HistoryRecord]:
        self._needs_brokers("read history")

    def history_entities(self) -> list[Entity]:
        self._needs_brokers("read history")

    def histories(self, entities: Sequence[Entity]) -> dict[str, list[HistoryRecord]]:
        self._needs_brokers("read history")

    def record_history(self, change: Change, version: int, *, reason: str = "") -> None:
        self._needs_brokers("record history")

    def carried_applied_log(self, broker_id: int) -> list[applied.Record] | None:
        """None: the carried applied logs are a topic, which only brokers serve (history, which
        ``--at`` reads first, is refused with why)."""
        return None

    # -- BrokerReports: each controller about itself -------------------------------------------

    def broker_reports(self) -> BrokerReports:
        """A controller's own config, asked of that controller (``describe --effective --broker
        <controller id>``); what needs the brokers is refused there."""
        from configctl.kraft.controllerreports import ControllerReports

        return ControllerReports(self.client, self.quorum, self._needs_brokers)

    # -- what KRaft has no place for (the rest: NoFleetState) -----------------------------------

    def retire_broker(self, broker_id: int) -> bool:
        self._needs_brokers("retire a broker")

    def watch_broker_state(self, broker_id: int, on_state: Callable[[bytes | None], bool]) -> None:
        self._needs_brokers("watch a broker")

    def watch_fleet(self, tell: Callable[..., None], on_lost: Callable[[], None]) -> FleetWatch:
        self._needs_brokers("watch the fleet")

    @property
    def rollouts(self) -> Rollouts:
        self._needs_brokers("keep rollout records")


__all__ = ["CAPABILITIES", "ControllerStore"]
