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
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from configctl.errors import InvalidInput
from configctl.zkstore import BROKER_STATE_ROOT, ZkStore

MAX_STATE_BYTES = 900_000
"""ZooKeeper refuses nodes over ~1 MiB; lists in the state are trimmed to stay below this."""


def state_path(broker_id: int) -> str:
    return f"{BROKER_STATE_ROOT}/{broker_id}"


def encode_state(document: Mapping[str, Any]) -> bytes:
    """Compact JSON; the problem lists are trimmed (oldest first) if the node would be too big."""
    doc = dict(document)
    data = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    while len(data) > MAX_STATE_BYTES:
        longest = max(("poison", "rejected", "ignored"), key=lambda k: len(doc.get(k) or []))
        items = list(doc.get(longest) or [])
        if not items:
            break
        doc[longest] = items[len(items) // 2 :]
        data = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    return data


class StatePublisher:
    """Keeps ``/configctl/brokers/<id>`` current for the listener's session."""

    def __init__(self, store: ZkStore, broker_id: int) -> None:
        self.store = store
        self.path = state_path(broker_id)
        self._owned_session: int | None = None

    def publish(self, document: Mapping[str, Any]) -> None:
        client_id = self.store.client.client_id
        session = client_id[0] if client_id else None
        self.store.publish_ephemeral(self.path, encode_state(document), owned=session == self._owned_session)
        self._owned_session = session

    def remove(self) -> None:
        """Delete the node now (a clean stop), instead of waiting for the session to close.

        Without a connection there is nothing to wait for: closing the session removes it too.
        """
        if not self.store.client.connected:
            self._owned_session = None
            return
        with contextlib.suppress(Exception):
            self.store.delete_owned(self.path)
        self._owned_session = None


class SnapshotWriter:
    """Atomically replaces ``<dir>/broker-<id>.jsonl``."""

    def __init__(self, state_dir: Path | str, broker_id: int, *, fsync: bool = True) -> None:
        self.directory = Path(state_dir).expanduser()
        self.path = self.directory / f"broker-{broker_id}.jsonl"
        self.fsync = fsync
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(f"--state-dir {self.directory}: {exc.strerror or exc}") from None
        if not os.access(self.directory, os.W_OK | os.X_OK):
            raise InvalidInput(f"--state-dir {self.directory} is not writable")

    def write(self, lines: Iterable[str]) -> int:
        """Write every line to a temporary file, then rename it over the snapshot; returns bytes written."""
        temporary = self.directory / f".{self.path.name}.{os.getpid()}.tmp"
        written = 0
        try:
            with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
                buffer: list[str] = []
                for line in lines:
                    buffer.append(line)
                    if len(buffer) >= 4096:
                        chunk = "".join(buffer)
                        handle.write(chunk)
                        written += len(chunk)
                        buffer.clear()
                chunk = "".join(buffer)
                handle.write(chunk)
                written += len(chunk)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise
        return written
