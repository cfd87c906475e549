"""What a Kafka cluster has registered in ZooKeeper: its id, its running brokers and its topics.

Kafka's own ZooKeeper admin path consults these before a config write (see
:mod:`configctl.guards`). A ZooKeeper that holds no Kafka registration at all (a fleet run by
configctl's listeners only, a test) has neither path, and nothing is refused for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from configctl.errors import InvalidInput
from configctl.zk.session import ZkSession
from configctl.znodes import ClusterIdZNode

BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"


def cluster_id(session: ZkSession) -> str | None:
    """The Kafka cluster's id, None when no Kafka broker ever started on this ZooKeeper (or the node
    is not a cluster id: nothing can be said of it then)."""
    node = session.get_many([ClusterIdZNode.PATH])[0]
    if node is None:
        return None
    try:
        return ClusterIdZNode.decode(node[0])
    except InvalidInput:
        return None


def running_brokers(session: ZkSession) -> set[int] | None:
    """The ids of the brokers registered now (ephemeral nodes), None when no Kafka ever registered."""
    if session.exists(BROKER_IDS_PATH) is None:
        return None
    return {int(name) for name in session.children(BROKER_IDS_PATH) if name.isdigit()}


def existing_topics(session: ZkSession, names: Iterable[str]) -> set[str] | None:
    """Which of ``names`` are topics Kafka created, None when the cluster registers no topics."""
    wanted = list(dict.fromkeys(names))
    if not wanted or session.exists(TOPICS_PATH) is None:
        return None
    found = session.get_many([f"{TOPICS_PATH}/{name}" for name in wanted])
    return {name for name, node in zip(wanted, found, strict=True) if node is not None}
