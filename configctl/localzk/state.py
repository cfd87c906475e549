"""The data directory's record of what was started from it, and the lock that serialises changes.

The data directory *is* a local server's identity: ``configctl zk stop`` run from another terminal
(or a test's teardown) must find exactly the processes ``start`` launched. So ``start`` writes
``configctl-zk.json`` (pids, start times, ports, commands) and every other operation works from
it; the file exists only while something was started and not stopped. One ``flock`` per data
directory keeps two ``zk start`` at once from launching two servers on the same data.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from configctl.errors import EnvironmentProblem, InvalidInput
from configctl.files import read_text, replace_atomically
from configctl.localzk.client import ClientSettings
from configctl.localzk.ports import HOST
from configctl.localzk.security import PLAIN, Security

STATE_FILE = "configctl-zk.json"
LOCK_FILE = ".configctl-zk.lock"


def default_data_dir() -> Path:
    """``~/.configctl/zookeeper``: where ``configctl zk`` keeps its server unless told otherwise."""
    return Path.home() / ".configctl" / "zookeeper"


@dataclass
class Node:
    """One server as recorded: its ports, directory, the exact command, and the process it became."""

    id: int
    client_port: int
    quorum_port: int | None
    election_port: int | None
    dir: Path
    command: list[str]
    pid: int | None = None
    create_time: float | None = None

    @property
    def config_file(self) -> Path:
        return self.dir / "zoo.cfg"

    @property
    def log_file(self) -> Path:
        return self.dir / "zookeeper.log"

    @property
    def console_file(self) -> Path:
        return self.dir / "console.log"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "client_port": self.client_port,
            "quorum_port": self.quorum_port,
            "election_port": self.election_port,
            "dir": str(self.dir),
            "command": self.command,
            "pid": self.pid,
            "create_time": self.create_time,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Node:
        return cls(
            id=int(raw["id"]),
            client_port=int(raw["client_port"]),
            quorum_port=raw.get("quorum_port"),
            election_port=raw.get("election_port"),
            dir=Path(raw["dir"]),
            command=list(raw["command"]),
            pid=raw.get("pid"),
            create_time=raw.get("create_time"),
        )


@dataclass
class State:
    """The whole record: when it was started, its nodes, and whether it runs TLS and SASL."""

    started_at: str | None
    nodes: list[Node]
    security: Security = field(default=PLAIN)

    @property
    def connect_string(self) -> str:
        return ",".join(f"{HOST}:{node.client_port}" for node in self.nodes)

    def client(self) -> ClientSettings:
        """What a client needs to reach these servers."""
        return self.security.client(self.connect_string)

    def node(self, node_id: int) -> Node | None:
        return next((node for node in self.nodes if node.id == node_id), None)


def state_file(data_dir: Path) -> Path:
    return data_dir / STATE_FILE


def read_state(data_dir: Path) -> State | None:
    """The recorded state, or None when nothing was started; a damaged file is a one-line error."""
    path = state_file(data_dir)
    if not path.exists():  # nothing started (or the data dir is missing, or is a file)
        return None
    try:
        raw = json.loads(read_text(path, "state file"))
        return State(
            raw.get("started_at"),
            [Node.from_json(node) for node in raw["nodes"]],
            Security.from_json(raw.get("security"), data_dir),
        )
    except InvalidInput as exc:  # unreadable, or not a file: the one-line reason
        raise EnvironmentProblem(str(exc)) from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EnvironmentProblem(f"unreadable state file {path}: {exc}") from None


def write_state(data_dir: Path, state: State) -> None:
    """Replace the record atomically, so a reader never sees half of it."""
    document = {
        "version": 1,
        "data_dir": str(data_dir),
        "started_at": state.started_at,
        "connect": state.connect_string,
        "nodes": [node.to_json() for node in state.nodes],
        "security": state.security.to_json(),
    }
    replace_atomically(state_file(data_dir), json.dumps(document, indent=2) + "\n")


@contextlib.contextmanager
def locked(data_dir: Path) -> Iterator[None]:
    """Serialise start/stop/kill on one data dir across processes (two ``zk start`` at once).

    File-system trouble inside (an unwritable or missing data dir) becomes a one-line error.
    """
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        handle = open(data_dir / LOCK_FILE, "a")  # noqa: SIM115 - held across the yield
    except OSError as exc:
        raise EnvironmentProblem(f"cannot use data dir {data_dir}: {exc.strerror}") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            raise EnvironmentProblem(f"cannot use data dir {data_dir}: {exc.strerror}{where}") from None
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
