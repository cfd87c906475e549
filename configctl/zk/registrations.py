"""What a Kafka cluster has registered in ZooKeeper: its running brokers and its topics.

Kafka's own ZooKeeper admin path consults these before a config write (see
:mod:`configctl.guards`). A ZooKeeper that holds no Kafka registration at all (a fleet run by
configctl's listeners only, a test) has neither path, and nothing is refused for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from configctl.zk.session import ZkSession

BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"


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
