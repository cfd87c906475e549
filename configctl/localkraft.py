"""Real Apache Kafka 4 clusters on this machine, in KRaft mode, for tests and the demo.

Kafka 4 has no ZooKeeper: a quorum of controllers keeps the metadata (configs included) in its
own log. The nodes are Kafka's own jars (``make kafka`` puts 4.4.0 in ``build/kafka4/libs/``),
each run as ``java -cp 'libs/*' kafka.Kafka server.properties`` once ``kafka-storage format``
(``kafka.tools.StorageTool``) has written its storage. Two shapes:

- combined: each node is a broker and a controller (``process.roles=broker,controller``); one
  such node is the cheapest real KRaft cluster;
- separate: brokers ``1..N`` and a controller quorum of its own (ids from 100), as production runs.

Every controller is formatted with the same ``--initial-controllers`` (a dynamic quorum, KIP-853:
the nodes find it through ``controller.quorum.bootstrap.servers``), every broker-only node with
``--no-initial-controllers``. Brokers listen for PLAINTEXT on 127.0.0.1 and, given
``scram_users``, for SCRAM logins on a SASL_PLAINTEXT listener, the users bootstrapped into the
metadata log at format time (``--add-scram``). Controllers speak PLAINTEXT among themselves.

The process handling, the shared broker settings, the SCRAM listener and the tool runner are
:mod:`configctl.localkafka`'s; what is here is what KRaft does differently. Nothing here decides
what Kafka does: this only formats, starts, finds and stops the processes.
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path

from configctl.errors import EnvironmentProblem
from configctl.localkafka import (
    BASE_PROPERTIES,
    JVM_OPTIONS,
    KAFKA_MAIN,
    SCRAM_LISTENER,
    SCRAM_MECHANISMS,
    START_TIMEOUT,
    KafkaBroker,
    kafka_libs,
    run_tool,
    scram_listener_properties,
    start_nodes,
    tool_command,
)
from configctl.localzk.ports import HOST, pick_free_ports
from configctl.localzk.runtime import find_java

STORAGE_TOOL = "kafka.tools.StorageTool"
CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"
"""Kafka 4's ``kafka-configs.sh``: ConfigCommand moved from core (``kafka.admin``) to the tools jar."""
STARTED_LINE = "Kafka Server started (kafka.server.KafkaRaftServer)"
FIRST_CONTROLLER_ID = 100
CONTROLLER_LISTENER = "CONTROLLER"
FORMAT_TIMEOUT = 120.0

CONTROLLER_HEAP = "-Xmx256m"
"""A controller-only node holds the metadata log and nothing else: a smaller heap than a broker's."""

KRAFT_PROPERTIES = {
    "controller.listener.names": CONTROLLER_LISTENER,
    "listener.security.protocol.map": (
        f"PLAINTEXT:PLAINTEXT,{SCRAM_LISTENER}:{SCRAM_LISTENER},{CONTROLLER_LISTENER}:PLAINTEXT"
    ),
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    # A stopped broker leaves the metadata in seconds, not the default 9 (tests stop and start nodes).
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
}
"""What every KRaft test node runs with besides :data:`~configctl.localkafka.BASE_PROPERTIES`."""


def new_uuid() -> str:
    """A Kafka ``Uuid`` as its tools print one (a cluster id, a directory id): 16 random bytes in
    URL-safe base64 without padding, never starting with ``-`` (Kafka's ``Uuid.randomUuid`` avoids
    those too: a command line would read them as options)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def log4j2_properties(log_file: Path | None, level: str = "INFO") -> str:
    """A Log4j 2 configuration (Kafka 4 logs through Log4j 2): to ``log_file``, or to stderr."""
    if log_file is None:
        appender = ["appender.out.type = Console", "appender.out.target = SYSTEM_ERR"]
    else:
        appender = ["appender.out.type = File", f"appender.out.fileName = {log_file}"]
    quiet = ("kafka.request.logger", "state.change.logger", "kafka.log.LogCleaner")
    return "\n".join(
        [
            "status = warn",
            *appender,
            "appender.out.name = out",
            "appender.out.layout.type = PatternLayout",
            "appender.out.layout.pattern = [%d] %p %m (%c)%n",
            f"rootLogger.level = {level}",
            "rootLogger.appenderRef.out.ref = out",
            *(
                line
                for index, name in enumerate(quiet)
                for line in (f"logger.quiet{index}.name = {name}", f"logger.quiet{index}.level = WARN")
            ),
            "",
        ]
    )


class KRaftCluster:
    """One KRaft cluster: broker nodes ``1..brokers`` and its controller quorum.

    ``combined=True``: the brokers are the controllers too (``brokers`` nodes, each a voter);
    otherwise ``controllers`` controller-only nodes (ids 100, 101, ...) beside them.
    ``properties`` are added to every node's ``server.properties``, ``per_node`` to one node's.
    ``scram_users`` (name: password; an empty mapping too) gives every broker a SCRAM listener,
    and these users SCRAM-SHA-256 and -512 credentials from the start (their names and passwords
    must not hold ``,``, ``[``, ``]`` or ``=``: ``--add-scram``'s own syntax). ``release_version``
    (``3.9-IV0`` ...) is the ``metadata.version`` the cluster starts at (default: the newest
    production one of these jars). Usable as a context manager: format and start on enter, stop
    on exit.
    """

    def __init__(
        self,
        home: Path | str,
        work_dir: Path | str,
        *,
        brokers: int = 1,
        controllers: int = 1,
        combined: bool = False,
        properties: Mapping[str, str] | None = None,
        per_node: Mapping[int, Mapping[str, str]] | None = None,
        scram_users: Mapping[str, str] | None = None,
        release_version: str | None = None,
    ) -> None:
        # Absolute: each node runs in its own directory, so a relative classpath would not resolve.
        self.home = Path(home).resolve()
        self.libs = kafka_libs(self.home)
        self.work_dir = Path(work_dir).resolve()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.java = find_java()
        self.cluster_id = new_uuid()
        self.scram_users = None if scram_users is None else dict(scram_users)
        self.release_version = release_version
        broker_ids = list(range(1, brokers + 1))
        controller_ids = broker_ids if combined else [FIRST_CONTROLLER_ID + i for i in range(controllers)]
        ports = iter(pick_free_ports(len(controller_ids) + 2 * len(broker_ids)))  # distinct, at once
        self.quorum = {node_id: f"{HOST}:{next(ports)}" for node_id in controller_ids}
        """Each controller's ``host:port``: what ``controller.quorum.bootstrap.servers`` lists and
        ``kafka-configs.sh --bootstrap-controller`` takes."""
        self._initial_controllers = ",".join(
            f"{node_id}@{address}:{new_uuid()}" for node_id, address in self.quorum.items()
        )
        self.nodes: dict[int, KafkaBroker] = {}
        for node_id in dict.fromkeys([*broker_ids, *controller_ids]):
            broker_ports = (next(ports), next(ports)) if node_id in broker_ids else None
            extra = {**(properties or {}), **(per_node or {}).get(node_id, {})}
            self.nodes[node_id] = self._node(node_id, broker_ports, node_id in controller_ids, extra)
        self.brokers = {i: self.nodes[i] for i in broker_ids}
        self.controllers = {i: self.nodes[i] for i in controller_ids}
        self._tool_jvm: list[str] = []

    def _node(
        self, node_id: int, broker_ports: tuple[int, int] | None, controller: bool, extra: Mapping[str, str]
    ) -> KafkaBroker:
        """One node's directory, ``server.properties``, logging configuration and command."""
        node_dir = self.work_dir / f"node-{node_id}"
        (node_dir / "data").mkdir(parents=True, exist_ok=True)
        roles, listeners = [], []
        values = {**BASE_PROPERTIES, **KRAFT_PROPERTIES}
        port = scram_port = None
        if broker_ports is not None:
            roles.append("broker")
            port, scram_port = broker_ports
            listeners.append(f"PLAINTEXT://{HOST}:{port}")
            values["inter.broker.listener.name"] = "PLAINTEXT"
            if self.scram_users is not None:
                listeners.append(f"{SCRAM_LISTENER}://{HOST}:{scram_port}")
                values.update(scram_listener_properties())
            else:
                scram_port = None
        if controller:
            roles.append("controller")
            listeners.append(f"{CONTROLLER_LISTENER}://{self.quorum[node_id]}")
        values.update(
            {
                "process.roles": ",".join(roles),
                "node.id": str(node_id),
                "listeners": ",".join(listeners),
                "controller.quorum.bootstrap.servers": ",".join(self.quorum.values()),
                "log.dirs": str(node_dir / "data"),
                **extra,
            }
        )
        (node_dir / "server.properties").write_text(
            "".join(f"{key}={value}\n" for key, value in values.items()), encoding="utf-8"
        )
        (node_dir / "log4j2.properties").write_text(
            log4j2_properties(node_dir / "server.log"), encoding="utf-8"
        )
        command = [
            self.java,
            *JVM_OPTIONS,
            *(() if broker_ports is not None else (CONTROLLER_HEAP,)),  # the last -Xmx wins
            f"-Dlog4j2.configurationFile={node_dir / 'log4j2.properties'}",
            "-cp",
            f"{self.libs}/*",
            KAFKA_MAIN,
            str(node_dir / "server.properties"),
        ]
        main_port = port if port is not None else int(self.quorum[node_id].rpartition(":")[2])
        what = "Kafka broker" if broker_ports is not None else "Kafka controller"
        return KafkaBroker(node_id, main_port, node_dir, command, scram_port, STARTED_LINE, what)

    @property
    def bootstrap(self) -> str:
        """Every live broker's address, comma-separated (what ``--bootstrap-server`` takes)."""
        live = [b.bootstrap for b in self.brokers.values() if b.alive]
        return ",".join(live) or next(iter(self.brokers.values())).bootstrap

    @property
    def scram_bootstrap(self) -> str:
        """Every broker's SCRAM listener, comma-separated (a one-line error without ``scram_users``)."""
        if self.scram_users is None:
            raise EnvironmentProblem("this KRaft cluster has no SCRAM listener (no scram_users)")
        return ",".join(f"{HOST}:{b.scram_port}" for b in self.brokers.values())

    def format(self, timeout: float = FORMAT_TIMEOUT) -> None:
        """``kafka-storage format`` for every node not yet formatted (in parallel: one JVM each)."""
        scram = [
            part
            for name, password in (self.scram_users or {}).items()
            for mechanism in SCRAM_MECHANISMS
            for part in ("--add-scram", f"{mechanism}=[name={name},password={password}]")
        ]
        release = ["--release-version", self.release_version] if self.release_version else []
        running: dict[int, subprocess.Popen[str]] = {}
        for node_id, node in self.nodes.items():
            if (node.dir / "data" / "meta.properties").exists():
                continue
            # The controllers start the quorum and the metadata log (the SCRAM users go in there).
            quorum = (
                ["--initial-controllers", self._initial_controllers, *release, *scram]
                if node_id in self.controllers
                else ["--no-initial-controllers"]
            )
            args = [
                "format",
                "--config",
                str(node.properties_file),
                f"--cluster-id={self.cluster_id}",
                *quorum,
            ]
            running[node_id] = subprocess.Popen(
                tool_command(self.java, self.libs, self._tool_options(), STORAGE_TOOL, *args),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
            )
        failures = []
        for node_id, process in running.items():
            try:
                output, _ = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
            if process.returncode != 0:
                last = next((line for line in reversed(output.splitlines()) if line.strip()), "")
                failures.append(f"node {node_id}: {' '.join(last.split())[:300]}")
        if failures:
            raise EnvironmentProblem(f"kafka-storage format failed: {'; '.join(failures)}")

    def start(self, timeout: float = START_TIMEOUT, ids: list[int] | None = None) -> KRaftCluster:
        """Format what is not yet formatted, start the nodes (in parallel) and wait until each serves.

        A broker logs that it started once the controllers registered and unfenced it, so a
        started cluster answers through every broker.
        """
        self.format()
        start_nodes([self.nodes[i] for i in (ids or self.nodes)], timeout)
        return self

    def stop(self, ids: list[int] | None = None) -> None:
        """Stop the nodes: brokers first, while the controllers they report to still run."""
        chosen = ids or list(self.nodes)
        for node_id in sorted(chosen, key=lambda i: i in self.controllers and i not in self.brokers):
            self.nodes[node_id].stop()

    def __enter__(self) -> KRaftCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _tool_options(self) -> list[str]:
        if not self._tool_jvm:
            path = self.work_dir / "tools-log4j2.properties"
            path.write_text(log4j2_properties(None, "WARN"), encoding="utf-8")
            self._tool_jvm = [f"-Dlog4j2.configurationFile={path}"]
        return self._tool_jvm

    def tool(self, main: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka 4's command-line tools (a main class) from the same jars, as its scripts do."""
        return run_tool(self.java, self.libs, self._tool_options(), main, *args, timeout=timeout)

    def config_command(self, *args: str, controller: bool = False) -> subprocess.CompletedProcess[str]:
        """Kafka 4's ``kafka-configs.sh``: through the brokers, or ``controller=True`` through the
        controllers (``--bootstrap-controller``)."""
        target = (
            ["--bootstrap-controller", ",".join(self.quorum.values())]
            if controller
            else ["--bootstrap-server", self.bootstrap]
        )
        return self.tool(CONFIG_COMMAND, *target, *args)
