"""A persistent node this process keeps current: written whole, created (with its parents) at need.

A listener's fleet record (``/configctl/fleet/<id>``) is one: it outlives the listener, so
``configctl status`` still lists a broker whose listener is down. Unlike an ephemeral node
(:mod:`configctl.zk.ephemeral`) nobody else's session can own it: the last writer wins, without
a version check, because each writer only ever writes its own node.
"""

from __future__ import annotations

from kazoo.exceptions import NodeExistsError, NoNodeError

from configctl.zk.errors import translate_errors
from configctl.zk.session import ZkSession


class PersistentNode:
    """``path`` as a persistent node holding the latest data written."""

    def __init__(self, session: ZkSession, path: str) -> None:
        self.session = session
        self.path = path

    def write(self, data: bytes) -> None:
        """Set the node to ``data``; create it (with its parents, each with its ACL) if missing."""
        client, timeout = self.session.client, self.session.timeout
        with translate_errors(f"write {self.path}"):
            try:
                client.set_async(self.path, data).get(timeout=timeout)
                return
            except NoNodeError:
                pass
            self.session.ensure_path(self.path.rsplit("/", 1)[0])
            try:
                client.create_async(self.path, data, acl=self.session.acls.acl_for(self.path)).get(
                    timeout=timeout
                )
            except NodeExistsError:  # created meanwhile
                client.set_async(self.path, data).get(timeout=timeout)


__all__ = ["PersistentNode"]
