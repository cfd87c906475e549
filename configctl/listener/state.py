"""Where a running listener shows what it applied (docs/reference/state-and-fleet-nodes.md).

* The ephemeral node ``/configctl/brokers/<id>``: exists exactly while the listener's session
  does, so "is broker 3's listener up, and how far has it got" is one ZooKeeper read. It is
  created for every new session (ephemeral nodes die with theirs) and updated after each batch
  (:class:`StatePublisher`, through :class:`configctl.zk.ephemeral.OwnedEphemeral`).
* The persistent node ``/configctl/fleet/<id>`` (:class:`FleetRecorder`): who this broker is and
  how far it got, kept after the listener dies, so ``configctl status`` still lists a broker whose
  listener is down. Written at start, when the applied change moves (at most about once a
  second) and at a clean stop (through :class:`configctl.zk.persistent.PersistentNode`).

Every state node and fleet record write is a ZooKeeper write, agreed by the ensemble's quorum;
at a thousand brokers each one is a thousand. So the fleet record, when it is due, is written in
the same transaction as the state node (:meth:`StatePublisher.publish` with ``also``): one
write per batch, not two. Only when no batch comes to carry it does a timer write it alone.
* With a state directory, ``<dir>/broker-<id>.jsonl``: written to a temporary file in the same
  directory and renamed over the old one (``os.replace`` is atomic on POSIX), so a reader such
  as the Spark audit never sees half a snapshot, and a crash leaves the previous one intact.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from configctl import snapshot
from configctl.errors import InvalidInput
from configctl.files import write_atomically
from configctl.zk.ephemeral import OwnedEphemeral
from configctl.zk.persistent import PersistentNode
from configctl.zk.session import ZkSession
from configctl.znodes import BrokerStateZNode, FleetRecordZNode

FLEET_RECORD_INTERVAL_S = 1.0
"""The fleet record is rewritten at most this often while changes flow (plus once at the end)."""
FLEET_RECORD_GRACE_S = 0.5
"""A record not carried by a batch (in the state node's transaction) is written alone interval +
grace after the last batch: batches less than that apart never cost a write of their own, and
once they stop the record is at most that far behind."""


class StatePublisher:
    """Keeps ``/configctl/brokers/<id>`` current for the listener's session."""

    def __init__(self, session: ZkSession, broker_id: int) -> None:
        self.session = session
        self.node = OwnedEphemeral(session, BrokerStateZNode.path(broker_id))
        self._published_in: int | None = None  # the session whose node the last publish wrote
        self.writes = 0
        """Write requests sent (a state node alone, or with a record in one transaction)."""

    @property
    def path(self) -> str:
        return self.node.path

    def publish(self, document: Mapping[str, Any], *, also: tuple[str, bytes] | None = None) -> bool:
        """Write the state node; with ``also`` (a persistent node's path and data) in the same
        transaction when that is possible. True when ``also`` was written; False when it was not
        (the caller writes it alone): the node is not yet ours in this session (the transaction
        cannot create an ephemeral node or replace a predecessor's), or the transaction failed
        (the record missing, say), in which case the state node is written on its own."""
        data = BrokerStateZNode.encode(document)
        session_id = self.session.session_id
        ours = session_id is not None and session_id == self._published_in
        if also is not None and ours:
            together = self.session.set_together([(self.node.path, data), also])
            self.writes += 1
            if together:
                return True
        self.node.publish(data)
        self.writes += 1
        self._published_in = session_id
        return False

    def remove(self) -> None:
        """Delete the node now (a clean stop), instead of waiting for the session to close."""
        self._published_in = None
        with contextlib.suppress(Exception):
            self.node.remove()


class FleetRecorder:
    """Keeps the persistent ``/configctl/fleet/<id>`` record; throttled, never on the hot path.

    The listener asks :meth:`due` after each batch: a record that moved and whose last write is
    older than the interval goes into the state node's transaction (then :meth:`wrote`). Else
    :meth:`update` writes at once when due, or leaves a timer to write the newest value
    interval + grace after the last write, should no batch carry it first: a burst of 1,000
    changes costs at most two writes of its own, a steady stream none, and the record is never
    more than about interval + grace behind once changes stop. ``last_applied_change`` is read
    through ``progress`` when the write happens, so a delayed write carries the newest value,
    not the one that scheduled it.
    """

    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        progress: Callable[[], int | None],
        *,
        interval: float = FLEET_RECORD_INTERVAL_S,
        grace: float = FLEET_RECORD_GRACE_S,
        on_error: Callable[[Exception], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        kind: Callable[[], str] = lambda: BrokerStateZNode.CONFIG_MANAGER,
    ) -> None:
        self.broker_id = broker_id
        self._kind = kind  # the listener's kind: a sidecar's record says so after it stops
        self.node = PersistentNode(session, FleetRecordZNode.path(broker_id))
        self.path = self.node.path
        self.host = socket.gethostname()
        self.interval = interval
        self.grace = grace
        self._progress = progress
        self._on_error = on_error
        self._clock = clock
        self._lock = threading.Lock()
        self._written_at: float | None = None
        self._written: int | object | None = _NOTHING
        self._timer: threading.Timer | None = None
        self._last_batch: float | None = None  # when later() last saw a batch
        self._closed = False
        self.writes = 0

    def update(self, *, force: bool = False) -> None:
        """Record the current progress now (``force``), or within about one interval."""
        with self._lock:
            if self._closed and not force:
                return
            if self._written == self._progress() and not force:
                return
            wait = 0.0
            if not force and self._written_at is not None:
                wait = self._written_at + self.interval - self._clock()
            if wait > 0:
                if self._timer is None:
                    self._start_timer(wait + self.grace)
                return
        self.write()

    def later(self) -> None:
        """The record moved but was not due when the state node was written: leave the timer to
        write it should no batch carry it first. The timer waits until interval + grace after
        the last batch (and at least the interval after the last write), so a stream of batches
        less than that apart always carries the record, and once batches stop it is written
        alone that long after the last. Never writes at once: by the time the state node's
        write returns the interval may have passed, and the next batch is meant to carry it."""
        with self._lock:
            self._last_batch = self._clock()
            if self._closed or self._timer is not None or self._written == self._progress():
                return
            self._arm()

    def _arm(self) -> None:
        """Start the timer for when :meth:`later`'s wait is over (under the lock)."""
        wait = self._last_batch + self.interval + self.grace - self._clock()
        if self._written_at is not None:
            wait = max(wait, self._written_at + self.interval - self._clock())
        self._start_timer(max(0.0, wait))

    def _start_timer(self, delay: float) -> None:
        """The one pending deferred write, ``delay`` seconds from now (under the lock)."""
        self._timer = threading.Timer(delay, self._deferred)
        self._timer.daemon = True
        self._timer.start()

    def due(self) -> tuple[int | None, bytes] | None:
        """The record to write now with the state node (its progress and bytes), or None when it
        has not moved or was written less than an interval ago."""
        with self._lock:
            if self._closed:
                return None
            number = self._progress()
            if self._written == number:
                return None
            if self._written_at is not None and self._clock() < self._written_at + self.interval:
                return None
        return number, self._encode(number)

    def wrote(self, number: int | None) -> None:
        """The record of ``number`` (from :meth:`due`) was written with the state node."""
        with self._lock:
            self._written, self._written_at = number, self._clock()
            self.writes += 1
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _encode(self, number: int | None) -> bytes:
        return FleetRecordZNode.encode(
            self.broker_id, self.host, int(time.time() * 1000), number, self._kind()
        )

    def _deferred(self) -> None:
        with self._lock:
            self._timer = None
            if self._closed:
                return
            if self._last_batch is not None and self._clock() < self._last_batch + self.interval + self.grace:
                self._arm()  # a batch came since this timer was set: it may yet carry the record
                return
        self.write()

    def write(self, *, raise_errors: bool = False) -> None:
        """Write the record now; errors go to ``on_error`` (raised with ``raise_errors`` or without one)."""
        number = self._progress()
        data = self._encode(number)
        try:
            self.node.write(data)
        except Exception as exc:
            if raise_errors or self._on_error is None:
                raise
            self._on_error(exc)
            return
        with self._lock:
            self._written, self._written_at = number, self._clock()
            self.writes += 1

    def close(self) -> None:
        """No more deferred writes (the caller makes the final one with ``update(force=True)``)."""
        with self._lock:
            self._closed = True
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()


_NOTHING = object()


class SnapshotWriter:
    """Atomically replaces ``<dir>/broker-<id>.jsonl`` (:func:`configctl.files.write_atomically`)."""

    def __init__(self, state_dir: Path | str, broker_id: int, *, fsync: bool = True) -> None:
        self.directory = Path(state_dir).expanduser()
        self.path = self.directory / snapshot.file_name(broker_id)
        self.fsync = fsync
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(f"--state-dir {self.directory}: {exc.strerror or exc}") from None
        if not os.access(self.directory, os.W_OK | os.X_OK):
            raise InvalidInput(f"--state-dir {self.directory} is not writable")

    def write(self, lines: Iterable[str]) -> int:
        """Write every line, then rename over the snapshot; returns characters written."""
        return write_atomically(self.path, lines, private=True, fsync=self.fsync)  # digests of secrets
