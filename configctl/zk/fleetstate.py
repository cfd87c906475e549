"""What each broker's listener publishes, read back: its live state and its persistent record.

``/configctl/brokers/<id>`` (ephemeral: there while the listener's session lives) holds what the
broker applied and refused; ``/configctl/fleet/<id>`` (persistent) its last record, so a broker
whose listener died is still known. The bytes are :mod:`configctl.znodes`'s and the listener
writes them (:mod:`configctl.listener.state`); this is the reading side, for the store
(:meth:`configctl.zk.configstore.ConfigStore.broker_states` and its neighbours). A node that
cannot be read or decoded is left out: a reader reports the fleet it can see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from configctl.errors import InvalidInput
from configctl.zk.session import ZkSession
from configctl.znodes import BrokerStateZNode, FleetRecordZNode


class FleetState:
    """The listeners' published states and records, over one :class:`ZkSession`."""

    def __init__(self, session: ZkSession) -> None:
        self.session = session

    def broker_state(self, broker_id: int | str) -> dict[str, Any] | None:
        """The state broker ``broker_id``'s listener published, None when no listener runs (or it is unreadable)."""
        found = self.session.get(BrokerStateZNode.path(broker_id))
        if found is None:
            return None
        try:
            return BrokerStateZNode.decode(found[0])
        except InvalidInput:
            return None

    def broker_states(self) -> dict[int, dict[str, Any]]:
        """The published state of every running listener, by broker id."""
        return self._documents(BrokerStateZNode.ROOT, BrokerStateZNode.path, BrokerStateZNode.decode)

    def fleet_records(self) -> dict[int, dict[str, Any]]:
        """Every broker's persistent record (written by its listener, kept when it dies), by broker id."""
        return self._documents(FleetRecordZNode.ROOT, FleetRecordZNode.path, FleetRecordZNode.decode)

    def watch_broker_state(self, broker_id: int, on_state: Callable[[bytes | None], bool]) -> None:
        """Call ``on_state`` with the state node's bytes (None: no listener) now and at every change,
        until it returns False (a ZooKeeper data watch the caller does not wait for)."""

        def on_data(data: bytes | None, stat: Any, event: Any = None) -> bool:
            return on_state(data)

        self.session.watch_data(BrokerStateZNode.path(broker_id), on_data)

    def _documents(
        self, root: str, path: Callable[[str], str], decode: Callable[[bytes], dict[str, Any]]
    ) -> dict[int, dict[str, Any]]:
        names = [n for n in self.session.children(root) if n.isdigit()]
        found = self.session.get_many([path(n) for n in names], node_errors=True)
        result = {}
        for name, node in zip(names, found, strict=True):
            if node is None or isinstance(node, Exception):
                continue
            try:
                result[int(name)] = decode(node[0])
            except InvalidInput:
                continue
        return result
