"""Watches that only *tell*: a session's state, and the child watch on a notification directory.

In the spirit of kazoo's ``recipe/watchers.py`` (``ChildrenWatch``, ``DataWatch``), with one
difference a listener needs: kazoo's recipes read on kazoo's event thread, and a read there
blocks every other callback of the session. These callbacks only tell the caller that something
happened (they must return at once); the caller's own worker thread does every read, re-arming
the watch as it lists.

* :class:`SessionWatch`: the session's state (connected, with which session id; suspended; lost).
* :class:`NotificationWatch`: a directory of sequential notification nodes (Kafka's
  ``/config/changes``): its children listed with the child watch re-armed, their sequence
  numbers, and the notifications read, the next few ahead of the listing.

kazoo forgets its watches when a connection drops, even when the session survives: after every
reconnection (:class:`SessionWatch` says when) the caller lists again with the watch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from configctl.errors import ZooKeeperUnavailable
from configctl.zk import retry
from configctl.zk.errors import translate_errors
from configctl.zk.session import PendingRead, ZkSession

MAX_SEQUENCE = 2**31 - 1
"""The largest number ZooKeeper gives a sequential node (a signed 32-bit counter)."""

Read = tuple[bytes, int] | Exception | None
"""A notification as read: ``(data, ctime_ms)``; the error that kept it from being read; or None
when it does not exist (never created, or already purged)."""


class SessionWatch:
    """Calls back when the session's connection state changes (on kazoo's thread: never block).

    ``on_connected(session_id)`` after every (re)connection: the same session id as before means
    the session survived (only the watches are gone), a new one that it expired meanwhile.
    """

    def __init__(
        self,
        session: ZkSession,
        *,
        on_connected: Callable[[int | None], None],
        on_suspended: Callable[[], None] = lambda: None,
        on_lost: Callable[[], None] = lambda: None,
    ) -> None:
        self.session = session
        self._on_connected = on_connected
        self._on_suspended = on_suspended
        self._on_lost = on_lost

    def start(self) -> None:
        self.session.client.add_listener(self._on_state)

    def stop(self) -> None:
        self.session.client.remove_listener(self._on_state)

    @property
    def session_id(self) -> int | None:
        """The current session's id (None before the first connection)."""
        return self.session.session_id

    @property
    def connected(self) -> bool:
        return bool(self.session.client.connected)

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._on_lost()
        elif state == KazooState.SUSPENDED:
            self._on_suspended()
        elif state == KazooState.CONNECTED:
            self._on_connected(self.session_id)


class NotificationWatch:
    """The children of ``path`` named ``prefix`` + 10 digits, with a child watch that calls
    ``on_change()`` when they change (on kazoo's thread: never block).

    Names are ``prefix`` + 10 zero-padded digits, so string order is number order: callers find
    new notifications by comparing names, and parse only those. Any other child is told once to
    ``on_bad_name`` and otherwise ignored (still :meth:`present`).
    """

    def __init__(
        self,
        session: ZkSession,
        path: str,
        prefix: str,
        *,
        on_change: Callable[[], None],
        on_bad_name: Callable[[str], None] = lambda name: None,
    ) -> None:
        self.session = session
        self.path = path.rstrip("/")
        self.prefix = prefix
        self._on_change = on_change
        self._on_bad_name = on_bad_name
        self._known: set[str] = set()  # valid notification names of the last listing
        self._bad_names: set[str] = set()
        self._created: int | None = None  # the directory's creation zxid, as last listed
        self.recreated = False
        """The last listing found the directory created anew since the one before (deleted and made
        again): its sequence counter restarted, so numbers seen before mean nothing now."""

    # -- names ----------------------------------------------------------------------------------

    def valid(self, name: str) -> bool:
        digits = name[len(self.prefix) :]
        return name.startswith(self.prefix) and len(digits) == 10 and digits.isascii() and digits.isdigit()

    def number(self, name: str) -> int:
        return int(name[len(self.prefix) :])

    def name_of(self, number: int) -> str:
        return f"{self.prefix}{number:010d}"

    # -- listing --------------------------------------------------------------------------------

    def list(self, *, watch: bool) -> set[str]:
        """The notification names under the path now, the child watch armed when ``watch``.

        A path that does not exist yet is watched for its creation; if it appeared between the
        listing and that watch (which is then only a data watch, which children never fire), it
        is listed again (:func:`configctl.zk.retry.conflict_retry`). Only children not seen in
        the previous listing are checked for the name format, so a directory holding thousands
        of unexpired notifications costs set operations per listing, not a parse of every name.
        """
        try:
            children = retry.conflict_retry()(self._list_once, watch)
        except retry.RetriesExhausted:
            raise ZooKeeperUnavailable(f"{self.path} keeps appearing and vanishing; cannot list it") from None
        if children is None:
            self._known = set()
            return set()
        children, stat = children
        self.recreated = self._created is not None and stat.czxid != self._created
        self._created = stat.czxid
        if self.recreated:
            self._known, self._bad_names = set(), set()
        current = set(children)
        known = current & self._known
        for name in current - self._known - self._bad_names:
            if self.valid(name):
                known.add(name)
            else:
                self._bad_names.add(name)
                self._on_bad_name(name)
        self._known = known
        return known

    def _list_once(self, watch: bool) -> tuple[list[str], Any] | None:
        """The children and the directory's stat, or None when the path does not exist (watched
        for, with ``watch``)."""
        client, timeout = self.session.client, self.session.timeout
        with translate_errors(f"list {self.path}"):
            try:
                return client.get_children_async(
                    self.path, watch=self._on_children if watch else None, include_data=True
                ).get(timeout=timeout)
            except NoNodeError:
                pass
            # Nothing was ever written: be told when the first notification creates the path.
            if (
                not watch
                or client.exists_async(self.path, watch=self._on_children).get(timeout=timeout) is None
            ):
                return None
        raise retry.RetryNow()  # it exists now: list it, with the child watch

    def present(self) -> set[str]:
        """Every child of the last listing (notifications and the others), less those forgotten."""
        return self._known | self._bad_names

    def forget(self, names: Iterable[str]) -> None:
        """These notifications are gone (purged): no longer :meth:`present`."""
        self._known.difference_update(names)

    def _on_children(self, event: WatchedEvent) -> None:
        if event.type == EventType.NONE:  # the connection dropped: the caller lists on reconnection
            return
        self._on_change()

    # -- reads ----------------------------------------------------------------------------------

    def read_ahead(self, after: int | None, count: int) -> PendingNotifications:
        """Send the reads of the ``count`` notifications numbered after ``after`` now, so they
        share a round trip with the listing that follows; :meth:`PendingNotifications.result`
        collects them. A guess that is wrong costs nothing but a "no node" answer."""
        if after is None or count <= 0:
            names: list[str] = []
        else:
            names = [self.name_of(n) for n in range(after + 1, min(after + 1 + count, MAX_SEQUENCE + 1))]
        return PendingNotifications(names, self.session.read_later([f"{self.path}/{name}" for name in names]))

    def read(self, names: Sequence[str]) -> dict[str, Read]:
        """The notifications ``names``, in few round trips; a node that may not be read gives its
        error, one that no longer exists None."""
        if not names:
            return {}
        found = self.session.get_many([f"{self.path}/{name}" for name in names], node_errors=True)
        return dict(zip(names, map(_read, found), strict=True))


class PendingNotifications:
    """Notification reads in flight (:meth:`NotificationWatch.read_ahead`)."""

    def __init__(self, names: Sequence[str], pending: PendingRead) -> None:
        self.names = names
        self._pending = pending

    def result(self) -> dict[str, Read]:
        return dict(zip(self.names, map(_read, self._pending.result(node_errors=True)), strict=True))


def _read(found: Any) -> Read:
    if found is None or isinstance(found, Exception):
        return found
    return found[0], found[1].ctime


__all__ = ["MAX_SEQUENCE", "NotificationWatch", "PendingNotifications", "Read", "SessionWatch"]
