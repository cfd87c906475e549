"""ONE set of watches per server, keeping the documents every browser shares current.

A browser never reads the store: pages and ``/api`` answer from the documents kept here, and
``/events`` only says which document moved (:mod:`.fanout`). So the store's cost of a change is
one refresh of the documents it touches, whether one browser is open or a hundred.

The watches are the store's (:meth:`configctl.store.Watches.watch_fleet`; ZooKeeper's are
:mod:`configctl.zk.fleetwatch`): they only *tell* which keys moved, on their own thread, and the
hub's own thread refreshes them and rebuilds the documents. Bursts are coalesced (``debounce``):
a thousand listeners applying one change cost a few refreshes, not a thousand. A re-list every
``recheck`` seconds catches anything a watch could not tell (the cluster's metadata owner).

A store without watches (KRaft) is polled instead (:mod:`.polling`): every ``poll`` seconds the
hub rebuilds every document through a store opened for that poll (``reopen``), and still tells
the browsers only what moved. There, ``status`` is what the brokers and controllers report when
asked (``configctl status -o json`` on KRaft), ``changes`` the newest writes of the fleet's
history (no change notifications exist). Where the store keeps no rollout records, the
rollouts are refused in one line (:attr:`WatchHub.no_rollouts`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from configctl.console import documents
from configctl.console.nodes import Departed
from configctl.console.polling import POLL_INTERVAL, Polling
from configctl.errors import ConfigctlError, KafkaUnavailable, ZooKeeperUnavailable, one_line
from configctl.store import CHANGES, FLEET_PARTS, STATUS, ConfigStore, FleetWatch
from configctl.store.capabilities import Unsupported

log = logging.getLogger(__name__)

TOPICS = FLEET_PARTS
"""The shared documents: ``status`` (see docs/reference/state-and-fleet-nodes.md), the newest
``changes``, ``rollouts``: one per part of the fleet the store's watch tells of."""

NEWEST_CHANGES = 20

LOST = "the connection to ZooKeeper is lost (reconnecting)"

NO_ROLLOUTS = (
    "the store in use ({kind}) keeps no rollout records: canaries and waves are refused on it, "
    "so there is no rollout to show"
)


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
        reopen: Callable[[], ConfigStore] | None = None,
        poll: float = POLL_INTERVAL,
    ) -> None:
        self.store = store
        self.polling = not store.capabilities.watches
        """No watches (KRaft): every document is rebuilt every ``poll`` seconds (:mod:`.polling`)."""
        if self.polling:
            store.capabilities.require("broker_reports", "history", what="the console")
        else:
            store.capabilities.require("watches", "fleet_state", "rollout_records", what="the console")
        self.source = "the cluster" if self.polling else "ZooKeeper"
        """What the documents are read from, as the pages name it beside a problem."""
        self.poll = poll if self.polling else None
        self.no_rollouts = None if store.capabilities.rollout_records else NO_ROLLOUTS.format(kind=store.kind)
        """Why there is no Rollouts page (one line), or None when the store keeps rollout records."""
        self.on_moved = on_moved
        self.on_problem = on_problem
        self.debounce = debounce
        self.recheck = poll if self.polling else recheck
        self._reopen = reopen if self.polling else None
        self.changes = documents.ChangePaths()
        self.documents: dict[str, Any] = {}
        self.versions: dict[str, int] = dict.fromkeys(TOPICS, 0)
        self.refreshes: dict[str, int] = dict.fromkeys(TOPICS, 0)
        self.departed = Departed() if self.polling else None
        """Polled (KRaft): the brokers seen registered, so one the cluster stops listing is shown."""
        self.polls = 0
        """Refreshes done so far: with :attr:`polling`, what a page read on its own is kept for."""
        self.stale: dict[str, str] = {}
        """Polled: the documents kept at their last version because they could not be read at the
        last poll (the ``changes`` while a fenced broker's config cannot be described), and why."""
        self.problem: str | None = None
        """Why the documents may be old (ZooKeeper unreachable, say); None while they are current."""
        self._lock = threading.Lock()
        self._dirty: set[str] = set()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: FleetWatch = (
            Polling() if self.polling else store.watch_fleet(self._mark, lambda: self._set_problem(LOST))
        )

    @contextmanager
    def reading(self) -> Iterator[ConfigStore]:
        """The store to read through now: the one store, kept current by its watches; or, polled
        (KRaft), one opened for this read, so nothing read once is taken for the present."""
        if self._reopen is None:
            yield self.store
            return
        with self._reopen() as store:
            yield store

    def unavailable(self) -> ConfigctlError | None:
        """The error a read on a page's behalf gets at once while the store is known lost (503)."""
        if self.problem is None:
            return None
        if self.polling:
            return KafkaUnavailable(f"the cluster: {self.problem}")
        return ZooKeeperUnavailable(f"ZooKeeper: {self.problem}")

    def moment(self) -> tuple[int, ...]:
        """What a page's own read is kept for: until a shared document moves, and, polled, one poll."""
        return self.version_key() + ((self.polls,) if self.polling else ())

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Arm every watch and build every document now (a ZooKeeper problem is raised here, as one
        line), then follow changes on the hub's thread."""
        self._refresh(set(self._watch.everything) | set(TOPICS))
        self._watch.start()
        self._thread = threading.Thread(target=self._run, name="configctl-console-hub", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        self._watch.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def watches(self) -> int:
        """The store's watches this server holds (ZooKeeper's: one per directory, one per node)."""
        return self._watch.count

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
                self._mark(*self._watch.everything, *TOPICS)  # nothing told for a while: look anyway
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
                    "console: cannot refresh from %s: %s",
                    self.source,
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
        """Re-arm the watches that told, rebuild the documents that moved (polled: all of them,
        through one store opened for this poll)."""
        topics = {t for t in dirty if t in TOPICS} | self._watch.refresh(dirty)
        with self.reading() as store:
            for topic in TOPICS:
                if topic not in topics:
                    continue
                if not self.polling or topic == STATUS:
                    self._rebuild(store, topic)
                    continue
                try:  # polled: a document that cannot be read now does not hold the others back
                    self._rebuild(store, topic)
                except ConfigctlError as exc:
                    self._set_stale(topic, one_line(exc.message, 300))
                else:
                    self._set_stale(topic, None)
        with self._lock:
            self.polls += 1

    def _set_stale(self, topic: str, reason: str | None) -> None:
        """Say (once, and to the browsers) that ``topic``'s document is its last one, and why."""
        with self._lock:
            if self.stale.get(topic) == reason:
                return
            if reason is None:
                del self.stale[topic]
            else:
                self.stale[topic] = reason
                self.documents.setdefault(topic, [])  # never read yet: shown empty, and said why
            self.versions[topic] += 1
            version = self.versions[topic]
        if reason is not None:
            log.warning("console: cannot read the %s from %s now: %s", topic, self.source, reason)
        self.on_moved(topic, version)

    def _rebuild(self, store: ConfigStore, topic: str) -> None:
        if topic == STATUS:
            document: Any = documents.status_document(store)
            if self.departed is not None:
                self.departed.note(document)
        elif topic == CHANGES:
            if store.capabilities.notifications:
                document = self.changes.newest(store, NEWEST_CHANGES)
            else:  # no change notifications (KRaft): the newest writes of the fleet's history
                document = documents.newest_writes(store, NEWEST_CHANGES)
        elif self.no_rollouts is not None:
            document = []
        else:
            try:
                document = documents.rollouts_document(store)
            except Unsupported as exc:  # the store says it has no rollout records after all
                self.no_rollouts = one_line(exc.message, 300)
                document = []
        with self._lock:
            self.refreshes[topic] += 1
            if self.documents.get(topic) == document:
                return
            self.documents[topic] = document
            self.versions[topic] += 1
            version = self.versions[topic]
        self.on_moved(topic, version)

    def gone(self) -> list[dict[str, Any]]:
        """Polled (KRaft): the brokers seen registered that the newest ``status`` no longer lists."""
        if self.departed is None or STATUS not in self.documents:
            return []
        return self.departed.gone(self.document(STATUS))

    def stats(self) -> dict[str, Any]:
        """What the console itself costs: its watches, the refreshes each document took."""
        watches = self.watches
        with self._lock:
            return {
                "watches": watches,
                "polling_seconds": self.poll,
                "not_current": dict(self.stale),
                "refreshes": dict(self.refreshes),
                "versions": dict(self.versions),
                "problem": self.problem,
            }
