"""``configctl status -o json``: the fleet, or one broker with the newest change number beside it.

The console's ``/api/status`` is this same document (the whole fleet). On KRaft, where no
listener publishes a fleet state, :class:`ReportedStatus` is the document: what the brokers and
controllers say when asked (docs/reference/json-output.md, "status on KRaft").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from configctl import fleet
from configctl.digests import digest
from configctl.entities import Entity, EntityType
from configctl.errors import ConfigctlError
from configctl.migration import MetadataOwner
from configctl.reported import not_applied
from configctl.store import ConfigStore
from configctl.store.roles import BrokerReports, broker_reports


@dataclass(frozen=True)
class StatusDocument:
    """The fleet's status as read once; ``broker_id`` narrows the document to that broker."""

    status: fleet.FleetStatus
    broker_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        if self.broker_id is None:
            return self.status.to_json()
        found = self.status.broker(self.broker_id)
        document = {"latest_change_number": self.status.latest_change_number}
        document.update(found.to_json() if found else {})
        return document


# -- status on KRaft: what the brokers and controllers say, asked (docs/reference/json-output.md) ----


@dataclass(frozen=True)
class ReportedStatus:
    """``configctl status`` where no listener publishes a fleet state (KRaft): the cluster as its
    brokers and controllers describe it, and what each broker answers when asked itself.

    Each broker is asked for its own dynamic config and the cluster's ``<default>`` layer; its
    answer is counted and digested (``sha256:`` of the masked keys, so brokers can be compared and
    no secret is shown). A broker that does not answer says so (``answers`` false, ``reason``).
    """

    cluster: dict[str, Any]
    """:meth:`~configctl.store.roles.BrokerReports.cluster_report`, as the brokers answered."""
    answers: dict[int, dict[str, Any]]
    """By broker id: what asking that broker gave (``answers``, ``reason``, counts and digest)."""
    metadata: MetadataOwner
    broker_id: int | None = None

    def broker(self, broker_id: int) -> dict[str, Any] | None:
        return next((b for b in self.brokers() if b["broker_id"] == broker_id), None)

    def brokers(self) -> list[dict[str, Any]]:
        listed = [{**b, **self.answers.get(b["broker_id"], {})} for b in self.cluster.get("brokers", [])]
        return [b for b in listed if self.broker_id is None or b["broker_id"] == self.broker_id]

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": "kraft",
            "cluster_id": self.cluster.get("cluster_id"),
            "metadata_version": self.cluster.get("metadata_version"),
            "kafka_release": self.cluster.get("kafka_release"),
            "metadata": self.metadata.to_json(),
            "brokers": self.brokers(),
            "quorum": self.cluster.get("quorum"),
            "recorders": self.cluster.get("recorders", []),
        }


def status_of(store: ConfigStore, broker_id: int | None = None) -> StatusDocument | ReportedStatus:
    """``configctl status -o json`` of ``store``: what its listeners published where it has a fleet
    state, else (KRaft: ``broker_reports`` and no ``fleet_state``) what the brokers and controllers
    say when asked. The one place that chooses, by the store's capabilities (the console's
    ``/api/status`` is this document)."""
    if store.capabilities.broker_reports and not store.capabilities.fleet_state:
        return reported_status(store, broker_id)
    return StatusDocument(fleet.status(store), broker_id)


def reported_status(store: ConfigStore, broker_id: int | None = None) -> ReportedStatus:
    """Ask the cluster and each registered broker (fenced ones too: they may still answer)."""
    reports = broker_reports(store, what="the fleet's status")
    cluster = reports.cluster_report()
    answers = {
        b["broker_id"]: _asked(reports, b["broker_id"])
        for b in cluster.get("brokers", [])
        if broker_id is None or b["broker_id"] == broker_id
    }
    return ReportedStatus(cluster, answers, store.metadata_owner(), broker_id)


def _asked(reports: BrokerReports, broker_id: int) -> dict[str, Any]:
    try:
        own = reports.reported_config(broker_id, Entity.named(EntityType.BROKERS, str(broker_id)))
        default = reports.reported_config(broker_id, Entity.named(EntityType.BROKERS, ""))
        refused = not_applied(
            reports.reported_keys(broker_id, Entity.named(EntityType.BROKERS, str(broker_id)))
        )
    except ConfigctlError as exc:
        return {
            "answers": False,
            "reason": str(exc),
            "dynamic_config_keys": None,
            "default_config_keys": None,
            "config_digest": None,
            "not_applied": None,
        }
    both = json.dumps({"broker": own, "default": default}, sort_keys=True)
    return {
        "answers": True,
        "reason": None,
        "dynamic_config_keys": len(own),
        "default_config_keys": len(default),
        "config_digest": digest(both),
        "not_applied": [n.to_json() for n in refused],
    }
