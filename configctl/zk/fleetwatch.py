"""One set of ZooKeeper watches on what the fleet shows, telling which part of it moved.

What the console's hub (:mod:`configctl.console.hub`) keeps current, watched the ZooKeeper way
(callbacks only *tell*, on kazoo's thread; the caller's own thread reads, as the listener does,
:mod:`configctl.zk.watchers`):

* child watches on ``/config/changes`` (a change), ``/configctl/brokers`` (a listener starts or
  dies), ``/configctl/fleet`` (a broker known or retired), Kafka's ``/brokers/ids`` and
  ``/configctl/rollouts`` (a rollout starts or ends);
* a data watch on every broker's state node and fleet record (a broker applied a change, found a
  problem), on every rollout record (a step) and its owner node (its process died).

A watch ends with its node, so the data watches follow the nodes that exist. After a
reconnection every child watch is armed again. The parts are the store's words
(:data:`configctl.store.FLEET_PARTS`); the store hands this out as its
:meth:`~configctl.store.Watches.watch_fleet`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from configctl.rollout.parsing import is_rollout_id
from configctl.store import CHANGES, ROLLOUTS, STATUS
from configctl.zk.session import ZkSession
from configctl.zk.watchers import NotificationWatch, SessionWatch
from configctl.znodes import (
    CHANGES_PATH,
    NOTIFICATION_PREFIX,
    BrokerStateZNode,
    FleetRecordZNode,
    RolloutZNode,
)

BROKERS_DIR = BrokerStateZNode.ROOT
FLEET_DIR = FleetRecordZNode.ROOT
ROLLOUTS_DIR = RolloutZNode.ROOT
KAFKA_IDS_DIR = "/brokers/ids"

DIRECTORIES: dict[str, tuple[str, tuple[str, ...]]] = {
    # directory -> (name prefix of its notifications, the parts a change of its children moves)
    CHANGES_PATH: (NOTIFICATION_PREFIX, (STATUS, CHANGES)),
    BROKERS_DIR: ("", (STATUS,)),
    FLEET_DIR: ("", (STATUS,)),
    KAFKA_IDS_DIR: ("", (STATUS,)),
    ROLLOUTS_DIR: ("", (ROLLOUTS,)),
}


class ZooKeeperFleetWatch:
    """The watches; ``tell(*keys)`` is called on kazoo's thread with the parts (or directories)
    that moved, ``on_lost()`` when the connection is suspended or lost."""

    def __init__(self, session: ZkSession, tell: Callable[..., None], on_lost: Callable[[], None]) -> None:
        self.session = session
        self._tell = tell
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._children = {
            path: NotificationWatch(session, path, prefix, on_change=lambda p=path: tell(p))
            for path, (prefix, _) in DIRECTORIES.items()
        }
        self._data_watched: set[str] = set()
        self._session_watch = SessionWatch(
            session,
            on_connected=lambda _sid: tell(*DIRECTORIES),  # watches may be gone: arm them again
            on_suspended=on_lost,
            on_lost=on_lost,
        )

    @property
    def everything(self) -> tuple[str, ...]:
        """Every key :meth:`refresh` takes: each watched directory."""
        return tuple(DIRECTORIES)

    def start(self) -> None:
        self._session_watch.start()

    def stop(self) -> None:
        self._stopped.set()
        self._session_watch.stop()

    @property
    def count(self) -> int:
        """The ZooKeeper watches held: one per directory, one per watched node."""
        with self._lock:
            return len(self._children) + len(self._data_watched)

    def refresh(self, keys: set[str]) -> set[str]:
        """Re-arm the child watches of the directories in ``keys`` and watch their new nodes (on the
        caller's thread); the parts their change moved."""
        parts: set[str] = set()
        for path in [key for key in keys if key in DIRECTORIES]:
            watch = self._children[path]
            watch.list(watch=True)
            parts.update(DIRECTORIES[path][1])
            if path in (BROKERS_DIR, FLEET_DIR, ROLLOUTS_DIR):
                self._watch_nodes(path, watch.present())
        return parts

    def _watch_nodes(self, directory: str, names: set[str]) -> None:
        """A data watch on each broker state, fleet record and rollout record (and its owner) not
        watched yet. A listener that stops, a retired broker, a pruned rollout leave none behind,
        and a node created again is watched again when its directory's child watch tells of it."""
        for name in sorted(names):
            path = f"{directory}/{name}"
            if directory in (BROKERS_DIR, FLEET_DIR) and name.isdigit():
                part = STATUS
            elif directory == ROLLOUTS_DIR and is_rollout_id(name):
                part = ROLLOUTS
            else:
                continue
            with self._lock:
                if path in self._data_watched:
                    continue
                self._data_watched.add(path)
            self.session.watch_data(path, self._telling(part, path))
            if part == ROLLOUTS:  # its owner: whether a process still runs it ("no process")
                owner = RolloutZNode.owner(name)
                with self._lock:
                    self._data_watched.add(owner)
                self.session.watch_data(owner, self._telling(part, owner, parent=path))

    def _telling(self, part: str, path: str, parent: str | None = None) -> Callable[..., bool]:
        """A data watch's callback (kazoo's thread): tell ``part``; False ends the watch."""

        def told(data: bytes | None = None, stat: Any = None, *_rest: Any) -> bool:
            if self._stopped.is_set():
                return False
            self._tell(part)
            with self._lock:
                if stat is not None and (parent is None or parent in self._data_watched):
                    return True
                if parent is not None and parent in self._data_watched:
                    return True  # an owner node comes and goes while its rollout's record exists
                self._data_watched.discard(path)  # gone: watched again if it comes back
                if parent is None and part == ROLLOUTS:
                    self._data_watched.discard(RolloutZNode.owner(path.rsplit("/", 1)[1]))
                return False

        return told
