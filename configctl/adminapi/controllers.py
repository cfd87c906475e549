"""A KRaft cluster's controller quorum asked directly (``--bootstrap-controller``, KIP-919).

Kafka 4's Admin client may talk to the controllers instead of the brokers; kafka-configs.sh
takes ``--bootstrap-controller`` for it. kafka-python's ``KafkaAdminClient`` cannot: it
bootstraps with a Metadata request, which a controller does not serve, and so waits out its
bootstrap timeout. So the controllers are asked here on kafka-python's connection manager and
protocol classes, without the Metadata bootstrap, one request to one controller at a time.

What a Kafka 4.4.0 controller answers (its ApiVersions, and each request sent to a real one,
``tests/kraft/test_bootstrap_controller.py``): ApiVersions with the finalized features,
DescribeCluster for the controller endpoints only (asking for brokers is
UNSUPPORTED_ENDPOINT_TYPE), DescribeQuorum, DescribeConfigs (the broker default and the
controller's own id, topics, groups, client-metrics), IncrementalAlterConfigs, AlterClientQuotas
and AlterUserScramCredentials. Not Metadata, DescribeClientQuotas, ListConfigResources,
Produce or Fetch of any topic but the metadata log's; DescribeUserScramCredentials is listed
in its ApiVersions but refused ("Unsupported ApiKey"), and unanswered for every user.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import DescribeClusterRequest

from configctl.adminapi.connection import client_options
from configctl.adminapi.errors import CONNECT, CONTROLLER, refusal, translate_errors
from configctl.adminapi.features import FEATURES_ACTION, ClusterMode, features_request, mode_of
from configctl.errors import WrongCluster

_CONTROLLER_ENDPOINT = 2  # DescribeCluster's endpoint type: 1 brokers, 2 controllers (KIP-919)
_UNSUPPORTED_ENDPOINT_TYPE = 114
OPTION = "--bootstrap-controller"


@dataclass(frozen=True)
class Quorum:
    """What the controllers say about themselves (DescribeCluster, controller endpoints)."""

    cluster_id: str | None
    active: int | None
    """The active controller's node id (None: none is named)."""
    controllers: dict[int, str]
    """Each controller's id and ``host:port``."""


class ControllerClient:
    """The controllers at ``bootstrap`` (``host:port[,host:port]``), closed by :meth:`close`."""

    def __init__(self, bootstrap: str, command_config: Path | None = None, timeout: float = 30.0) -> None:
        from kafka.net.compat import KafkaNetClient

        self.bootstrap = bootstrap
        self.command_config = command_config
        self.timeout = timeout
        options = client_options(bootstrap, command_config, timeout, OPTION)
        options.pop("bootstrap_timeout_ms", None)  # no Metadata bootstrap here
        # The frame an answer may fill, as the Admin client allows it (100 MB), not the bare
        # connection manager's 1 MB: a controller describing 1,000 topics answers 2.4 MB.
        options["receive_message_max_bytes"] = KafkaAdminClient.DEFAULT_CONFIG["receive_message_max_bytes"]
        with translate_errors(CONNECT, bootstrap, node=CONTROLLER):
            self._client = KafkaNetClient(**options)
        self._manager = self._client._manager
        self._net = self._manager._net
        self._net.start()

    def close(self) -> None:
        self._manager.close()
        self._net.stop()

    def __enter__(self) -> ControllerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, request: Any, action: str) -> Any:
        """``request``'s answer from the first listed controller that answers (kafka-python
        knows them as ``bootstrap-0``, ``bootstrap-1`` ...); one that cannot be reached is
        passed over, and when none answers the last failure is the one-line error."""
        nodes = [node.node_id for node in self._manager.cluster.bootstrap_brokers()]
        for index, node in enumerate(nodes):
            try:
                return self._ask(node, request, action, self.bootstrap)
            except Exception:
                if index == len(nodes) - 1:
                    raise
        raise AssertionError("bootstrap_servers checked: at least one address")  # pragma: no cover

    def send_to(self, address: str, request: Any, action: str) -> Any:
        """``request``'s answer from the controller at ``address`` (``host:port``) itself: on its
        connection when it is one of :attr:`bootstrap`'s, else on a connection of its own."""
        for node in self._manager.cluster.bootstrap_brokers():
            if f"{node.host}:{node.port}" == address:
                return self._ask(node.node_id, request, action, address)
        with ControllerClient(address, self.command_config, self.timeout) as other:
            return other.send(request, action)

    def _ask(self, node: Any, request: Any, action: str, where: str) -> Any:
        manager = self._manager
        timeout_ms = int(self.timeout * 1000)

        async def ask() -> Any:
            return await manager.send(request, node_id=node, request_timeout_ms=timeout_ms)

        with translate_errors(action, where, node=CONTROLLER):
            return manager.run(ask)

    def mode(self) -> ClusterMode:
        """What the controllers run (ApiVersions v3: a controller reports the finalized features too)."""
        return mode_of(self.send(features_request(), FEATURES_ACTION))

    def quorum(self) -> Quorum:
        """The cluster's id, active controller and controllers, as they describe themselves.

        An address that is a broker's, not a controller's, is a one-line
        :class:`~configctl.errors.WrongCluster` saying to give it to ``--bootstrap-server``.
        """
        what = "describe the controller quorum"
        request = DescribeClusterRequest(
            include_cluster_authorized_operations=False, endpoint_type=_CONTROLLER_ENDPOINT, min_version=1
        )
        response = self.send(request, what)
        if response.error_code == _UNSUPPORTED_ENDPOINT_TYPE:
            raise WrongCluster(
                f"{OPTION} {self.bootstrap}: that is a Kafka broker's listener, not a controller's "
                f"({' '.join((response.error_message or '').split())}): give it to --bootstrap-server; "
                "nothing was written"
            )
        problem = refusal(response.error_code, response.error_message, what)
        if problem is not None:
            raise problem
        active = response.controller_id if response.controller_id >= 0 else None
        controllers = {int(node.broker_id): f"{node.host}:{node.port}" for node in response.brokers}
        return Quorum(response.cluster_id or None, active, dict(sorted(controllers.items())))


__all__ = ["OPTION", "ControllerClient", "Quorum"]
