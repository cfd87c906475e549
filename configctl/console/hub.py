"""ONE set of ZooKeeper watches per server, keeping the documents every browser shares current.

A browser never reads ZooKeeper: pages and ``/api`` answer from the documents kept here, and
``/events`` only says which document moved (:mod:`.fanout`). So the ZooKeeper cost of a change is
one refresh of the documents it touches, whether one browser is open or a hundred.

The watches (callbacks only *tell*, on kazoo's thread; the hub's own thread reads, as the
listener does, :mod:`configctl.zk.watchers`):

* child watches on ``/config/changes`` (a change), ``/configctl/brokers`` (a listener starts or
  dies), ``/configctl/fleet`` (a broker known or retired), Kafka's ``/brokers/ids`` and
  ``/configctl/rollouts`` (a rollout starts or ends);
* a data watch on every broker's state node and fleet record (a broker applied a change, found a
  problem), on every rollout record (a step) and its owner node (its process died).

Bursts are coalesced (``debounce``): a thousand listeners applying one change cost a few
refreshes, not a thousand. After a reconnection every child watch is armed again; a re-list
every ``recheck`` seconds catches anything a watch could not tell (the cluster's metadata owner).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from configctl.console import documents
from configctl.errors import ConfigctlError, one_line
from configctl.rollout.parsing import check_rollout_id
from configctl.store import ConfigStore, Unsupported
from configctl.zk.watchers import NotificationWatch, SessionWatch
from configctl.znodes import (
    CHANGES_PATH,
    NOTIFICATION_PREFIX,
    BrokerStateZNode,
    FleetRecordZNode,
    RolloutZNode,
)

log = logging.getLogger(__name__)

STATUS, CHANGES, ROLLOUTS = "status", "changes", "rollouts"
TOPICS = (STATUS, CHANGES, ROLLOUTS)
"""The shared documents: ``status`` (see docs/reference/state-and-fleet-nodes.md), the newest ``changes``, ``rollouts``."""

BROKERS_DIR = BrokerStateZNode.ROOT
FLEET_DIR = FleetRecordZNode.ROOT
ROLLOUTS_DIR = RolloutZNode.ROOT
KAFKA_IDS_DIR = "/brokers/ids"

_DIRECTORIES: dict[str, tuple[str, tuple[str, ...]]] = {
    # directory -> (name prefix of its notifications, the documents a change of its children moves)
    CHANGES_PATH: (NOTIFICATION_PREFIX, (STATUS, CHANGES)),
    BROKERS_DIR: ("", (STATUS,)),
    FLEET_DIR: ("", (STATUS,)),
    KAFKA_IDS_DIR: ("", (STATUS,)),
    ROLLOUTS_DIR: ("", (ROLLOUTS,)),
}

NEWEST_CHANGES = 20

LOST = "the connection to ZooKeeper is lost (reconnecting)"


class WatchHub:
    """The documents of one server, refreshed by one set of watches; ``on_moved(topic, version)``
    is called (on the hub's thread) whenever a document changed."""

    def __init__(
        self,
        store: ConfigStore,
        *,
        on_moved: Callable[[str, int], None] = lambda topic, version: None,
        on_problem: Callable[[str | None], None] = lambda problem: None,
        debounce: float = 0.05,
        recheck: float = 30.0,
    ) -> None:
        store.capabilities.require("watches", "fleet_state", "rollout_records", what="the console")
        session = getattr(store, "session", None)
        if session is None:
            raise Unsupported(f"the console needs ZooKeeper's watches; {store.kind} has none")
        self.store = store
        self.session = session
        self.on_moved = on_moved
        self.on_problem = on_problem
        self.debounce = debounce
        self.recheck = recheck
        self.changes = documents.ChangePaths()
        self.documents: dict[str, Any] = {}
        self.versions: dict[str, int] = dict.fromkeys(TOPICS, 0)
        self.refreshes: dict[str, int] = dict.fromkeys(TOPICS, 0)
        self.problem: str | None = None
        """Why the documents may be old (ZooKeeper unreachable, say); None while they are current."""
        self._lock = threading.Lock()
        self._dirty: set[str] = set()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._children = {
            path: NotificationWatch(session, path, prefix, on_change=lambda p=path: self._mark(p))
            for path, (prefix, _) in _DIRECTORIES.items()
        }
        self._data_watched: set[str] = set()
        self._session_watch = SessionWatch(
            session,
            on_connected=lambda _sid: self._mark(*_DIRECTORIES),  # watches may be gone: arm them again
            on_suspended=lambda: self._set_problem(LOST),
            on_lost=lambda: self._set_problem(LOST),
        )

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Arm every watch and build every document now (a ZooKeeper problem is raised here, as one
        line), then follow changes on the hub's thread."""
        self._refresh(set(_DIRECTORIES) | set(TOPICS))
        self._session_watch.start()
        self._thread = threading.Thread(target=self._run, name="configctl-console-hub", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        self._session_watch.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def watches(self) -> int:
        """The ZooKeeper watches this server holds: one per directory, one per watched node."""
        with self._lock:
            return len(self._children) + len(self._data_watched)

    def document(self, topic: str) -> Any:
        with self._lock:
            return self.documents[topic]

    def version_key(self) -> tuple[int, ...]:
        """Moves whenever any shared document moves (a cache key for what is built from them)."""
        with self._lock:
            return tuple(self.versions[t] for t in TOPICS)

    # -- the hub's thread -----------------------------------------------------------------------

    def _mark(self, *keys: str) -> None:
        """Called on kazoo's thread: only remember what moved and wake the hub."""
        with self._lock:
            self._dirty.update(keys)
        self._wake.set()

    def _run(self) -> None:
        backoff = 0.5
        while not self._stopped.is_set():
            if not self._wake.wait(self.recheck):
                self._mark(*_DIRECTORIES, *TOPICS)  # nothing told for a while: look anyway
            if self._stopped.is_set():
                return
            time.sleep(self.debounce)  # let a burst (a fleet applying one change) arrive whole
            self._wake.clear()
            with self._lock:
                dirty, self._dirty = self._dirty, set()
            try:
                self._refresh(dirty)
                self._set_problem(None)
                backoff = 0.5
            except Exception as exc:  # the hub must outlive any one refresh: logged, tried again
                self._set_problem(one_line(exc.message if isinstance(exc, ConfigctlError) else exc, 300))
                log.warning(
                    "console: cannot refresh from ZooKeeper: %s",
                    self.problem,
                    exc_info=not isinstance(exc, ConfigctlError),
                )
                self._mark(*dirty)
                self._stopped.wait(backoff)
                backoff = min(backoff * 2, 10.0)

    def _set_problem(self, problem: str | None) -> None:
        """Say (once) that the documents may be old, and why; or that they are current again."""
        with self._lock:
            if problem == self.problem:
                return
            self.problem = problem
        self.on_problem(problem)

    def _refresh(self, dirty: set[str]) -> None:
        """Re-arm the child watches that fired, watch new nodes, rebuild the documents that moved."""
        topics = {t for t in dirty if t in TOPICS}
        for path in [d for d in dirty if d in _DIRECTORIES]:
            watch = self._children[path]
            watch.list(watch=True)
            topics.update(_DIRECTORIES[path][1])
            if path in (BROKERS_DIR, FLEET_DIR, ROLLOUTS_DIR):
                self._watch_nodes(path, watch.present())
        for topic in TOPICS:
            if topic in topics:
                self._rebuild(topic)

    def _watch_nodes(self, directory: str, names: set[str]) -> None:
        """A data watch on each broker state, fleet record and rollout record (and its owner) not
        watched yet. A watch ends with its node, so the watches follow the nodes that exist: a
        listener that stops, a retired broker, a pruned rollout leave none behind, and a node
        created again is watched again when its directory's child watch tells of it."""
        for name in sorted(names):
            path = f"{directory}/{name}"
            if directory in (BROKERS_DIR, FLEET_DIR) and name.isdigit():
                topic = STATUS
            elif directory == ROLLOUTS_DIR and _is_rollout_id(name):
                topic = ROLLOUTS
            else:
                continue
            with self._lock:
                if path in self._data_watched:
                    continue
                self._data_watched.add(path)
            self.session.watch_data(path, self._telling(topic, path))
            if topic == ROLLOUTS:  # its owner: whether a process still runs it ("no process")
                owner = RolloutZNode.owner(name)
                with self._lock:
                    self._data_watched.add(owner)
                self.session.watch_data(owner, self._telling(topic, owner, parent=path))

    def _telling(self, topic: str, path: str, parent: str | None = None) -> Callable[..., bool]:
        """A data watch's callback (kazoo's thread): mark ``topic``; False ends the watch."""

        def told(data: bytes | None = None, stat: Any = None, *_rest: Any) -> bool:
            if self._stopped.is_set():
                return False
            self._mark(topic)
            with self._lock:
                if stat is not None and (parent is None or parent in self._data_watched):
                    return True
                if parent is not None and parent in self._data_watched:
                    return True  # an owner node comes and goes while its rollout's record exists
                self._data_watched.discard(path)  # gone: watched again if it comes back
                if parent is None and topic == ROLLOUTS:
                    self._data_watched.discard(RolloutZNode.owner(path.rsplit("/", 1)[1]))
                return False

        return told

    def _rebuild(self, topic: str) -> None:
        if topic == STATUS:
            document: Any = documents.status_document(self.store)
        elif topic == CHANGES:
            document = self.changes.newest(self.store, NEWEST_CHANGES)
        else:
            document = documents.rollouts_document(self.store)
        with self._lock:
            self.refreshes[topic] += 1
            if self.documents.get(topic) == document:
                return
            self.documents[topic] = document
            self.versions[topic] += 1
            version = self.versions[topic]
        self.on_moved(topic, version)

    def stats(self) -> dict[str, Any]:
        """What the console itself costs: its watches, the refreshes each document took."""
        watches = self.watches
        with self._lock:
            return {
                "watches": watches,
                "refreshes": dict(self.refreshes),
                "versions": dict(self.versions),
                "problem": self.problem,
            }


def _is_rollout_id(name: str) -> bool:
    try:
        check_rollout_id(name)
        return True
    except ConfigctlError:
        return False
