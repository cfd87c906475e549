"""What each broker's listener publishes, read back: its live state and its persistent record.

``/configctl/brokers/<id>`` (ephemeral: there while the listener's session lives) holds what the
broker applied and refused; ``/configctl/fleet/<id>`` (persistent) its last record, so a broker
whose listener died is still known. The bytes are :mod:`configctl.znodes`'s and the listener
writes them (:mod:`configctl.listener.state`); this is the reading side, for the store
(:meth:`configctl.zk.configstore.ZooKeeperStore.broker_states` and its neighbours).

Only an ephemeral state node is a live listener: a persistent node someone created under
``/configctl/brokers`` is nobody's session, so it is ignored rather than trusted with its claimed
change number. A live state node that cannot be decoded or read is still a live broker, shown with one
``unreadable`` problem and no applied change (never "absent", never "applied"). A record that
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
        """The state broker ``broker_id``'s listener published, None when no listener runs."""
        found = self.session.get(BrokerStateZNode.path(broker_id))
        return None if found is None else live_state(found[0], found[1])

    def broker_states(self) -> dict[int, dict[str, Any]]:
        """The published state of every running listener, by broker id."""
        names = [n for n in self.session.children(BrokerStateZNode.ROOT) if n.isdigit()]
        found = self.session.get_many([BrokerStateZNode.path(n) for n in names], node_errors=True)
        result = {}
        for name, node in zip(names, found, strict=True):
            if node is None:
                continue
            if isinstance(node, Exception):  # there, but not ours to read: live, unknown
                result[int(name)] = BrokerStateZNode.decode_live(b"")
                continue
            state = live_state(node[0], node[1])
            if state is not None:
                result[int(name)] = state
        return result

    def retire(self, broker_id: int) -> bool:
        """Delete broker ``broker_id``'s persistent record; False when it had none."""
        return self.session.delete_nodes([FleetRecordZNode.path(broker_id)]) > 0

    def fleet_records(self) -> dict[int, dict[str, Any]]:
        """Every broker's persistent record (written by its listener, kept when it dies), by broker id."""
        return self._documents(FleetRecordZNode.ROOT, FleetRecordZNode.path, FleetRecordZNode.decode)

    def watch_broker_state(self, broker_id: int, on_state: Callable[[bytes | None], bool]) -> None:
        """Call ``on_state`` with the state node's bytes (None: no listener) now and at every change,
        until it returns False (a ZooKeeper data watch the caller does not wait for)."""

        def on_data(data: bytes | None, stat: Any, event: Any = None) -> bool:
            return on_state(data if stat is None or getattr(stat, "ephemeralOwner", 0) else None)

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


def live_state(data: bytes, stat: Any) -> dict[str, Any] | None:
    """A state node's document if a live listener owns it (ephemeral), None otherwise."""
    if not getattr(stat, "ephemeralOwner", 0):
        return None  # persistent: not a listener's session, whatever it claims
    return BrokerStateZNode.decode_live(data)
