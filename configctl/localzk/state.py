"""The data directory's record of what was started from it, and the lock that serialises changes.

The data directory *is* a local server's identity: ``configctl zk stop`` run from another terminal
(or a test's teardown) must find exactly the processes ``start`` launched. So ``start`` writes
``configctl-zk.json`` (pids, start times, ports, commands) and every other operation works from
it; the file exists only while something was started and not stopped. What the server *is*
(port, size, TLS, SASL user) is also written to ``configctl-zk-identity.json``, which a stop
keeps, so the next start is the same server. One ``flock`` per data
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

from configctl.errors import EnvironmentProblem, InvalidInput, one_line
from configctl.files import read_json, replace_atomically
from configctl.localzk.client import ClientSettings
from configctl.localzk.ports import HOST
from configctl.localzk.sasl import DEFAULT_USER
from configctl.localzk.security import PLAIN, Security

STATE_FILE = "configctl-zk.json"
LOCK_FILE = ".configctl-zk.lock"
IDENTITY_FILE = "configctl-zk-identity.json"
DEFAULT_PORT = 2181


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


@dataclass(frozen=True)
class Identity:
    """What a data directory's server *is*, kept across stops: its port, size, TLS and SASL user.

    The state file goes with the processes (``zk stop`` removes it); this record stays, so
    ``zk start --data-dir D`` with no other option starts the same server again: on the port its
    clients know, with the TLS and SASL they were told to use. ``None`` in a field: not given.
    """

    port: int | None = None
    nodes: int | None = None
    tls: bool | None = None
    sasl_user: str | None = None
    sasl: bool | None = None

    def over(self, recorded: Identity | None) -> Identity:
        """These values where given, else ``recorded``'s, else the defaults (2181, one node, plain)."""
        base = recorded or Identity()
        sasl = self.sasl if self.sasl is not None else bool(base.sasl)
        return Identity(
            port=self.port if self.port is not None else base.port or DEFAULT_PORT,
            nodes=self.nodes if self.nodes is not None else base.nodes or 1,
            tls=self.tls if self.tls is not None else bool(base.tls),
            sasl_user=(self.sasl_user or base.sasl_user or DEFAULT_USER) if sasl else None,
            sasl=sasl,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "port": self.port,
            "nodes": self.nodes,
            "tls": self.tls,
            "sasl_user": self.sasl_user,
        }

    @classmethod
    def from_json(cls, raw: Any) -> Identity:
        if not isinstance(raw, dict):
            raise TypeError("not a JSON object")
        port, nodes, tls, user = raw.get("port"), raw.get("nodes"), raw.get("tls"), raw.get("sasl_user")
        if not (isinstance(port, int) and isinstance(nodes, int) and isinstance(tls, bool)):
            raise TypeError("port, nodes and tls must be a number, a number and true/false")
        if user is not None and not isinstance(user, str):
            raise TypeError("sasl_user must be text")
        return cls(port, nodes, tls, user, user is not None)


def identity_file(data_dir: Path) -> Path:
    return data_dir / IDENTITY_FILE


def read_identity(data_dir: Path) -> Identity | None:
    """The identity the server was last started with, or None before its first start.

    A damaged record is a one-line error: starting on a default port instead would hand the
    server's clients a different server.
    """
    path = identity_file(data_dir)
    if not path.exists():
        return None
    try:
        return Identity.from_json(read_json(path, "server identity file", limit=64 * 1024))
    except InvalidInput as exc:
        raise EnvironmentProblem(str(exc)) from None
    except (ValueError, TypeError) as exc:
        raise EnvironmentProblem(
            f"unreadable server identity file {path}: {one_line(exc)} (fix it, or delete it and give "
            "--port, --nodes, --tls and --sasl again)"
        ) from None


def write_identity(data_dir: Path, identity: Identity) -> None:
    """Record the identity a server just started with, atomically."""
    replace_atomically(identity_file(data_dir), json.dumps(identity.to_json(), indent=2) + "\n")


def state_file(data_dir: Path) -> Path:
    return data_dir / STATE_FILE


def read_state(data_dir: Path) -> State | None:
    """The recorded state, or None when nothing was started; a damaged file is a one-line error."""
    path = state_file(data_dir)
    if not path.exists():  # nothing started (or the data dir is missing, or is a file)
        return None
    try:
        raw = read_json(path, "state file")
        return State(
            raw.get("started_at"),
            [Node.from_json(node) for node in raw["nodes"]],
            Security.from_json(raw.get("security"), data_dir),
        )
    except InvalidInput as exc:  # unreadable, not a file, not JSON: the one-line reason
        raise EnvironmentProblem(f"unreadable {exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EnvironmentProblem(f"unreadable state file {path}: {one_line(exc)}") from None


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
