"""A generic listener for ZooKeeper sequential change-notification nodes.

This is Kafka's ``ZkNodeChangeNotificationListener`` (the watch-and-sequence machinery), kept
apart from what a change *means* (:mod:`configctl.listener.manager`), with the gaps closed:

* **Start and every new session**: list the notifications (their highest number ``N0``), then ask
  the handler to load the complete current state, then (re-)register the child watch and process
  every notification above ``N0``. Config and notification are written in one multi, so a
  notification that exists before the load is already reflected in what the load reads; nothing
  made while disconnected is missed and nothing is processed twice.
* **Every callback** (child watch, reconnection): list the children with the watch re-armed,
  fetch the data of every notification above the last processed one with pipelined reads (one
  round trip of latency per batch, not per node), hand them to the handler in order, then purge.
  A notification that vanished before it could be read (another broker purged it) makes the
  next step a full reload: the change it announced is unknown, so everything is re-read.
* **Expiry without a round trip per node**: sequence numbers grow with creation time, so ctime is
  (almost) monotonic in the number. One ``exists`` on the oldest child says whether anything has
  expired; only then a binary search (O(log n) ``exists``) finds the boundary, and everything
  below it is deleted with pipelined deletes that ignore nodes another broker already removed.
  The first not-expired node's ctime is remembered, so most callbacks cost no purge round trip
  at all. A per-listener random jitter on the expiry age spreads a fleet's purges apart: the
  broker with the smallest jitter does the work, the rest find the nodes gone.
* **Threading**: kazoo's callbacks only set flags; one worker thread does every ZooKeeper call
  (never blocking kazoo's event thread) and retries failed work with backoff. A failed step is
  logged once, on one line, at WARNING (later failures of the same kind at DEBUG), counted, and
  kept as ``last_error``; :attr:`pending_since` says since when work has been waiting, which is
  how :meth:`SequentialNotificationListener.stalled` tells a stall from a quiet period.
* **Purging is best effort**: a listener that may not delete notifications (Kafka's ACLs, no
  credentials) logs it once and tries again a minute later; it never holds up applying.

kazoo forgets its watches when a connection drops, even when the session survives, so every
(re)connection triggers at least a re-list with the watch re-armed; a new session id triggers a
full reload.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType, WatchedEvent

from configctl.errors import ConfigctlError, InvalidInput, ZooKeeperUnavailable, one_line, printable
from configctl.listener.manager import RawNotification
from configctl.zk.errors import translate_errors
from configctl.zk.session import ZkSession
from configctl.znodes import CHANGES_PATH, NOTIFICATION_PREFIX

log = logging.getLogger("configctl.listener")

DEFAULT_CHANGE_EXPIRATION_MS = 900_000
FETCH_BATCH = 10_000
"""Notifications fetched (and applied, and published) per step when catching up a backlog."""
_MAX_JITTER_MS = 30_000
_BACKOFF_START = 0.1
_BACKOFF_MAX = 2.0
SPECULATE = 4
"""Notifications read ahead, in the listing's round trip, after the last one processed."""
_MAX_SEQUENCE = 2**31 - 1
PURGE_RETRY_S = 60.0
"""After a failed purge (no permission to delete, say), wait this long before trying again."""


class ChangeHandler(Protocol):
    """What the listener drives: a complete load, and batches of new notifications."""

    def load_all(self, up_to: int | None) -> None:
        """Read and apply everything; every change numbered ``<= up_to`` is reflected in what is read."""

    def process(self, notifications: Sequence[RawNotification]) -> None:
        """Apply new notifications (ascending, none missing between them)."""

    def bad_notification_name(self, name: str) -> None:
        """A child of the notification path that is not a notification."""

    def present(self, names: set[str]) -> None:
        """The notifications that exist now (after a listing and purge)."""


def expired_prefix(
    names: Sequence[str], ctime_ms: Callable[[str], int | None], cutoff_ms: int
) -> tuple[int, int | None]:
    """How many of ``names`` (oldest first) were created before ``cutoff_ms``, by binary search.

    Returns ``(count, ctime)`` where ``ctime`` is the creation time of ``names[count]`` when it
    was looked up (None otherwise). A node that no longer exists counts as expired: only a purge
    removes notifications. Costs 1 lookup when nothing expired, O(log n) otherwise.
    """
    if not names:
        return 0, None
    first = ctime_ms(names[0])
    if first is not None and first >= cutoff_ms:
        return 0, first
    low, high = 1, len(names)  # names[:low] expired; names[high:] not expired (or past the end)
    boundary_ctime: int | None = None
    while low < high:
        middle = (low + high) // 2
        ctime = ctime_ms(names[middle])
        if ctime is None or ctime < cutoff_ms:
            low = middle + 1
        else:
            high = middle
            boundary_ctime = ctime
    return low, boundary_ctime if low < len(names) else None


class SequentialNotificationListener:
    """Watches a sequential-node directory and feeds a :class:`ChangeHandler`, forever, until stopped."""

    def __init__(
        self,
        session: ZkSession,
        handler: ChangeHandler,
        *,
        path: str = CHANGES_PATH,
        prefix: str = NOTIFICATION_PREFIX,
        change_expiration_ms: int = DEFAULT_CHANGE_EXPIRATION_MS,
        purge_jitter_ms: int | None = None,
        fetch_batch: int = FETCH_BATCH,
        speculate: int = SPECULATE,
        clock: Callable[[], float] = time.time,
        name: str = "configctl-listener",
    ) -> None:
        if change_expiration_ms <= 0:
            raise InvalidInput("change expiration must be a positive number of milliseconds")
        self.session = session
        self.client: KazooClient = session.client
        self.handler = handler
        self.path = path.rstrip("/")
        self.prefix = prefix
        self.change_expiration_ms = int(change_expiration_ms)
        if purge_jitter_ms is None:
            purge_jitter_ms = min(_MAX_JITTER_MS, self.change_expiration_ms // 10)
        self.purge_jitter_ms = random.uniform(0, max(0, purge_jitter_ms))
        self.fetch_batch = max(1, fetch_batch)
        self.speculate = max(0, speculate)
        self._clock = clock
        self._name = name
        self._cond = threading.Condition()
        self._need_reload = False
        self._need_check = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._loaded = threading.Event()
        self._loaded_session: int | None = None
        self._last: int | None = None
        self._bad_names: set[str] = set()
        self._known: set[str] = set()  # valid notification names of the last listing
        self._purge_hint: tuple[int, int] | None = None  # (number, ctime) of a not-yet-expired node
        self._purge_after = 0.0  # monotonic time before which no purge is tried (after a failure)
        self._purge_error: str | None = None
        self.last_error: str | None = None
        self.start_error: ConfigctlError | None = None
        """Why the first load failed (None while it has not, or once it succeeded)."""
        self.pending_since: float | None = None
        """Monotonic time since which work (a watch, a reconnection, a reload) waits undone."""
        self.pending_notifications = 0
        """Notifications seen in the last listing but not yet applied."""
        self.stats: dict[str, int] = {
            "full_loads": 0,
            "checks": 0,
            "notifications_processed": 0,
            "purged_notifications": 0,
            "purge_lookups": 0,
            "purge_searches": 0,
            "purge_errors": 0,
            "prefetched_notifications": 0,
            "errors": 0,
        }

    # ------------------------------------------------------------------------------ lifecycle

    @property
    def last_processed(self) -> int | None:
        return self._last

    def start(self) -> None:
        """Begin: a full load, the watch, then processing; returns at once (see :meth:`wait_loaded`)."""
        if self._thread is not None:
            return
        self.client.add_listener(self._on_state)
        with self._cond:
            self._need_reload = True
            self._mark_pending()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def wait_loaded(self, timeout: float | None = None) -> bool:
        return self._loaded.wait(timeout)

    @property
    def loaded(self) -> bool:
        return self._loaded.is_set()

    @property
    def alive(self) -> bool:
        """The worker thread runs (it only ends when stopped)."""
        return self._thread is not None and self._thread.is_alive()

    def stalled(self, threshold_s: float, now: float | None = None) -> bool:
        """Work has waited undone for longer than ``threshold_s`` (the worker keeps failing, or
        died). A quiet listener is not stalled, however long nothing happens."""
        if self._thread is not None and not self._thread.is_alive() and not self._stopping:
            return True
        since = self.pending_since
        if since is None:
            return False
        return (time.monotonic() if now is None else now) - since > threshold_s

    def stop(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self.client.remove_listener(self._on_state)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._thread = None

    def request_check(self) -> None:
        with self._cond:
            self._need_check = True
            self._mark_pending()
            self._cond.notify_all()

    def request_reload(self) -> None:
        with self._cond:
            self._need_reload = True
            self._mark_pending()
            self._cond.notify_all()

    def _mark_pending(self) -> None:
        """Called under the condition whenever work is flagged."""
        if self.pending_since is None:
            self.pending_since = time.monotonic()

    # ------------------------------------------------------------------------------ kazoo callbacks

    def _on_state(self, state: str) -> None:
        """kazoo's connection thread: never block here, only flag work for the worker."""
        if state == KazooState.LOST:
            log.warning("ZooKeeper session lost; everything will be reloaded when a new session starts")
        elif state == KazooState.SUSPENDED:
            log.warning("connection to ZooKeeper suspended; waiting to reconnect")
        elif state == KazooState.CONNECTED:
            with self._cond:
                if self._session_id() != self._loaded_session:
                    self._need_reload = True
                else:
                    self._need_check = True
                self._mark_pending()
                self._cond.notify_all()

    def _on_children(self, event: WatchedEvent) -> None:
        if event.type == EventType.NONE:  # the connection dropped; _on_state re-arms on reconnect
            return
        with self._cond:
            self._need_check = True
            self._mark_pending()
            self._cond.notify_all()

    def _session_id(self) -> int | None:
        client_id = self.client.client_id
        return client_id[0] if client_id else None

    # ------------------------------------------------------------------------------ worker

    def _run(self) -> None:
        backoff = _BACKOFF_START
        failures = 0
        warned: set[str] = set()  # error kinds already logged at WARNING in this run of failures
        while True:
            with self._cond:
                while not (self._stopping or self._need_reload or self._need_check):
                    self._cond.wait()
                if self._stopping:
                    return
                reload, self._need_reload = self._need_reload, False
                self._need_check = False
            try:
                if not reload and self._session_id() != self._loaded_session:
                    reload = True
                if reload:
                    self._reload()
                    reload = False
                self._check()
                if failures:
                    log.info("listener recovered after %d failed attempt(s)", failures)
                backoff, failures = _BACKOFF_START, 0
                warned.clear()
                self.last_error = None
                with self._cond:
                    if not (self._need_reload or self._need_check):
                        self.pending_since = None
            except Exception as exc:
                failures += 1
                self.stats["errors"] += 1
                self.last_error = _describe(exc)
                if not self._loaded.is_set() and isinstance(exc, ConfigctlError):
                    self.start_error = exc
                kind = type(exc).__name__
                level = logging.WARNING if kind not in warned else logging.DEBUG
                warned.add(kind)
                # one line, whatever the exception; the traceback only for a debugging run
                log.log(level, "listener step failed (will retry): %s", printable(self.last_error))
                if not isinstance(exc, ConfigctlError):
                    log.debug("listener step failure", exc_info=True)
                with self._cond:
                    if reload:
                        self._need_reload = True
                    self._need_check = True
                    self._mark_pending()
                    if not self._stopping:
                        self._cond.wait(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)

    def _reload(self) -> None:
        """Full load for the current session: N0, load everything, then the watch (in _check)."""
        session = self._session_id()
        if session is None:
            raise ZooKeeperUnavailable("not connected to ZooKeeper")
        names = self._list(watch=False)
        up_to = self._number(max(names)) if names else None
        if up_to is not None and self._last is not None and up_to < self._last:
            log.warning(
                "the newest notification is %d but change %d was already applied: the change counter "
                "was reset (ZooKeeper data replaced?); following the new numbering",
                up_to,
                self._last,
            )
            self._last = None
        if up_to is None:
            up_to = self._last
        self.handler.load_all(up_to)
        if up_to is not None:
            self._last = up_to if self._last is None else max(self._last, up_to)
        self._loaded_session = session
        self._purge_hint = None
        self.stats["full_loads"] += 1
        self.start_error = None
        self._loaded.set()

    def _check(self) -> None:
        """List with the watch re-armed, process what is new, purge what expired.

        The next few notifications (numbers after the last processed one) are read *with* the
        listing, in the same round trip: after a watch fires, the new notification is almost
        always ``last + 1``, so the usual change costs two round trips (listing and notification
        together, then the entity) instead of three. A guess that is wrong costs nothing but a
        few "no node" answers; whatever the listing shows and the guess missed is read after.

        Names are ``prefix`` + 10 zero-padded digits, so string order is number order: finding
        the new ones is a string comparison per child, and only those are parsed and sorted.
        """
        self.stats["checks"] += 1
        guesses = self._guesses()
        early = self.session.read_later([f"{self.path}/{name}" for name in guesses])
        names = self._list(watch=True)
        prefetched = dict(zip(guesses, early.result(node_errors=True), strict=True))
        if self._last is None:
            pending = sorted(names)
        else:
            floor = self._name_of(self._last)
            pending = sorted(name for name in names if name > floor)
        self.pending_notifications = len(pending)
        for start in range(0, len(pending), self.fetch_batch):
            chunk = pending[start : start + self.fetch_batch]
            missing = [name for name in chunk if prefetched.get(name) is None]
            self.stats["prefetched_notifications"] += len(chunk) - len(missing)
            fetched = dict(
                zip(
                    missing,
                    self.session.get_many([f"{self.path}/{name}" for name in missing], node_errors=True),
                    strict=True,
                )
            )
            datas = [prefetched.get(name) or fetched[name] for name in chunk]
            if any(found is None for found in datas):
                gone = next(name for name, found in zip(chunk, datas, strict=True) if found is None)
                log.warning(
                    "notification %s vanished before it was read; reloading everything", printable(gone)
                )
                self.request_reload()
                return
            batch = [
                RawNotification(self._number(name), name, None, one_line(found))
                if isinstance(found, Exception)
                else RawNotification(self._number(name), name, found[0], ctime_ms=found[1].ctime)
                for name, found in zip(chunk, datas, strict=True)
            ]
            self.handler.process(batch)
            self._last = batch[-1].number
            self.stats["notifications_processed"] += len(chunk)
            self.pending_notifications = max(0, len(pending) - start - len(chunk))
        self._purge(names)
        self.handler.present(self._known | self._bad_names)

    def _guesses(self) -> list[str]:
        """The names the next notifications will most likely have (none before the first load)."""
        if self._last is None or self.speculate <= 0:
            return []
        return [
            self._name_of(number)
            for number in range(self._last + 1, min(self._last + 1 + self.speculate, _MAX_SEQUENCE + 1))
        ]

    def _list(self, *, watch: bool) -> set[str]:
        """The notification names under the path (watch armed when asked).

        Only children not seen in the previous listing are checked for the name format, so a
        directory holding thousands of unexpired notifications costs set operations per
        callback, not a parse of every name.
        """
        with translate_errors(f"list {self.path}"):
            while True:
                try:
                    children = self.client.get_children_async(
                        self.path, watch=self._on_children if watch else None
                    ).get(timeout=self.session.timeout)
                    break
                except NoNodeError:
                    pass
                # Nothing was ever written: be told when the first notification creates the path.
                # If it appeared since the listing, that exists() set only a data watch, which
                # children never fire, so list again (with the child watch) instead.
                stat = None
                if watch:
                    stat = self.client.exists_async(self.path, watch=self._on_children).get(
                        timeout=self.session.timeout
                    )
                if stat is None:
                    self._known = set()
                    return set()
        current = set(children)
        known = current & self._known
        for name in current - self._known - self._bad_names:
            if self._valid(name):
                known.add(name)
            else:
                self._bad_names.add(name)
                self.handler.bad_notification_name(name)
        self._known = known
        return known

    def _valid(self, name: str) -> bool:
        digits = name[len(self.prefix) :]
        return name.startswith(self.prefix) and len(digits) == 10 and digits.isascii() and digits.isdigit()

    def _number(self, name: str) -> int:
        return int(name[len(self.prefix) :])

    def _name_of(self, number: int) -> str:
        return f"{self.prefix}{number:010d}"

    # ------------------------------------------------------------------------------ expiry

    def _purge(self, names: set[str]) -> None:
        """Delete what expired; a failure is logged once and retried later, never raised."""
        if not names or time.monotonic() < self._purge_after:
            return
        try:
            self._purge_expired(names)
        except ZooKeeperUnavailable:
            raise  # the connection went away: the step is retried as a whole
        except ConfigctlError as exc:
            self.stats["purge_errors"] += 1
            self._purge_after = time.monotonic() + PURGE_RETRY_S
            reason = one_line(exc)
            if reason != self._purge_error:
                log.warning(
                    "cannot purge expired notifications (trying again in %.0f s): %s",
                    PURGE_RETRY_S,
                    printable(reason),
                )
            self._purge_error = reason
        else:
            self._purge_error = None

    def _purge_expired(self, names: set[str]) -> None:
        cutoff = int(self._clock() * 1000) - self.change_expiration_ms - int(self.purge_jitter_ms)
        hint = self._purge_hint
        if hint is not None and hint[0] <= self._number(min(names)) and hint[1] >= cutoff:
            return  # the oldest node is no older than one known not to have expired
        ordered = sorted(names)

        def ctime(name: str) -> int | None:
            self.stats["purge_lookups"] += 1
            stat = self.session.exists(f"{self.path}/{name}")
            return None if stat is None else stat.ctime

        self.stats["purge_searches"] += 1
        count, boundary_ctime = expired_prefix(ordered, ctime, cutoff)
        if count < len(ordered) and boundary_ctime is not None:
            self._purge_hint = (self._number(ordered[count]), boundary_ctime)
        elif count == len(ordered):
            self._purge_hint = None
        if count:
            started = time.monotonic()
            deleted = self.session.delete_nodes(f"{self.path}/{name}" for name in ordered[:count])
            self.stats["purged_notifications"] += deleted
            self._known.difference_update(ordered[:count])
            log.info(
                "purged %d expired notification(s) up to %s in %.0f ms",
                deleted,
                printable(ordered[count - 1]),
                (time.monotonic() - started) * 1000,
            )


def _describe(exc: BaseException) -> str:
    """One line for a failed step: configctl's own message, or the exception's type and message."""
    if isinstance(exc, ConfigctlError):
        return one_line(exc)
    return f"{type(exc).__name__}: {one_line(exc)}" if str(exc) else type(exc).__name__


__all__ = ["ChangeHandler", "SequentialNotificationListener", "expired_prefix"]
