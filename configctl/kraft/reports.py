"""What each broker of a KRaft cluster reports, asked of that broker itself (the BrokerReports role).

A KRaft cluster runs no configctl listener, so nothing publishes what a broker applied: the only
truth is the broker's own answer. Every question here is sent to the one broker it is about
(DescribeConfigs and DescribeClientQuotas name their node), so "broker 2 reports it" means broker
2 answered, never that another broker answered for it. A broker that does not answer raises
:class:`~configctl.errors.KafkaUnavailable` (translated once, by the Admin API edge).

One gap is said, not hidden: KafkaAdmin asks SCRAM credentials of any broker (it has no per-node
form yet), so a SCRAM credential is reported as the cluster's answer, not broker N's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from configctl.adminapi.client import KafkaAdmin, same_address
from configctl.adminapi.connection import client_options
from configctl.adminapi.errors import translate_errors
from configctl.adminapi.features import ClusterMode
from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.kraft.reads import OWN_SOURCE, own_layer, scram_config
from configctl.reported import ReportedConfig


class KRaftReports:
    """:class:`~configctl.store.roles.BrokerReports` over a KRaft cluster's Admin API."""

    def __init__(
        self,
        admin: KafkaAdmin,
        bootstrap: str,
        command_config: Path | None,
        timeout: float,
        mode: Callable[[], ClusterMode | None],
        recorders: Callable[[], dict[int, dict[str, Any]]] | None = None,
    ) -> None:
        self.admin = admin
        self.bootstrap = bootstrap
        self.command_config = command_config
        self.timeout = timeout
        self._mode = mode
        self._recorders = recorders

    def reported_config(self, broker_id: int, entity: Entity) -> dict[str, str]:
        """``entity``'s own layer as broker ``broker_id`` reports it (the store's terms)."""
        if entity.type is EntityType.TOPICS:
            answer = self.admin.describe_topics([entity.name], node_id=broker_id)
            return own_layer(answer.get(entity.name, {}), OWN_SOURCE["topic"])
        if entity.type.in_broker_memory:  # a broker's loggers: that broker alone reports them
            if entity.name != str(broker_id):
                raise InvalidInput(
                    f"broker {broker_id} is not asked for broker {entity.name}'s loggers: only that broker reports them"
                )
            return self.admin.logger_levels(entity)
        if entity.type.kraft_only:  # groups, client-metrics: a config resource of their own
            resource = self.admin.describe_resource(entity, node_id=broker_id)
            return own_layer(resource, OWN_SOURCE[entity.type.value])
        if entity.type is EntityType.BROKERS:
            if entity.is_default:
                return own_layer(self.admin.describe_broker(broker_id, default=True), OWN_SOURCE["default"])
            if entity.name != str(broker_id):
                raise InvalidInput(
                    f"broker {broker_id} is not asked for broker {entity.name}'s own config: only that broker reports it"
                )
            return own_layer(self.admin.describe_broker(broker_id), OWN_SOURCE["broker"])
        config = _quota_of(self.admin.all_client_quotas(node_id=broker_id), entity)
        if entity.type is EntityType.USERS and entity.client is None and not entity.is_default:
            config.update(scram_config(self.admin.scram_credentials(entity.name)))
        return dict(sorted(config.items()))

    def reported_keys(self, broker_id: int, entity: Entity) -> dict[str, ReportedConfig]:
        """Every key of a broker or topic as broker ``broker_id`` reports it (value, source, synonyms)."""
        if entity.type is EntityType.TOPICS:
            return self.admin.describe_topics([entity.name], node_id=broker_id).get(entity.name, {})
        if entity.type is EntityType.BROKERS:
            return self.admin.describe_broker(broker_id, default=entity.is_default)
        raise InvalidInput(f"{entity.path}: a broker reports every key only for brokers and topics")

    def cluster_report(self) -> dict[str, Any]:
        """Registered brokers (DescribeCluster, fenced ones included), the controller quorum
        (DescribeQuorum of ``__cluster_metadata``), the metadata version and release."""
        from kafka.admin import KafkaAdminClient

        options = client_options(self.bootstrap, self.command_config, self.timeout)
        with translate_errors("connect", self.bootstrap):
            client = KafkaAdminClient(**options)
        try:
            with translate_errors("describe the cluster", self.bootstrap):
                cluster = client.describe_cluster()
            with translate_errors("describe the controller quorum", self.bootstrap):
                quorum = client.describe_metadata_quorum()
        finally:
            client.close()
        mode = self._mode()
        report = quorum_report(quorum)
        return {
            "recorders": self._recorder_rows(report.get("high_watermark")),
            "cluster_id": cluster.get("cluster_id") or None,
            "metadata_version": None if mode is None else mode.metadata_version,
            "kafka_release": None if mode is None else (mode.release or mode.line),
            "brokers": sorted(
                (_broker(b) for b in cluster.get("brokers") or ()), key=lambda b: b["broker_id"]
            ),
            "quorum": report,
        }

    def _recorder_rows(self, high_watermark: int | None) -> list[dict[str, Any]]:
        """The flight recorders' last progress (:mod:`configctl.kraft.recordertopic`), each with how
        far it is behind the quorum's high watermark now (None: unknown)."""
        if self._recorders is None:
            return []
        rows = []
        for broker_id, progress in sorted(self._recorders().items()):
            recorded_to = progress.get("recorded_to")
            behind = (
                max(0, high_watermark - recorded_to)
                if isinstance(recorded_to, int) and isinstance(high_watermark, int)
                else None
            )
            rows.append(
                {
                    "broker_id": broker_id,
                    "recorded_to": recorded_to,
                    "behind": behind,
                    "broker_offset": progress.get("broker_offset"),
                    "time_ms": progress.get("time_ms"),
                    "problems": list(progress.get("problems") or ()),
                    "observed": progress.get("observed"),
                }
            )
        return rows


def _quota_of(found: dict[Entity, dict[str, str]], entity: Entity) -> dict[str, str]:
    """``entity``'s keys in a broker's list of every quota entity ({} when it lists none)."""
    if entity in found:
        return dict(found[entity])
    if entity.type is EntityType.IPS and not entity.is_default:
        for listed, config in found.items():
            if (
                listed.type is EntityType.IPS
                and not listed.is_default
                and same_address(listed.name, entity.name)
            ):
                return dict(config)
    return {}


def _broker(described: dict[str, Any]) -> dict[str, Any]:
    fenced = described.get("is_fenced")
    return {
        "broker_id": int(described["broker_id"]),
        "host": described.get("host"),
        "port": described.get("port"),
        "rack": described.get("rack"),
        "fenced": fenced if isinstance(fenced, bool) else None,
    }


def _replica(state: dict[str, Any], high_watermark: int | None) -> dict[str, Any]:
    end = state.get("log_end_offset")
    end = end if isinstance(end, int) and end >= 0 else None
    return {
        "node_id": state.get("replica_id"),
        "log_end_offset": end,
        "lag": None if end is None or high_watermark is None else max(0, high_watermark - end),
        "last_fetch_ms": _ms(state.get("last_fetch_timestamp")),
        "last_caught_up_ms": _ms(state.get("last_caught_up_timestamp")),
    }


def quorum_report(described: dict[str, Any]) -> dict[str, Any]:
    partitions = [p for topic in described.get("topics") or () for p in topic.get("partitions") or ()]
    if not partitions:
        return {
            "leader_id": None,
            "leader_epoch": None,
            "high_watermark": None,
            "voters": [],
            "observers": [],
        }
    part = partitions[0]
    high = part.get("high_watermark")
    high = high if isinstance(high, int) and high >= 0 else None
    leader = part.get("leader_id")
    return {
        "leader_id": leader if isinstance(leader, int) and leader >= 0 else None,
        "leader_epoch": part.get("leader_epoch"),
        "high_watermark": high,
        "voters": [_replica(v, high) for v in part.get("current_voters") or ()],
        "observers": [_replica(o, high) for o in part.get("observers") or ()],
    }


def _ms(value: Any) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


__all__ = ["KRaftReports", "quorum_report"]
