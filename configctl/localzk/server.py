"""A local ZooKeeper server or ensemble, named by its data directory: start, status, stop, faults.

This is the composition: :mod:`~configctl.localzk.runtime` finds Java and the jars,
:mod:`~configctl.localzk.nodeconfig` writes each node's files, :mod:`~configctl.localzk.process`
launches and signals the processes, :mod:`~configctl.localzk.state` records them so any later
command (another terminal, a test teardown) can find them, and :mod:`~configctl.localzk.probe`
tells when they serve. This module holds the rules of the whole: what a start requires, what
happens on a failed start (everything launched is stopped again, nothing stays recorded), and
what ``status`` reports.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from configctl.errors import EnvironmentProblem, InvalidInput, NotFound
from configctl.localzk import probe
from configctl.localzk.client import ENV_FILE, ClientSettings
from configctl.localzk.nodeconfig import TICK_TIME_MS, write_node_configs
from configctl.localzk.ports import HOST, pick_free_ports, port_is_free
from configctl.localzk.process import SIGNAL_TIMEOUT, Supervisor, last_error
from configctl.localzk.runtime import find_java, find_zookeeper_classpath
from configctl.localzk.sasl import DEFAULT_USER, check_user
from configctl.localzk.security import Security
from configctl.localzk.state import (
    DEFAULT_PORT,
    Identity,
    Node,
    State,
    default_data_dir,
    locked,
    read_identity,
    read_state,
    state_file,
    write_identity,
    write_state,
)


@dataclass(frozen=True)
class NodeStatus:
    """One server of a started ZooKeeper, as seen now."""

    id: int
    pid: int | None
    client_port: int
    alive: bool
    mode: str | None  # "standalone", "leader", "follower" when the server answers ``srvr``; else None
    log_file: Path

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pid": self.pid,
            "port": self.client_port,
            "alive": self.alive,
            "mode": self.mode,
            "log": str(self.log_file),
        }


@dataclass(frozen=True)
class ServerStatus:
    """What a data directory holds right now: nothing, or the nodes started from it."""

    data_dir: Path
    connect_string: str | None
    started_at: str | None
    nodes: tuple[NodeStatus, ...] = field(default=())
    client: ClientSettings | None = None  # how to connect; None when nothing was started

    @property
    def running(self) -> bool:
        """True while at least one recorded server process is alive (a degraded ensemble is running)."""
        return any(node.alive for node in self.nodes)

    @property
    def tls(self) -> bool:
        return self.client is not None and self.client.tls

    @property
    def sasl(self) -> bool:
        return self.client is not None and self.client.sasl

    def to_json(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "connect": self.connect_string,
            "data_dir": str(self.data_dir),
            "started_at": self.started_at,
            "tls": self.tls,
            "sasl": self.sasl,
            "sasl_user": self.client.sasl_user if self.client else None,
            "nodes": [node.to_json() for node in self.nodes],
            "client": self.client.to_json() if self.client else None,
        }


class LocalZooKeeper:
    """A ZooKeeper server (``nodes=1``) or ensemble (``nodes=3``) identified by its data directory.

    ``port`` is the client port of server 1; an ensemble's servers listen on ``port``,
    ``port+1``, ``port+2`` (quorum and election ports are free ports picked at start and recorded).
    Node ids are 1-based, as in ZooKeeper's ``myid``. ``tls`` makes the client port TLS-only;
    ``sasl`` makes clients log in as ``sasl_user`` (see :mod:`~configctl.localzk.security`).
    ``port``, ``nodes``, ``tls``, ``sasl`` and ``sasl_user`` only matter to :meth:`start`, and
    only when given (not None): what is not given is what the data directory's server was last
    started with (its identity, kept across stops), else 2181, one node, plain. So a server
    started on port P with TLS and SASL comes back the same after ``stop`` and ``start``. Every
    other method works from what the state file recorded, so ``LocalZooKeeper(data_dir).stop()``
    stops whatever was started there and :meth:`restart` keeps TLS and SASL as they were.
    Usable as a context manager (start on enter, stop on exit).
    """

    def __init__(
        self,
        data_dir: Path | str | None = None,
        port: int | None = None,
        nodes: int | None = None,
        *,
        tls: bool | None = None,
        sasl: bool | None = None,
        sasl_user: str | None = None,
        tick_ms: int = TICK_TIME_MS,
    ) -> None:
        """``tick_ms``: ZooKeeper's tick (see :func:`~configctl.localzk.nodeconfig.write_node_configs`)."""
        self.tick_ms = int(tick_ms)
        self.data_dir = Path(data_dir).expanduser().absolute() if data_dir else default_data_dir()
        self._asked = Identity(port, nodes, tls, sasl_user, sasl)
        self._adopt(self._asked.over(None))  # what a start would use on a new data dir
        self._supervisor = Supervisor()

    def _adopt(self, identity: Identity) -> None:
        """Take ``identity`` (complete: every field set) as what :meth:`start` runs."""
        self.port = int(identity.port or DEFAULT_PORT)
        self.nodes = int(identity.nodes or 1)
        self.tls = bool(identity.tls)
        self.sasl = bool(identity.sasl)
        self.sasl_user = identity.sasl_user or DEFAULT_USER

    # ----------------------------------------------------------------------------------- public API

    @property
    def state_file(self) -> Path:
        return state_file(self.data_dir)

    @property
    def connect_string(self) -> str:
        """The running servers' connect string, or the one :meth:`start` would produce."""
        state = read_state(self.data_dir)
        if state is not None:
            return state.connect_string
        identity = self._asked.over(read_identity(self.data_dir))
        return ",".join(
            f"{HOST}:{int(identity.port or DEFAULT_PORT) + i}" for i in range(identity.nodes or 1)
        )

    def start(self, timeout: float = 30.0) -> ServerStatus:
        """Start the server(s) in the background and wait until they serve clients.

        For an ensemble that means every node has joined a quorum and accepted a session.
        On any failure whatever was launched is stopped again and nothing is left recorded.
        """
        if self._asked.sasl_user is not None and self._asked.sasl is False:
            raise InvalidInput("--sasl-user needs --sasl")
        with locked(self.data_dir):
            identity = self._asked.over(read_identity(self.data_dir))
            if self._asked.sasl_user is not None and not identity.sasl:
                raise InvalidInput("--sasl-user needs --sasl")
            self._adopt(identity)
            _validate(self.port, self.nodes)
            if self.sasl:
                check_user(self.sasl_user)
            state = read_state(self.data_dir)
            if state is not None:
                alive = [node for node in state.nodes if self._supervisor.process(node) is not None]
                if alive:
                    pids = ", ".join(str(node.pid) for node in alive)
                    raise EnvironmentProblem(
                        f"ZooKeeper is already running from {self.data_dir} (pid {pids}); "
                        f"stop it first with: configctl zk stop --data-dir {self.data_dir}"
                    )
                self.state_file.unlink(missing_ok=True)  # leftovers of a crashed or killed server
            java = find_java()
            classpath, log_backends = find_zookeeper_classpath()
            client_ports = [self.port + i for i in range(self.nodes)]
            for port in client_ports:
                if not port_is_free(port):
                    raise EnvironmentProblem(f"port {port} is already in use")
            peer_ports = pick_free_ports(2 * self.nodes) if self.nodes > 1 else []
            security = Security.prepare(
                self.data_dir, tls=self.tls, sasl_user=self.sasl_user if self.sasl else None
            )
            nodes = write_node_configs(
                self.data_dir, java, classpath, log_backends, client_ports, peer_ports, security, self.tick_ms
            )
            started = State(datetime.now(timezone.utc).isoformat(timespec="seconds"), nodes, security)
            try:
                for node in nodes:
                    self._supervisor.launch(node)
                    write_state(self.data_dir, started)
                self._wait_serving(started, nodes, timeout)
            except BaseException:
                self._supervisor.terminate(nodes)
                self.state_file.unlink(missing_ok=True)
                raise
            started.client().write_env_file(self.data_dir / ENV_FILE)
            write_identity(self.data_dir, identity)
        return self.status()

    def stop(self, timeout: float = SIGNAL_TIMEOUT) -> list[NodeStatus]:
        """Stop exactly the processes :meth:`start` recorded: SIGTERM, then SIGKILL after ``timeout``.

        Returns the nodes that were running (empty when nothing was: not an error here).
        The data stays, so a later :meth:`start` continues where this one left off.
        """
        if not self.state_file.exists():
            return []  # nothing recorded: do not even create the data dir
        with locked(self.data_dir):
            state = read_state(self.data_dir)
            if state is None:
                return []
            stopped = [
                NodeStatus(n.id, n.pid, n.client_port, True, None, n.log_file)
                for n in state.nodes
                if self._supervisor.process(n) is not None
            ]
            self._supervisor.terminate(state.nodes, timeout)
            self.state_file.unlink(missing_ok=True)
        return stopped

    def restart(self, timeout: float = 30.0) -> ServerStatus:
        """Stop everything and start again on the recorded ports, data, ``nodes``, TLS and SASL."""
        state = read_state(self.data_dir)
        if state is not None:
            sasl = state.security.sasl
            self._asked = Identity(
                state.nodes[0].client_port, len(state.nodes), state.security.tls is not None,
                sasl.user if sasl else None, sasl is not None,
            )  # fmt: skip
        self.stop()
        return self.start(timeout=timeout)

    def status(self) -> ServerStatus:
        """The recorded nodes with pid, port, liveness and role; no nodes when nothing was started."""
        state = read_state(self.data_dir)
        if state is None:
            return ServerStatus(self.data_dir, None, None, ())
        client = state.client()
        statuses = []
        for node in state.nodes:
            alive = self._supervisor.process(node) is not None
            mode = probe.server_mode(node.client_port, client) if alive else None
            statuses.append(NodeStatus(node.id, node.pid, node.client_port, alive, mode, node.log_file))
        return ServerStatus(self.data_dir, state.connect_string, state.started_at, tuple(statuses), client)

    def client_settings(self) -> ClientSettings:
        """What a client needs to reach the running server(s): connect string, TLS CA, SASL user."""
        return self._require_state().client()

    def kill_node(self, node_id: int, sig: int = signal.SIGKILL, timeout: float = SIGNAL_TIMEOUT) -> int:
        """Send ``sig`` to one server (for fault tests) and, for SIGKILL/SIGTERM, wait until it is gone.

        The node stays recorded, so :meth:`start_node` brings it back on the same port and data.
        Returns the pid signalled; :class:`NotFound` when that node is not running.
        """
        with locked(self.data_dir):
            node = self._node(self._require_state(), node_id)
            proc = self._supervisor.process(node)
            if proc is None:
                raise NotFound(f"ZooKeeper server {node_id} in {self.data_dir} is not running")
            proc.send_signal(sig)
            if sig in (signal.SIGKILL, signal.SIGTERM) and not self._supervisor.wait_gone([proc], timeout):
                raise EnvironmentProblem(f"ZooKeeper server {node_id} (pid {proc.pid}) did not exit")
            return proc.pid

    def start_node(self, node_id: int, timeout: float = 30.0) -> NodeStatus:
        """Start one recorded server again (same command, port and data) and wait until it serves."""
        with locked(self.data_dir):
            state = self._require_state()
            node = self._node(state, node_id)
            if self._supervisor.process(node) is not None:
                raise EnvironmentProblem(f"ZooKeeper server {node_id} in {self.data_dir} is already running")
            if not port_is_free(node.client_port):
                raise EnvironmentProblem(f"port {node.client_port} is already in use")
            self._supervisor.launch(node)
            write_state(self.data_dir, state)
            self._wait_serving(state, [node], timeout)
        return next(n for n in self.status().nodes if n.id == node_id)

    def start_missing_nodes(self, timeout: float = 30.0) -> list[int]:
        """Restart every recorded server that is not alive (heals an ensemble after a fault test)."""
        state = read_state(self.data_dir)
        if state is None:
            return []
        missing = [node.id for node in state.nodes if self._supervisor.process(node) is None]
        for node_id in missing:
            self.start_node(node_id, timeout=timeout)
        return missing

    def wait_serving(self, timeout: float = 30.0) -> None:
        """Wait until every alive recorded server accepts a session (a quorum exists)."""
        state = self._require_state()
        alive = [node for node in state.nodes if self._supervisor.process(node) is not None]
        self._wait_serving(state, alive, timeout)

    def __enter__(self) -> LocalZooKeeper:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ----------------------------------------------------------------------------------- internals

    def _require_state(self) -> State:
        state = read_state(self.data_dir)
        if state is None:
            raise NotFound(f"no ZooKeeper was started from {self.data_dir}")
        return state

    def _node(self, state: State, node_id: int) -> Node:
        node = state.node(node_id)
        if node is None:
            raise NotFound(
                f"no ZooKeeper server {node_id} in {self.data_dir} (servers: 1..{len(state.nodes)})"
            )
        return node

    def _wait_serving(self, state: State, nodes: list[Node], timeout: float) -> None:
        """Wait for each node to serve a session; one that exits meanwhile fails at once, with why.

        The probe connects as a client is told to (TLS, SASL), so "serving" means serving them.
        """
        deadline = time.monotonic() + timeout
        for node in nodes:
            client = state.security.client(f"{HOST}:{node.client_port}")
            while not probe.accepts_session(client, min(1.0, max(deadline - time.monotonic(), 0.1))):
                code = self._supervisor.exit_code(node)
                gone = not self._supervisor.launched(node) and self._supervisor.process(node) is None
                if code is not None or gone:
                    status = f" (exit status {code})" if code is not None else ""
                    raise EnvironmentProblem(
                        f"ZooKeeper server {node.id} exited during startup{status}"
                        f"{last_error(node)}; see {node.log_file}"
                    )
                if time.monotonic() >= deadline:
                    raise EnvironmentProblem(
                        f"ZooKeeper on {HOST}:{node.client_port} did not answer within {timeout:g}s; "
                        f"see {node.log_file}"
                    )
                time.sleep(0.1)


def _validate(port: int, nodes: int) -> None:
    if nodes not in (1, 3, 5, 7):
        raise InvalidInput(f"nodes must be 1, 3, 5 or 7, not {nodes}")
    if not 1 <= port <= 65535 - (nodes - 1):
        raise InvalidInput(f"port must be between 1 and {65535 - (nodes - 1)}, not {port}")
