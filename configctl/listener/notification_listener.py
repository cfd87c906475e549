"""Kafka's ``ZkNodeChangeNotificationListener``: follows the change notifications for a handler.

What a change *means* is the handler's (:mod:`configctl.listener.manager`, Kafka's
``DynamicConfigManager``); every ZooKeeper idea is a recipe of :mod:`configctl.zk`: the child
watch and the notification reads (:class:`~configctl.zk.watchers.NotificationWatch`), the
session's state (:class:`~configctl.zk.watchers.SessionWatch`), expiry
(:class:`~configctl.zk.purge.NotificationPurge`), the delays between failed steps
(:class:`~configctl.retrying.Backoff`). This module is the order they run in, with Kafka's gaps
closed:

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
* **One state write per step**: the handler publishes what it applied
  (:meth:`ChangeHandler.flush`, a ZooKeeper write through the quorum) once the notifications the
  step listed are applied, however many batches of :data:`FETCH_BATCH` they make, but never
  later than :data:`PUBLISH_WITHIN_S` after the first batch not yet published, so ``--wait``
  hears of a long catch-up as it goes. Publishing is not put off to a later step: a session's
  requests are answered in order, so the next step's reads would wait behind the write anyway,
  and a batch would be published a whole step later.
* **Expiry without a round trip per node**: see :mod:`configctl.zk.purge`; best effort, it
  never holds up applying.
* **Threading**: the recipes' callbacks only set flags; one worker thread does every ZooKeeper
  call (never blocking kazoo's event thread) and retries failed work with backoff. A failed step
  is logged once, on one line, at WARNING (later failures of the same kind at DEBUG), counted,
  and kept as ``last_error``; :attr:`pending_since` says since when work has been waiting, which
  is how :meth:`SequentialNotificationListener.stalled` tells a stall from a quiet period.

kazoo forgets its watches when a connection drops, even when the session survives, so every
(re)connection triggers at least a re-list with the watch re-armed; a new session id triggers a
full reload.

A watch can also be lost without any connection event: ZooKeeper does not tell a watcher that
may no longer read the directory (its READ right revoked for a while), and a watch is one-shot.
So the worker also re-lists by itself every :data:`RECHECK_S` seconds (jittered), busy or not: a
listener that missed an event catches up within that bound, and one that cannot list says so (the
step fails, is logged, and ``/healthz`` turns to "stalled" once it has failed for
``stall_after``). That re-check also has the handler compare what the notifications since the
last one applied with what ZooKeeper holds (:meth:`ChangeHandler.verify`), so a value in force
that is not ZooKeeper's is put right within the same bound, whatever left it there. The
directory deleted and created again (its counter restarts at 0) is seen by its creation zxid and
answered with a full reload that follows the new numbering.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections import ChainMap
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from configctl.entities import CONFIG_ROOT
from configctl.errors import ConfigctlError, InvalidInput, ZooKeeperUnavailable, one_line, printable
from configctl.listener.records import RawNotification
from configctl.retrying import Backoff
from configctl.zk.purge import NotificationPurge
from configctl.zk.session import ZkSession
from configctl.zk.watchers import NotificationWatch, Notified, SessionWatch
from configctl.znodes import CHANGES_PATH, NOTIFICATION_PREFIX

log = logging.getLogger("configctl.listener")

DEFAULT_CHANGE_EXPIRATION_MS = 900_000
FETCH_BATCH = 10_000
"""Notifications fetched (and applied) at a time when catching up a backlog."""
_BACKOFF_START = 0.1
_BACKOFF_MAX = 2.0
SPECULATE = 4
"""Notifications read ahead, in the listing's round trip, after the last one processed."""
RECHECK_S = 30.0
"""A re-list (and the handler's comparison with ZooKeeper) this often, busy or not, even when no
watch fired (each wait drawn from 0.8-1.2 times it)."""
PUBLISH_WITHIN_S = 1.0
"""While a step applies batch after batch (a backlog), what it applied is published
(:meth:`ChangeHandler.flush`) at least this often; else once, at the end of the step."""


class ChangeHandler(Protocol):
    """What the listener drives: a complete load, and batches of new notifications."""

    def load_all(self, up_to: int | None) -> None:
        """Read and apply everything; every change numbered ``<= up_to`` is reflected in what is read."""

    def process(self, notifications: Sequence[RawNotification], changed: Mapping[str, Any]) -> None:
        """Apply new notifications (ascending, none missing between them).

        ``changed``: config nodes already read, by path (``(data, stat)``, None when absent, or
        the error that kept one from being read), each read after every one of ``notifications``
        was created: a handler may take them as the reads the notifications call for."""

    def flush(self) -> None:
        """Publish what the batches since the last flush applied (optional: a handler without it
        publishes in :meth:`process`)."""

    def verify(self, applied_zxid: int | None) -> None:
        """The periodic re-check (optional): compare what the notifications since the last one
        applied with what ZooKeeper holds now, and apply what differs. ``applied_zxid``: the
        transaction of the newest notification applied (a node last written at or before it
        must be in force as it is; None: none applied since the last full load)."""

    def bad_notification_name(self, name: str) -> None:
        """A child of the notification path that is not a notification."""

    def present(self, names: set[str]) -> None:
        """The notifications that exist now (after a listing and purge)."""


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
        recheck_s: float = RECHECK_S,
        publish_within_s: float = PUBLISH_WITHIN_S,
        tree: str | None = CONFIG_ROOT,
    ) -> None:
        """``tree``: a path above ``path`` to keep a persistent recursive watch on (see
        :class:`~configctl.zk.watchers.NotificationWatch`), so a change costs one round trip of
        reads; None, or a path not above ``path``, for a one-shot child watch."""
        if change_expiration_ms <= 0:
            raise InvalidInput("change expiration must be a positive number of milliseconds")
        if not recheck_s > 0:
            raise InvalidInput("the re-check interval must be a positive number of seconds")
        self.recheck_s = float(recheck_s)
        self.publish_within_s = float(publish_within_s)
        self.handler = handler
        self._flush = getattr(handler, "flush", None)
        self._verify = getattr(handler, "verify", None)
        self._unflushed_since: float | None = None  # monotonic time of the first batch not yet flushed
        self.change_expiration_ms = int(change_expiration_ms)
        self.session_watch = SessionWatch(
            session,
            on_connected=self._on_connected,
            on_suspended=lambda: log.warning("connection to ZooKeeper suspended; waiting to reconnect"),
            on_lost=lambda: log.warning(
                "ZooKeeper session lost; everything will be reloaded when a new session starts"
            ),
        )
        self.watch = NotificationWatch(
            session,
            path,
            prefix,
            on_change=self.request_check,
            on_bad_name=lambda name: self.handler.bad_notification_name(name),
            tree=tree if tree is not None and path.startswith(tree.rstrip("/") + "/") else None,
        )
        self.purge = NotificationPurge(
            session,
            path,
            expiration_ms=self.change_expiration_ms,
            jitter_ms=purge_jitter_ms,
            clock=clock,
            logger=log,
        )
        self.fetch_batch = max(1, fetch_batch)
        self.speculate = max(0, speculate)
        self._name = name
        self._cond = threading.Condition()
        self._need_reload = False
        self._need_check = False
        self._need_list = False  # the next check lists, whatever the tree watch says
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._loaded = threading.Event()
        self._loaded_session: int | None = None
        self._last: int | None = None
        self._applied_zxid: int | None = None  # the transaction of the newest notification applied
        self._recheck_at = 0.0  # monotonic time of the next periodic re-check (set by start)
        self.last_error: str | None = None
        self.start_error: ConfigctlError | None = None
        """Why the first load failed (None while it has not, or once it succeeded)."""
        self.pending_since: float | None = None
        """Monotonic time since which work (a watch, a reconnection, a reload) waits undone."""
        self.pending_notifications = 0
        """Notifications seen in the last listing but not yet applied."""
        self._counts: dict[str, int] = {
            "full_loads": 0,
            "checks": 0,
            "notifications_processed": 0,
            "prefetched_notifications": 0,
            "rechecks": 0,
            "errors": 0,
        }
        self.stats: ChainMap[str, int] = ChainMap(self._counts, self.purge.stats)
        """Counters, live: the listener's and the purge's (``purged_notifications``, ...)."""

    # ------------------------------------------------------------------------------ lifecycle

    @property
    def last_processed(self) -> int | None:
        return self._last

    @property
    def connected(self) -> bool:
        return self.session_watch.connected

    @property
    def session_id(self) -> int | None:
        return self.session_watch.session_id

    def start(self) -> None:
        """Begin: a full load, the watch, then processing; returns at once (see :meth:`wait_loaded`)."""
        if self._thread is not None:
            return
        self.session_watch.start()
        with self._cond:
            self._need_reload = True
            self._recheck_at = self._next_recheck()
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

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop, waiting at most ``timeout`` for the worker to end its step; False when it had not
        (a request to a ZooKeeper that does not answer, say): it ends on its own once that step
        does, doing nothing more."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self.session_watch.stop()
        self.watch.close()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            return not thread.is_alive()
        return True

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

    def _on_connected(self, session_id: int | None) -> None:
        """kazoo's connection thread: never block here, only flag work for the worker."""
        with self._cond:
            if session_id != self._loaded_session:
                self._need_reload = True
            else:
                self._need_check = True
            self._mark_pending()
            self._cond.notify_all()

    # ------------------------------------------------------------------------------ worker

    def _run(self) -> None:
        backoff = Backoff(_BACKOFF_START, _BACKOFF_MAX)
        failures = 0
        warned: set[str] = set()  # error kinds already logged at WARNING in this run of failures
        while True:
            with self._cond:
                recheck = False
                while not self._stopping:
                    remaining = self._recheck_at - time.monotonic()
                    if remaining <= 0:  # look anyway, busy or not: a watch may be lost, a value stale
                        self._need_check = True
                        self._need_list = True
                        self._counts["rechecks"] += 1
                        self._recheck_at = self._next_recheck()
                        recheck = True
                        break
                    if self._need_reload or self._need_check:
                        break
                    self._cond.wait(remaining)
                stopping = self._stopping
                reload, self._need_reload = self._need_reload, False
                self._need_check = False
            if stopping:
                # a batch applied in the last moments still reaches the snapshot and the state
                # node (never waiting on a connection that is down: the session's end removes it)
                if self._unflushed_since is not None and self.session_watch.connected:
                    with contextlib.suppress(Exception):
                        self._flush_if_due(False)
                return
            try:
                if not reload and self.session_watch.session_id != self._loaded_session:
                    reload = True
                if reload:
                    self._reload()
                    reload = False
                self._check(recheck=recheck)
                if failures:
                    log.info("listener recovered after %d failed attempt(s)", failures)
                failures = 0
                backoff.reset()
                warned.clear()
                self.last_error = None
                with self._cond:
                    if not (self._need_reload or self._need_check):
                        self.pending_since = None
                self._flush_if_due(False)
            except Exception as exc:
                failures += 1
                self._counts["errors"] += 1
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
                with contextlib.suppress(Exception):  # what was applied before the failure is published
                    self._flush_if_due(False)
                delay = backoff.next_delay()
                with self._cond:
                    if reload:
                        self._need_reload = True
                    self._need_check = True
                    self._need_list = True  # what the failed step took of the watch's hints is gone
                    self._mark_pending()
                    if not self._stopping:
                        self._cond.wait(delay)

    def _next_recheck(self) -> float:
        return time.monotonic() + self.recheck_s * random.uniform(0.8, 1.2)

    def _flush_if_due(self, more: bool) -> None:
        """Publish what was applied, unless ``more`` of the step's batches follow and the bound
        has not passed: a step catching up a backlog writes its state once, not once a batch."""
        since = self._unflushed_since
        if since is None or self._flush is None:
            return
        if more and time.monotonic() - since < self.publish_within_s:
            return
        self._unflushed_since = None
        self._flush()

    def _reload(self) -> None:
        """Full load for the current session: N0, load everything, then the watch (in _check)."""
        session = self.session_watch.session_id
        if session is None:
            raise ZooKeeperUnavailable("not connected to ZooKeeper")
        self.watch.forget_hints()  # everything is read below
        names = self.watch.list(watch=False)
        up_to = self.watch.number(max(names)) if names else None
        if self.watch.recreated:
            self._renumbered()
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
        self._unflushed_since = None  # the load published everything
        if up_to is not None:
            self._last = up_to if self._last is None else max(self._last, up_to)
        self._loaded_session = session
        self.purge.forget_hint()
        self._counts["full_loads"] += 1
        self.start_error = None
        self._loaded.set()

    def _check(self, *, recheck: bool = False) -> None:
        """List, process what is new, purge what expired: one round trip of reads per change.

        With the listing go, in the same round trip, the reads of the new notifications and of
        the config nodes the tree watch saw change (:meth:`NotificationWatch.check`): the handler
        takes those as the reads the notifications call for, so the usual change costs one
        round trip of reads, not the three of list, read the notification, read its entity.
        Every notification handed over was made before those reads were taken; one that only
        a later listing shows waits for the next check (asked for at once), whose reads follow it.
        Whatever the listing shows and the hints missed is read after.

        A periodic ``recheck`` then has the handler compare what it applied with what ZooKeeper
        holds (:meth:`ChangeHandler.verify`): a value in force that is not ZooKeeper's is put
        right within one re-check interval, whatever left it there.

        Names sort as their numbers (:class:`~configctl.zk.watchers.NotificationWatch`): finding
        the new ones is a string comparison per child, and only those are parsed and sorted.
        """
        watch = self.watch
        self._counts["checks"] += 1
        with self._cond:
            listing, self._need_list = self._need_list, False
        names, prefetched, changed, again = watch.check(self._last, self.speculate, listing=listing).result()
        if watch.recreated:  # numbers restarted: what is there now cannot be told from what was
            self._renumbered()
            self.request_reload()
            return
        if again:
            self.request_check()
            if not names:
                return
        if self._last is None:
            pending = sorted(names)
        else:
            floor = watch.name_of(self._last)
            pending = sorted(name for name in names if name > floor)
        self.pending_notifications = len(pending)
        for start in range(0, len(pending), self.fetch_batch):
            chunk = pending[start : start + self.fetch_batch]
            missing = [name for name in chunk if prefetched.get(name) is None]
            self._counts["prefetched_notifications"] += len(chunk) - len(missing)
            fetched = watch.read(missing)
            reads = [prefetched.get(name) or fetched[name] for name in chunk]
            found_all = [found for found in reads if found is not None]
            if len(found_all) < len(reads):
                gone = next(name for name, found in zip(chunk, reads, strict=True) if found is None)
                log.warning(
                    "notification %s vanished before it was read; reloading everything", printable(gone)
                )
                self.request_reload()
                return
            batch = [
                RawNotification(watch.number(name), name, None, one_line(found))
                if isinstance(found, Exception)
                else RawNotification(watch.number(name), name, found.data, ctime_ms=found.ctime_ms)
                for name, found in zip(chunk, found_all, strict=True)
            ]
            self.handler.process(batch, changed)
            if self._unflushed_since is None:
                self._unflushed_since = time.monotonic()
            self._last = batch[-1].number
            zxids = [found.zxid for found in found_all if isinstance(found, Notified)]
            if zxids:
                self._applied_zxid = max(zxids[-1], self._applied_zxid or 0)
            self._counts["notifications_processed"] += len(chunk)
            self.pending_notifications = max(0, len(pending) - start - len(chunk))
            self._flush_if_due(start + len(chunk) < len(pending))
        if recheck and self._verify is not None:
            self._verify(self._applied_zxid)
        watch.forget(self.purge.purge(names))
        self.handler.present(watch.present())

    def _renumbered(self) -> None:
        log.warning(
            "%s was deleted and created again: its change counter restarted; reloading everything "
            "and following the new numbering",
            printable(self.watch.path),
        )
        self._last = None


def _describe(exc: BaseException) -> str:
    """One line for a failed step: configctl's own message, or the exception's type and message."""
    if isinstance(exc, ConfigctlError):
        return one_line(exc)
    return f"{type(exc).__name__}: {one_line(exc)}" if str(exc) else type(exc).__name__


__all__ = ["ChangeHandler", "SequentialNotificationListener"]
