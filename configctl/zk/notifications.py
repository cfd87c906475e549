"""Kafka's change notifications in ``/config/changes``: which are there, their numbers, the entity each names, and when each was made.

Every write's multi creates one (:mod:`configctl.zk.multi`); brokers report the numbers they
applied, so ``--wait``, ``status`` and ``change:N`` are read from here. A notification that is
gone (Kafka purges them), unreadable or malformed is left out, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence

from configctl.errors import InvalidInput
from configctl.store import Notification
from configctl.zk.session import ZkSession
from configctl.znodes import CHANGES_PATH, NOTIFICATION_PREFIX, change_number, decode_notification


def listing(session: ZkSession) -> list[Notification]:
    """Change notifications currently in /config/changes, oldest first."""
    result = []
    for name in session.children(CHANGES_PATH):
        if name.startswith(NOTIFICATION_PREFIX):
            try:
                result.append(Notification(name, change_number(name)))
            except InvalidInput:
                continue
    result.sort(key=lambda n: n.number)
    return result


def notified_paths(session: ZkSession, notifications: Sequence[Notification]) -> list[str]:
    """The entity path each of ``notifications`` names (gone, unreadable or malformed ones left out)."""
    found = session.get_many([f"{CHANGES_PATH}/{n.name}" for n in notifications], node_errors=True)
    paths = []
    for item in found:
        if item is None or isinstance(item, Exception):
            continue
        try:
            paths.append(decode_notification(item[0]).path)
        except InvalidInput:
            continue
    return paths


def times(session: ZkSession) -> list[tuple[int, str, int]]:
    """Each notification still in ``/config/changes``: its number, entity path and ctime."""
    present = listing(session)
    nodes = session.get_many([f"{CHANGES_PATH}/{n.name}" for n in present], node_errors=True)
    result = []
    for notification, node in zip(present, nodes, strict=True):
        if node is None or isinstance(node, Exception):
            continue
        try:
            path = decode_notification(node[0]).path
        except InvalidInput:
            continue
        result.append((notification.number, path, int(node[1].ctime)))
    return result
