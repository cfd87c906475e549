"""An ephemeral node owned by this session: it exists exactly while the session does.

A listener's state node is one: "is broker 3's listener up, and how far has it got" is then one
read. A predecessor killed without closing its session leaves its node behind until that
session expires; the new owner replaces it (version-checked, so it never deletes a node a third
session has just created) instead of waiting.
"""

from __future__ import annotations

import contextlib
import logging

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.retry import ForceRetryError, RetryFailedError

from configctl.errors import ZooKeeperUnavailable
from configctl.zk import retry
from configctl.zk.errors import translate_errors
from configctl.zk.session import ZkSession

log = logging.getLogger(__name__)


class OwnedEphemeral:
    """``path`` as an ephemeral node of ``session``'s current session, holding the latest data."""

    def __init__(self, session: ZkSession, path: str) -> None:
        self.session = session
        self.path = path
        self._owned_session: int | None = None

    def publish(self, data: bytes) -> None:
        """Make the node hold ``data`` (created for every new session; set while ours)."""
        client = self.session.client
        timeout = self.session.timeout
        current = self.session.session_id
        with translate_errors(f"write {self.path}"):
            if current is not None and current == self._owned_session:
                try:
                    client.set_async(self.path, data).get(timeout=timeout)
                    return
                except NoNodeError:
                    pass
            self.session.ensure_path(self.path.rsplit("/", 1)[0])
            try:
                retry.conflict_retry(max_tries=5)(self._claim, data)
            except RetryFailedError:
                raise ZooKeeperUnavailable(
                    f"could not create {self.path}: another session keeps re-creating it"
                ) from None
        self._owned_session = current

    def _claim(self, data: bytes) -> None:
        client = self.session.client
        timeout = self.session.timeout
        try:
            client.create_async(
                self.path, data, acl=self.session.acls.acl_for(self.path), ephemeral=True
            ).get(timeout=timeout)
            return
        except NodeExistsError:
            pass
        stat = client.exists_async(self.path).get(timeout=timeout)
        if stat is None:
            raise ForceRetryError()
        if stat.ephemeralOwner == self.session.session_id:
            client.set_async(self.path, data).get(timeout=timeout)
            return
        log.warning("replacing %s, held by another ZooKeeper session (0x%x)", self.path, stat.ephemeralOwner)
        with contextlib.suppress(NoNodeError, BadVersionError):
            client.delete_async(self.path, version=stat.version).get(timeout=timeout)
        raise ForceRetryError()

    def remove(self) -> bool:
        """Delete the node now if this session owns it (a clean stop); True when deleted.

        Without a connection there is nothing to do: the session's end removes it too.
        """
        owned, self._owned_session = self._owned_session, None
        client = self.session.client
        if not client.connected or owned is None:
            return False
        timeout = self.session.timeout
        with translate_errors(f"delete {self.path}"):
            stat = client.exists_async(self.path).get(timeout=timeout)
            if stat is None or stat.ephemeralOwner != self.session.session_id:
                return False
            try:
                client.delete_async(self.path, version=stat.version).get(timeout=timeout)
            except (NoNodeError, BadVersionError):
                return False
        return True
