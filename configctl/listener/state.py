"""Where a running listener shows what it applied (Contract 4).

* The ephemeral node ``/configctl/brokers/<id>``: exists exactly while the listener's session
  does, so "is broker 3's listener up, and how far has it got" is one ZooKeeper read. It is
  created for every new session (ephemeral nodes die with theirs) and updated after each batch.
* With a state directory, ``<dir>/broker-<id>.jsonl``: written to a temporary file in the same
  directory and renamed over the old one (``os.replace`` is atomic on POSIX), so a reader such
  as the Spark audit never sees half a snapshot, and a crash leaves the previous one intact.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from configctl import snapshot
from configctl.errors import InvalidInput
from configctl.files import write_atomically
from configctl.zk.ephemeral import OwnedEphemeral
from configctl.zk.session import ZkSession
from configctl.znodes import BrokerStateZNode


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
        return write_atomically(self.path, lines, fsync=self.fsync)
