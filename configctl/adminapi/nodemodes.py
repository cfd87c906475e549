"""What each node of a cluster runs, asked of the node itself: the witnesses of a migration's phase.

Every broker the cluster's metadata lists is sent ApiVersions on its own connection (v3: its
finalized features and ``ZkMigrationReady``), and so is every controller. The controllers are the
ones ``--bootstrap-controller`` names or, when it is not given, the ones a broker runs with: its
``controller.quorum.voters`` (``id@host:port,...``, the static quorum a migration needs) or
``controller.quorum.bootstrap.servers``, as DescribeConfigs reports them. A ZooKeeper-mode broker
outside a migration has neither, and there is then no controller to ask.

A node that cannot be asked is an answer too (its one-line problem): the phase is decided from the
others, and the node is shown as unreachable.
"""

from __future__ import annotations

from pathlib import Path

from configctl.adminapi.client import KafkaAdmin
from configctl.adminapi.controllers import ControllerClient
from configctl.adminapi.features import FEATURES_ACTION, features_request, mode_of
from configctl.errors import ConfigctlError
from configctl.migrationphase import NodeAnswer

QUORUM_KEYS = ("controller.quorum.voters", "controller.quorum.bootstrap.servers")


def broker_answers(admin: KafkaAdmin) -> dict[int, NodeAnswer]:
    """Each listed broker's own ApiVersions answer, by id."""
    found: dict[int, NodeAnswer] = {}
    for broker_id in admin.broker_ids():
        try:
            mode = mode_of(admin._send(features_request(), broker_id, FEATURES_ACTION))
        except ConfigctlError as exc:
            found[broker_id] = NodeAnswer(problem=exc.message)
        else:
            found[broker_id] = NodeAnswer(mode.kraft, mode.migration_ready)
    return found


def quorum_addresses(text: str) -> list[str]:
    """``host:port`` of each controller in a ``controller.quorum.voters`` (``id@host:port``) or
    ``controller.quorum.bootstrap.servers`` (``host:port``) value."""
    addresses = []
    for item in text.split(","):
        item = item.strip()
        if item:
            addresses.append(item.rpartition("@")[2])
    return addresses


def broker_quorum(admin: KafkaAdmin, broker_ids: list[int]) -> list[str]:
    """The controllers the first answering broker runs with ([] when none names any)."""
    for broker_id in broker_ids:
        try:
            reported = admin.describe_broker(broker_id, QUORUM_KEYS)
        except ConfigctlError:
            continue
        for key in QUORUM_KEYS:
            entry = reported.get(key)
            if entry is not None and entry.value:
                return quorum_addresses(entry.value)
        return []
    return []


def controller_answers(
    addresses: list[str], command_config: Path | None, timeout: float
) -> dict[str, NodeAnswer]:
    """Each controller's own ApiVersions answer, by ``host:port``."""
    found: dict[str, NodeAnswer] = {}
    for address in addresses:
        try:
            with ControllerClient(address, command_config, timeout) as client:
                mode = client.mode()
        except ConfigctlError as exc:
            found[address] = NodeAnswer(problem=exc.message)
        else:
            found[address] = NodeAnswer(mode.kraft, mode.migration_ready)
    return found


__all__ = ["broker_answers", "broker_quorum", "controller_answers", "quorum_addresses"]
