"""A real Apache ZooKeeper on this machine: one server or a small ensemble, for demos, tests and benchmarks.

configctl must be exercised against the real thing (its writes rely on ZooKeeper's multi, versions and
sequential nodes), yet asking users to install ZooKeeper is a hurdle. pyspark, a dependency anyway,
ships the ZooKeeper server jars, so we run ``java ... ZooKeeperServerMain`` (one node) or
``QuorumPeerMain`` (an ensemble) from them. Debian's ``zookeeper`` package is the fallback.

The data directory *is* the server's identity. Everything lives under it::

    <data-dir>/configctl-zk.json      what is running: pids, ports, commands (exists only while started)
    <data-dir>/server-<id>/zoo.cfg    the node's configuration, rewritten on every start
    <data-dir>/server-<id>/data/      snapshots and transaction logs (and ``myid`` in an ensemble)
    <data-dir>/server-<id>/zookeeper.log, console.log

Servers run in their own session (``start_new_session``) so they outlive the command that started
them and a Ctrl-C in that terminal does not reach them. :meth:`LocalZooKeeper.stop` signals only
processes recorded in the state file *and* still recognisable as ours (same creation time, main
class and config file on the command line), so a recycled pid is never killed.

Timing. ``tickTime`` is 200 ms instead of ZooKeeper's 2000 ms: the server expires sessions in
buckets of one tick, so a client with a 2 s session timeout is expired 2.0–2.2 s after it goes
silent, which keeps session-expiry tests fast and predictable. ``minSessionTimeout`` is therefore
400 ms (two ticks) and ``maxSessionTimeout`` is raised to 60 s so a client always gets the timeout
it asks for (kazoo's default of 10 s stays 10 s). In an ensemble ``initLimit`` is 50 ticks (10 s to
sync when joining, generous on a loaded two-core CI box) and ``syncLimit`` 15 ticks (3 s before a
silent follower is dropped: long enough to ride out a GC pause or CPU starvation, short enough that
a hung node is noticed quickly; a killed node is noticed at once because its sockets close).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil

from configctl.errors import EnvironmentProblem, InvalidInput, NotFound
from configctl.files import replace_atomically

STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
STATE_FILE = "configctl-zk.json"
LOCK_FILE = ".configctl-zk.lock"
HOST = "127.0.0.1"

TICK_TIME_MS = 200
MIN_SESSION_TIMEOUT_MS = 2 * TICK_TIME_MS
MAX_SESSION_TIMEOUT_MS = 60_000
INIT_LIMIT_TICKS = 50
SYNC_LIMIT_TICKS = 15

# Small heap, serial GC: a test server holds little data, and three JVMs share two cores in CI.
JVM_OPTIONS = (
    "-Xms32m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-Djava.net.preferIPv4Stack=true",
    "-Dzookeeper.admin.enableServer=false",
    "-Dzookeeper.jmx.log4j.disable=true",
)

# The jars ZooKeeper's server needs, picked out of pyspark/jars (~280 jars, mostly Spark's own).
_PYSPARK_JAR_PREFIXES = (
    "zookeeper-",
    "slf4j-api-",
    "log4j-api-",
    "log4j-core-",
    "log4j-slf4j2-impl-",
    "audience-annotations-",
    "commons-io-",
    "commons-cli-",
    "metrics-core-",
    "snappy-java-",
    "netty-",
)
_PYSPARK_REQUIRED = ("zookeeper-3", "zookeeper-jute-", "slf4j-api-", "log4j-slf4j2-impl-", "netty-handler-")
_DEBIAN_JAR_DIRS = (Path("/usr/share/zookeeper"), Path("/usr/share/zookeeper/lib"), Path("/usr/share/java"))

_SIGNAL_TIMEOUT = 10.0
_PROBE_LOGGER = logging.getLogger("configctl.localzk.probe")
_PROBE_LOGGER.addHandler(logging.NullHandler())
_PROBE_LOGGER.propagate = False  # kazoo's connection-refused warnings while we wait are expected noise


def default_data_dir() -> Path:
    """``~/.configctl/zookeeper``: where ``configctl zk`` keeps its server unless told otherwise."""
    return Path.home() / ".configctl" / "zookeeper"


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

    @property
    def running(self) -> bool:
        """True while at least one recorded server process is alive (a degraded ensemble is running)."""
        return any(node.alive for node in self.nodes)

    def to_json(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "connect": self.connect_string,
            "data_dir": str(self.data_dir),
            "started_at": self.started_at,
            "nodes": [node.to_json() for node in self.nodes],
        }


@dataclass
class _Node:
    """A node as recorded in the state file."""

    id: int
    client_port: int
    quorum_port: int | None
    election_port: int | None
    dir: Path
    command: list[str]
    pid: int | None = None
    create_time: float | None = None

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
    def from_json(cls, raw: dict[str, Any]) -> _Node:
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


class LocalZooKeeper:
    """A ZooKeeper server (``nodes=1``) or ensemble (``nodes=3``) identified by its data directory.

    ``port`` is the client port of server 1; an ensemble's servers listen on ``port``,
    ``port+1``, ``port+2`` (quorum and election ports are free ports picked at start and recorded).
    Node ids are 1-based, as in ZooKeeper's ``myid``. ``port`` and ``nodes`` only matter to
    :meth:`start`; every other method works from what the state file recorded, so
    ``LocalZooKeeper(data_dir).stop()`` stops whatever was started there.
    Usable as a context manager (start on enter, stop on exit).
    """

    def __init__(self, data_dir: Path | str | None = None, port: int = 2181, nodes: int = 1) -> None:
        self.data_dir = Path(data_dir).expanduser().absolute() if data_dir else default_data_dir()
        self.port = port
        self.nodes = nodes
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # ----------------------------------------------------------------------------------- public API

    @property
    def state_file(self) -> Path:
        return self.data_dir / STATE_FILE

    @property
    def connect_string(self) -> str:
        """The running servers' connect string, or the one :meth:`start` would produce."""
        state = self._read_state()
        ports = (
            [node.client_port for node in state[1]] if state else [self.port + i for i in range(self.nodes)]
        )
        return ",".join(f"{HOST}:{port}" for port in ports)

    def start(self, timeout: float = 30.0) -> ServerStatus:
        """Start the server(s) in the background and wait until they serve clients.

        For an ensemble that means every node has joined a quorum and accepted a session.
        On any failure whatever was launched is stopped again and nothing is left recorded.
        """
        _validate(self.port, self.nodes)
        with self._lock():
            state = self._read_state()
            if state is not None:
                alive = [node for node in state[1] if self._process(node) is not None]
                if alive:
                    pids = ", ".join(str(node.pid) for node in alive)
                    raise EnvironmentProblem(
                        f"ZooKeeper is already running from {self.data_dir} (pid {pids}); "
                        f"stop it first with: configctl zk stop --data-dir {self.data_dir}"
                    )
                self.state_file.unlink(missing_ok=True)  # leftovers of a crashed or killed server
            java = find_java()
            classpath, log_props = find_zookeeper_classpath()
            client_ports = [self.port + i for i in range(self.nodes)]
            for port in client_ports:
                if not port_is_free(port):
                    raise EnvironmentProblem(f"port {port} is already in use")
            peer_ports = _pick_free_ports(2 * self.nodes) if self.nodes > 1 else []
            nodes = self._write_configs(java, classpath, log_props, client_ports, peer_ports)
            started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
            try:
                for node in nodes:
                    self._launch(node)
                    self._write_state(nodes, started_at)
                self._wait_serving(nodes, timeout)
            except BaseException:
                self._terminate(nodes)
                self.state_file.unlink(missing_ok=True)
                raise
        return self.status()

    def stop(self, timeout: float = _SIGNAL_TIMEOUT) -> list[NodeStatus]:
        """Stop exactly the processes :meth:`start` recorded: SIGTERM, then SIGKILL after ``timeout``.

        Returns the nodes that were running (empty when nothing was: not an error here).
        The data stays, so a later :meth:`start` continues where this one left off.
        """
        if not self.state_file.exists():
            return []  # nothing recorded: do not even create the data dir
        with self._lock():
            state = self._read_state()
            if state is None:
                return []
            nodes = state[1]
            stopped = [
                NodeStatus(n.id, n.pid, n.client_port, True, None, n.log_file)
                for n in nodes
                if self._process(n) is not None
            ]
            self._terminate(nodes, timeout)
            self.state_file.unlink(missing_ok=True)
        return stopped

    def restart(self, timeout: float = 30.0) -> ServerStatus:
        """Stop everything and start again on the recorded ports and data (same ``nodes``)."""
        state = self._read_state()
        if state is not None:
            self.port = state[1][0].client_port
            self.nodes = len(state[1])
        self.stop()
        return self.start(timeout=timeout)

    def status(self) -> ServerStatus:
        """The recorded nodes with pid, port, liveness and role; no nodes when nothing was started."""
        state = self._read_state()
        if state is None:
            return ServerStatus(self.data_dir, None, None, ())
        meta, nodes = state
        statuses = []
        for node in nodes:
            alive = self._process(node) is not None
            mode = _server_mode(node.client_port) if alive else None
            statuses.append(NodeStatus(node.id, node.pid, node.client_port, alive, mode, node.log_file))
        connect = ",".join(f"{HOST}:{node.client_port}" for node in nodes)
        return ServerStatus(self.data_dir, connect, meta.get("started_at"), tuple(statuses))

    def kill_node(self, node_id: int, sig: int = signal.SIGKILL, timeout: float = _SIGNAL_TIMEOUT) -> int:
        """Send ``sig`` to one server (for fault tests) and, for SIGKILL/SIGTERM, wait until it is gone.

        The node stays recorded, so :meth:`start_node` brings it back on the same port and data.
        Returns the pid signalled; :class:`NotFound` when that node is not running.
        """
        with self._lock():
            node = self._node(node_id)
            proc = self._process(node)
            if proc is None:
                raise NotFound(f"ZooKeeper server {node_id} in {self.data_dir} is not running")
            proc.send_signal(sig)
            if sig in (signal.SIGKILL, signal.SIGTERM) and not self._wait_gone([proc], timeout):
                raise EnvironmentProblem(f"ZooKeeper server {node_id} (pid {proc.pid}) did not exit")
            return proc.pid

    def start_node(self, node_id: int, timeout: float = 30.0) -> NodeStatus:
        """Start one recorded server again (same command, port and data) and wait until it serves."""
        with self._lock():
            meta, nodes = self._require_state()
            node = self._node(node_id, nodes)
            if self._process(node) is not None:
                raise EnvironmentProblem(f"ZooKeeper server {node_id} in {self.data_dir} is already running")
            if not port_is_free(node.client_port):
                raise EnvironmentProblem(f"port {node.client_port} is already in use")
            self._launch(node)
            self._write_state(nodes, meta.get("started_at"))
            self._wait_serving([node], timeout)
        return next(n for n in self.status().nodes if n.id == node_id)

    def start_missing_nodes(self, timeout: float = 30.0) -> list[int]:
        """Restart every recorded server that is not alive (heals an ensemble after a fault test)."""
        state = self._read_state()
        if state is None:
            return []
        missing = [node.id for node in state[1] if self._process(node) is None]
        for node_id in missing:
            self.start_node(node_id, timeout=timeout)
        return missing

    def wait_serving(self, timeout: float = 30.0) -> None:
        """Wait until every alive recorded server accepts a session (a quorum exists)."""
        _meta, nodes = self._require_state()
        self._wait_serving([node for node in nodes if self._process(node) is not None], timeout)

    def __enter__(self) -> LocalZooKeeper:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ----------------------------------------------------------------------------------- internals

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialise start/stop/kill on one data dir across processes (two ``zk start`` at once).

        File-system trouble inside (an unwritable or missing data dir) becomes a one-line error.
        """
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            handle = open(self.data_dir / LOCK_FILE, "a")  # noqa: SIM115 - held across the yield
        except OSError as exc:
            raise EnvironmentProblem(f"cannot use data dir {self.data_dir}: {exc.strerror}") from None
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            except OSError as exc:
                where = f" ({exc.filename})" if exc.filename else ""
                raise EnvironmentProblem(
                    f"cannot use data dir {self.data_dir}: {exc.strerror}{where}"
                ) from None
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read_state(self) -> tuple[dict[str, Any], list[_Node]] | None:
        try:
            raw = json.loads(self.state_file.read_text(encoding="utf-8"))
            return raw, [_Node.from_json(node) for node in raw["nodes"]]
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise EnvironmentProblem(f"cannot read {self.state_file}: {exc.strerror}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise EnvironmentProblem(f"unreadable state file {self.state_file}: {exc}") from None

    def _require_state(self) -> tuple[dict[str, Any], list[_Node]]:
        state = self._read_state()
        if state is None:
            raise NotFound(f"no ZooKeeper was started from {self.data_dir}")
        return state

    def _node(self, node_id: int, nodes: list[_Node] | None = None) -> _Node:
        nodes = nodes if nodes is not None else self._require_state()[1]
        for node in nodes:
            if node.id == node_id:
                return node
        raise NotFound(f"no ZooKeeper server {node_id} in {self.data_dir} (servers: 1..{len(nodes)})")

    def _write_state(self, nodes: list[_Node], started_at: str | None) -> None:
        state = {
            "version": 1,
            "data_dir": str(self.data_dir),
            "started_at": started_at,
            "connect": ",".join(f"{HOST}:{node.client_port}" for node in nodes),
            "nodes": [node.to_json() for node in nodes],
        }
        replace_atomically(self.state_file, json.dumps(state, indent=2) + "\n")

    def _write_configs(
        self,
        java: str,
        classpath: list[str],
        log_props: dict[str, Path],
        client_ports: list[int],
        peer_ports: list[int],
    ) -> list[_Node]:
        ensemble = len(client_ports) > 1
        nodes = []
        for index, client_port in enumerate(client_ports):
            node_id = index + 1
            node_dir = self.data_dir / f"server-{node_id}"
            (node_dir / "data").mkdir(parents=True, exist_ok=True)
            quorum_port = peer_ports[2 * index] if ensemble else None
            election_port = peer_ports[2 * index + 1] if ensemble else None
            lines = [
                f"tickTime={TICK_TIME_MS}",
                f"dataDir={node_dir / 'data'}",
                f"clientPort={client_port}",
                f"clientPortAddress={HOST}",
                f"minSessionTimeout={MIN_SESSION_TIMEOUT_MS}",
                f"maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}",
                "maxClientCnxns=0",
                "admin.enableServer=false",
                "4lw.commands.whitelist=srvr,ruok,stat,mntr",
                "autopurge.snapRetainCount=3",
                "autopurge.purgeInterval=1",
            ]
            if ensemble:
                lines += [f"initLimit={INIT_LIMIT_TICKS}", f"syncLimit={SYNC_LIMIT_TICKS}"]
                lines += [
                    f"server.{i + 1}={HOST}:{peer_ports[2 * i]}:{peer_ports[2 * i + 1]}"
                    for i in range(len(client_ports))
                ]
                (node_dir / "data" / "myid").write_text(f"{node_id}\n", encoding="ascii")
            config = node_dir / "zoo.cfg"
            config.write_text("\n".join(lines) + "\n", encoding="utf-8")
            log_options = _write_log_configs(node_dir, log_props)
            command = [
                java,
                *JVM_OPTIONS,
                *log_options,
                "-cp",
                os.pathsep.join(classpath),
                QUORUM_MAIN if ensemble else STANDALONE_MAIN,
                str(config),
            ]
            nodes.append(_Node(node_id, client_port, quorum_port, election_port, node_dir, command))
        return nodes

    def _launch(self, node: _Node) -> None:
        with open(node.console_file, "ab") as console:
            try:
                child = subprocess.Popen(
                    node.command,
                    stdin=subprocess.DEVNULL,
                    stdout=console,
                    stderr=subprocess.STDOUT,
                    cwd=node.dir,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise EnvironmentProblem(f"cannot run {node.command[0]}: {exc.strerror}") from None
        self._children[node.id] = child
        node.pid = child.pid
        try:
            node.create_time = psutil.Process(child.pid).create_time()
        except psutil.Error:
            node.create_time = None

    def _process(self, node: _Node) -> psutil.Process | None:
        """The node's live process if it is still ours: same start time, main class, our config file."""
        if node.pid is None:
            return None
        child = self._children.get(node.id)
        try:
            if child is not None and child.pid == node.pid and child.poll() is None:
                proc = psutil.Process(child.pid)  # launched by this very object: ours beyond doubt
                return None if proc.status() == psutil.STATUS_ZOMBIE else proc  # zombie: dying
            proc = psutil.Process(node.pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                self._reap(node.id)
                return None
            if node.create_time is not None and abs(proc.create_time() - node.create_time) > 1.0:
                return None
            cmdline = proc.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        config = str(node.dir / "zoo.cfg")
        ours = config in cmdline and any(main in cmdline for main in (STANDALONE_MAIN, QUORUM_MAIN))
        return proc if ours else None

    def _reap(self, node_id: int) -> None:
        child = self._children.pop(node_id, None)
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=0)

    def _terminate(self, nodes: list[_Node], timeout: float = _SIGNAL_TIMEOUT) -> None:
        procs = [proc for proc in (self._process(node) for node in nodes) if proc is not None]
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.terminate()
        if not self._wait_gone(procs, timeout):
            for proc in procs:
                with contextlib.suppress(psutil.NoSuchProcess):
                    proc.kill()
            self._wait_gone(procs, timeout)
        for node in nodes:
            self._reap(node.id)

    def _wait_gone(self, procs: list[psutil.Process], timeout: float) -> bool:
        """Wait until every process has exited; our own children are also reaped.

        A process that is not our child counts as gone once it is a zombie (its parent may be
        an init that never reaps); our children are waited for, so their ports are free after.
        """
        deadline = time.monotonic() + timeout
        children = {child.pid: child for child in self._children.values()}
        for proc in procs:
            child = children.get(proc.pid)
            if child is not None:
                try:
                    child.wait(timeout=max(deadline - time.monotonic(), 0.0))
                except subprocess.TimeoutExpired:
                    return False
        while any(_is_alive(proc) for proc in procs if proc.pid not in children):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def _wait_serving(self, nodes: list[_Node], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for node in nodes:
            while not _accepts_session(node.client_port, min(1.0, max(deadline - time.monotonic(), 0.1))):
                child = self._children.get(node.id)
                code = child.poll() if child is not None else None
                if code is not None or (child is None and self._process(node) is None):
                    status = f" (exit status {code})" if code is not None else ""
                    raise EnvironmentProblem(
                        f"ZooKeeper server {node.id} exited during startup{status}"
                        f"{_last_error(node)}; see {node.log_file}"
                    )
                if time.monotonic() >= deadline:
                    raise EnvironmentProblem(
                        f"ZooKeeper on {HOST}:{node.client_port} did not answer within {timeout:g}s; "
                        f"see {node.log_file}"
                    )
                time.sleep(0.1)


# --------------------------------------------------------------------------------------- helpers


def find_java() -> str:
    """``$JAVA_HOME/bin/java`` if that exists, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found:
        return found
    raise EnvironmentProblem("java not found: install Java 17+ or set JAVA_HOME")


def find_zookeeper_classpath() -> tuple[list[str], dict[str, Path]]:
    """The jars to run a ZooKeeper server, and which logging backends they use.

    pyspark's ``jars/`` is located without importing pyspark (which takes seconds). Only the
    jars ZooKeeper needs are put on the classpath; if their names ever change, the whole
    directory is used instead. Debian's ``zookeeper`` package is the fallback.
    """
    spec = importlib.util.find_spec("pyspark")
    for location in (spec.submodule_search_locations or []) if spec else []:
        jars_dir = Path(location) / "jars"
        if not jars_dir.is_dir():
            continue
        jars = sorted(p for p in jars_dir.glob("*.jar") if p.name.startswith(_PYSPARK_JAR_PREFIXES))
        if not any(jar.name.startswith("zookeeper-3") for jar in jars):
            continue
        names = [jar.name for jar in jars]
        if all(any(name.startswith(req) for name in names) for req in _PYSPARK_REQUIRED):
            return [str(jar) for jar in jars], {"log4j2": Path("log4j2.properties")}
        return [str(jars_dir / "*")], {"log4j2": Path("log4j2.properties")}
    for directory in _DEBIAN_JAR_DIRS:
        if any(directory.glob("zookeeper*.jar")):
            classpath = [str(d / "*") for d in _DEBIAN_JAR_DIRS if d.is_dir()]
            return classpath, {
                "log4j2": Path("log4j2.properties"),
                "log4j": Path("log4j.properties"),
                "logback": Path("logback.xml"),
            }
    raise EnvironmentProblem(
        "ZooKeeper jars not found: install pyspark (pip install pyspark) or the Debian zookeeper package"
    )


def port_is_free(port: int, host: str = HOST) -> bool:
    """Whether a server could listen on ``host:port`` now (SO_REUSEADDR, as the JVM binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _pick_free_ports(count: int) -> list[int]:
    """Distinct ports the kernel considers free now (for quorum and election traffic)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((HOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _validate(port: int, nodes: int) -> None:
    if nodes not in (1, 3, 5, 7):
        raise InvalidInput(f"nodes must be 1, 3, 5 or 7, not {nodes}")
    if not 1 <= port <= 65535 - (nodes - 1):
        raise InvalidInput(f"port must be between 1 and {65535 - (nodes - 1)}, not {port}")


def _is_alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _accepts_session(port: int, timeout: float) -> bool:
    """A TCP connect, then a real kazoo session and a read: proof the server (and its quorum) serves."""
    try:
        socket.create_connection((HOST, port), timeout=min(timeout, 0.5)).close()
    except OSError:
        return False
    from kazoo.client import KazooClient  # imported late: only needed while waiting

    client = KazooClient(
        hosts=f"{HOST}:{port}",
        timeout=2.0,
        logger=_PROBE_LOGGER,
        # retry every 50 ms: kazoo's default backoff would add up to a second to every start
        connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 1, "max_jitter": 0.0},
    )
    try:
        client.start(timeout=timeout)
        client.get_children("/")
        return True
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            client.stop()
            client.close()


def _server_mode(port: int) -> str | None:
    """The server's role from the ``srvr`` four-letter word (enabled in the zoo.cfg we write)."""
    try:
        with socket.create_connection((HOST, port), timeout=1.0) as sock:
            sock.sendall(b"srvr")
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return None
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def _last_error(node: _Node) -> str:
    """The last ERROR line of the node's logs, shortened, so a failed start says why on one line."""
    for path in (node.log_file, node.console_file):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            if " ERROR " in line or line.startswith(("Error:", "Exception")):
                text = " ".join(line.split(" - ", 1)[-1].split())
                return f": {text[:200]}"
    return ""


_LOG4J2 = """\
status = warn
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.filePattern = {log}.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{ISO8601}} %-5p [%t] %c{{1}} - %m%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 10MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""

_LOG4J1 = """\
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File={log}
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{{ISO8601}} %-5p [%t] %c{{1}} - %m%n
"""

_LOGBACK = """\
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{ISO8601}} %-5level [%thread] %logger{{0}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


def _write_log_configs(node_dir: Path, backends: dict[str, Path]) -> list[str]:
    """Write a config per logging backend (INFO to ``zookeeper.log``) and return the JVM options."""
    log = node_dir / "zookeeper.log"
    options = []
    templates = {
        "log4j2": (_LOG4J2, "-Dlog4j2.configurationFile={}"),
        "log4j": (_LOG4J1, "-Dlog4j.configuration=file:{}"),
        "logback": (_LOGBACK, "-Dlogback.configurationFile={}"),
    }
    for backend, name in backends.items():
        template, option = templates[backend]
        path = node_dir / name
        path.write_text(template.format(log=log), encoding="utf-8")
        options.append(option.format(path))
    return options
