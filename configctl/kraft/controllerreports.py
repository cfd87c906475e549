"""What a KRaft controller reports about itself, asked of that controller (``--bootstrap-controller``).

The one read Kafka's tool makes through the controllers that needs no configctl version: a
controller's own config, every key with its value, source and synonyms, as that controller
answers DescribeConfigs of its own node id (``describe --effective --broker <controller id>``).
A controller answers for itself and for the cluster-wide default only ("Unexpected broker id"
for any other id), so a broker's id is refused here, naming the controllers, before anything
is sent; what needs the brokers (``status``'s list of brokers, ``--wait``) is refused as the
controllers' store refuses it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from configctl.adminapi.client import describe_request, described
from configctl.adminapi.controllers import ControllerClient, Quorum
from configctl.entities import Entity, EntityType
from configctl.kafkacodes import RESOURCE_TYPE_OF
from configctl.reported import ReportedConfig

_BROKER_RESOURCE = RESOURCE_TYPE_OF[EntityType.BROKERS]


class ControllerReports:
    """:class:`~configctl.store.roles.BrokerReports` over a controller quorum: each controller about itself."""

    def __init__(
        self, client: ControllerClient, quorum: Quorum, refuse: Callable[[str, str], NoReturn]
    ) -> None:
        self.client = client
        self.quorum = quorum
        self._refuse = refuse

    def reported_keys(self, broker_id: int, entity: Entity) -> dict[str, ReportedConfig]:
        """Every key of controller ``broker_id``'s own config (or the ``<default>`` layer) as it reports it."""
        if entity.type is not EntityType.BROKERS:
            self._refuse(
                f"ask controller {broker_id} about {entity.path}",
                "a controller describes only node configs here",
            )
        address = self.quorum.controllers.get(broker_id)
        if address is None:
            ids = ", ".join(str(i) for i in self.quorum.controllers) or "none"
            self._refuse(
                f"ask node {broker_id}",
                f"it is not one of the controllers ({ids}), and a controller describes only its own "
                "config and the default",
            )
        name = "" if entity.is_default else str(broker_id)
        what = f"describe the configs of controller {broker_id}"
        response = self.client.send_to(address, describe_request(_BROKER_RESOURCE, [name]), what)
        return described(response, what)[name]

    def reported_config(self, broker_id: int, entity: Entity) -> dict[str, str]:
        self._refuse(f"ask broker {broker_id} what it holds", "--wait asks each broker")

    def cluster_report(self) -> dict[str, Any]:
        self._refuse("report the fleet's status", "a controller's DescribeCluster names the controllers only")


__all__ = ["ControllerReports"]
