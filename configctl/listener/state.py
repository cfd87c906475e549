"""Where a running listener shows what it applied (docs/reference/state-and-fleet-nodes.md).

* The ephemeral node ``/configctl/brokers/<id>``: exists exactly while the listener's session
  does, so "is broker 3's listener up, and how far has it got" is one ZooKeeper read. It is
  created for every new session (ephemeral nodes die with theirs) and updated after each batch
  (:class:`StatePublisher`, through :class:`configctl.zk.ephemeral.OwnedEphemeral`).
* The persistent node ``/configctl/fleet/<id>`` (:class:`FleetRecorder`): who this broker is and
  how far it got, kept after the listener dies, so ``configctl status`` still lists a broker whose
  listener is down. Written at start, when the applied change moves (at most about once a
  second) and at a clean stop (through :class:`configctl.zk.persistent.PersistentNode`).
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


class StatePublisher:
    """Keeps ``/configctl/brokers/<id>`` current for the listener's session."""

    def __init__(self, session: ZkSession, broker_id: int) -> None:
        self.node = OwnedEphemeral(session, BrokerStateZNode.path(broker_id))

    @property
    def path(self) -> str:
        return self.node.path

    def publish(self, document: Mapping[str, Any]) -> None:
        self.node.publish(BrokerStateZNode.encode(document))

    def remove(self) -> None:
        """Delete the node now (a clean stop), instead of waiting for the session to close."""
        with contextlib.suppress(Exception):
            self.node.remove()


class FleetRecorder:
    """Keeps the persistent ``/configctl/fleet/<id>`` record; throttled, never on the hot path.

    :meth:`update` writes at once when the last write is older than the interval, else it leaves
    a timer to write the newest value when the interval is over: a burst of 1,000 changes costs
    two writes, and the record is never more than about a second behind once changes stop.
    ``last_applied_change`` is read through ``progress`` when the write happens, so a delayed
    write carries the newest value, not the one that scheduled it.
    """

    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        progress: Callable[[], int | None],
        *,
        interval: float = FLEET_RECORD_INTERVAL_S,
        on_error: Callable[[Exception], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.broker_id = broker_id
        self.node = PersistentNode(session, FleetRecordZNode.path(broker_id))
        self.path = self.node.path
        self.host = socket.gethostname()
        self.interval = interval
        self._progress = progress
        self._on_error = on_error
        self._clock = clock
        self._lock = threading.Lock()
        self._written_at: float | None = None
        self._written: int | object | None = _NOTHING
        self._timer: threading.Timer | None = None
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
                    self._timer = threading.Timer(wait, self._deferred)
                    self._timer.daemon = True
                    self._timer.start()
                return
        self.write()

    def _deferred(self) -> None:
        with self._lock:
            self._timer = None
            if self._closed:
                return
        self.write()

    def write(self, *, raise_errors: bool = False) -> None:
        """Write the record now; errors go to ``on_error`` (raised with ``raise_errors`` or without one)."""
        number = self._progress()
        now_ms = int(time.time() * 1000)
        data = FleetRecordZNode.encode(self.broker_id, self.host, now_ms, number)
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
