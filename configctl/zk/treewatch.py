"""A persistent recursive watch (ZooKeeper 3.6+ ``addWatch``): every node created, changed or
deleted below a path, told by name, for as long as the connection lasts.

A one-shot child watch only says "something changed below ``/config/changes``": a listener then
lists the directory to learn what, re-arming the watch, reads the new notifications, and only
then learns which config node each names and reads that, one round trip later. A persistent
recursive watch on ``/config`` names each node as it changes, so before a listener asks anything
it knows which notifications are new and which config nodes changed with them, and can read
both in one multiRead: one round trip per change instead of two, and no re-arming.

kazoo 2.11 has neither the request nor the events: it routes events only to its one-shot
watchers, by exact path, and drops the rest. This module sends ``addWatch`` itself (opcode 106,
on kazoo's serialization helpers, as :mod:`configctl.zk.multiread` sends multiRead) and takes,
on kazoo's connection thread, the events below its path before kazoo would drop them. Together
with :mod:`configctl.zk.multiread` it is the only code that touches kazoo's internals (which is
why kazoo is pinned below 3 in pyproject.toml).

Lifetime: ZooKeeper keeps a watch for one connection, and kazoo re-registers nothing after a
reconnection, so the owner re-arms (:meth:`TreeWatch.arm`) after every (re)connection; the
watch says which connection it was armed on (:attr:`TreeWatch.armed`). Events are hints, never
the truth: ZooKeeper does not send an event for a node the session may not read, and none
arrive while disconnected, so an owner still lists what it must be sure of.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadArgumentsError, InvalidACLError, NoAuthError, UnimplementedError
from kazoo.protocol.serialization import Watch, int_struct, write_string
from kazoo.protocol.states import KazooState

from configctl.zk import multiread
from configctl.zk.errors import translated
from configctl.zk.session import ZkSession

log = logging.getLogger(__name__)

CREATED, DELETED, CHANGED = 1, 2, 3
"""ZooKeeper's event types for a node (a recursive watch sends no "children changed")."""
_PERSISTENT_RECURSIVE = 1  # AddWatchMode.PERSISTENT_RECURSIVE

Listener = Callable[[int, str], None]
"""Called on kazoo's connection thread with (event type, path below the chroot): must not block."""


class _AddWatch(tuple):  # type: ignore[type-arg]
    """The request: ``(path, mode)``; the answer carries nothing but its error code."""

    type = 106

    def serialize(self) -> bytes:
        return bytes(write_string(self[0]) + int_struct.pack(self[1]))

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> bool:
        return True


class _Router:
    """One per kazoo client: hands the events below each watched path to its listeners (several
    watches may share a session, and a path), and every other event to kazoo as before."""

    def __init__(self, client: KazooClient) -> None:
        self.client = client
        self.routes: tuple[tuple[str, Listener], ...] = ()  # replaced whole, never changed in place
        connection = client._connection
        self._kazoo_read = connection._read_watch_event
        connection._read_watch_event = self._read_event

    def _read_event(self, buffer: bytes, offset: int) -> None:
        event, _ = Watch.deserialize(buffer, offset)
        client = self.client
        path = client.unchroot(event.path)
        for root, listener in self.routes:
            if path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/" or root == "/"):
                try:
                    listener(event.type, path)
                except Exception:  # kazoo's connection thread must survive any listener
                    log.exception("a tree watch's listener failed on %s", path)
        # kazoo's own one-shot watchers on this very path (if any) still fire
        if event.path in client._data_watchers or event.path in client._child_watchers:
            self._kazoo_read(buffer, offset)


_routers_lock = threading.Lock()


def _router(client: KazooClient) -> _Router:
    with _routers_lock:
        router = getattr(client, "_configctl_router", None)
        if router is None:
            router = _Router(client)
            client._configctl_router = router  # type: ignore[attr-defined]
        return router


class PendingArm:
    """An ``addWatch`` in flight: :meth:`result` says whether the watch is armed."""

    def __init__(self, watch: TreeWatch, generation: int, async_result: Any) -> None:
        self._watch, self._generation, self._async = watch, generation, async_result

    def result(self) -> bool:
        """True when armed on the connection it was sent on (and that connection still holds);
        False when ZooKeeper refused it (the server has no ``addWatch``, say: :attr:`TreeWatch.supported`
        turns False for good). A lost connection raises, as any request does."""
        try:
            self._async.get(timeout=self._watch.session.timeout)
        except UnimplementedError:
            self._watch.supported = False
            return False
        except (NoAuthError, BadArgumentsError, InvalidACLError):
            return False
        except Exception as exc:
            raise translated(exc, f"watch {self._watch.path}") from None
        return self._watch._confirm(self._generation)


class TreeWatch:
    """A persistent recursive watch on ``path`` in ``session``, telling ``listener`` every event.

    ``listener`` runs on kazoo's connection thread (see :data:`Listener`). :meth:`arm` must be
    called again after every (re)connection; :attr:`armed` says whether the current connection
    has it.
    """

    def __init__(self, session: ZkSession, path: str, listener: Listener) -> None:
        self.session = session
        self.path = path.rstrip("/") or "/"
        self._listener = listener
        self.supported = True
        """False once ZooKeeper answered that it has no ``addWatch`` (older than 3.6)."""
        self._generation = 0  # counts connections lost: an arm holds for the one it was sent on
        self._armed_generation: int | None = None
        self._lock = threading.Lock()
        session.client.add_listener(self._on_state)
        router = _router(session.client)
        with _routers_lock:
            router.routes = (*router.routes, (self.path, self._deliver))

    @property
    def armed(self) -> bool:
        with self._lock:
            return self._armed_generation == self._generation

    def arm(self) -> PendingArm:
        """Send ``addWatch`` now (collect with :meth:`PendingArm.result`): requests sent after it
        on this connection see every change it reports, so a listing sent next is its baseline."""
        client = self.session.client
        (path,) = multiread.server_paths(client, [self.path])
        with self._lock:
            generation = self._generation
        async_result = client.handler.async_result()
        client._call(_AddWatch((path, _PERSISTENT_RECURSIVE)), async_result)
        return PendingArm(self, generation, async_result)

    def close(self) -> None:
        """Stop telling the listener (the watch itself ends with the connection)."""
        self.session.client.remove_listener(self._on_state)
        router = _router(self.session.client)
        with _routers_lock:
            router.routes = tuple(route for route in router.routes if route[1] != self._deliver)

    def _confirm(self, generation: int) -> bool:
        with self._lock:
            if generation != self._generation:
                return False
            self._armed_generation = generation
            return True

    def _deliver(self, kind: int, path: str) -> None:
        self._listener(kind, path)

    def _on_state(self, state: str) -> None:
        if state != KazooState.CONNECTED:  # the connection dropped: its watches are gone
            with self._lock:
                self._generation += 1


__all__ = ["CHANGED", "CREATED", "DELETED", "PendingArm", "TreeWatch"]
