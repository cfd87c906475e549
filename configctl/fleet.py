"""What the fleet really runs: the brokers' published state, read by anyone (CLI, tools, tests).

A running listener keeps ``/configctl/brokers/<id>`` (ephemeral: it exists while the listener's
session does). This module is the client side: other tools call it instead of decoding nodes.
"""

from __future__ import annotations

from typing import Any

from configctl.errors import InvalidInput
from configctl.zk.session import ZkSession
from configctl.znodes import BrokerStateZNode


def broker_state(session: ZkSession, broker_id: int | str) -> dict[str, Any] | None:
    """The state broker ``broker_id``'s listener published, None when no listener runs (or it is unreadable)."""
    found = session.get(BrokerStateZNode.path(broker_id))
    if found is None:
        return None
    try:
        return BrokerStateZNode.decode(found[0])
    except InvalidInput:
        return None


def broker_states(session: ZkSession) -> dict[int, dict[str, Any]]:
    """The published state of every running listener, by broker id."""
    names = [n for n in session.children(BrokerStateZNode.ROOT) if n.isdigit()]
    found = session.get_many([BrokerStateZNode.path(n) for n in names])
    result = {}
    for name, node in zip(names, found, strict=True):
        if node is None:
            continue
        try:
            result[int(name)] = BrokerStateZNode.decode(node[0])
        except InvalidInput:
            continue
    return result
